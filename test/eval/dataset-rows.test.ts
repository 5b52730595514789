/**
 * Datasets from traces: the one row builder (protocol/dataset-rows.ts) and the editor's Add to dataset on its host side
 * (extension/panels/dataset-add.ts) against a real daemon (SQLite store, HTTP API, the typed client) holding recorded
 * calc rollouts: one rollout with a corrected answer (its row keeps what the agent answered and its final call's chat
 * messages), the filter's rollouts (a task already in the file is left out, a rollout that recorded no answer gives no
 * row, the count the confirmation names), a selection, appending to a file without its last newline, and the rules
 * alone: a task never twice, a taken id renamed, a bad line named; a correction of a task already there replaces that
 * row's answer only when the user agrees. The file each writes is read back by `agl eval`'s
 * own dataset reader.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readDataset } from '../../daemon/eval/dataset.js';
import { addToDataset, type DatasetChooser } from '../../extension/panels/dataset-add.js';
import { appendedText, datasetContents, newRows, replacedText, rowAt } from '../../protocol/dataset-rows.js';
import type { EvalRow } from '../../protocol/eval.js';
import { type DatasetTarget, datasetAddedText } from '../../protocol/webview-trajectory.js';
import { startDaemon, type Daemon } from '../webview/harness.js';
import { seedDatasetRollouts } from '../webview/seed.js';

const RUN = 'run-rows';

/** A chooser that picks `file` and remembers what it was asked (the confirmation's count), as the extension's dialogs are. */
function chooserOf(file: string): DatasetChooser & { asked: { kind: string; count: number }[] } {
  const asked: { kind: string; count: number }[] = [];
  return { asked, chooseFile: async (ask) => (asked.push(ask), { path: file, label: 'rows.eval.jsonl' }) };
}

const readRows = (file: string): EvalRow[] =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as EvalRow);

describe('Add to dataset against a real daemon', () => {
  let daemon: Daemon;
  let dir: string;
  let wrong: string, right: string, silent: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agl-rows-'));
    daemon = await startDaemon();
    ({ wrong, right, silent } = await seedDatasetRollouts(daemon.client, RUN));
  });
  after(async () => {
    await daemon?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('adds one rollout with its corrected answer: what it answered and its final call are kept', async () => {
    const file = join(dir, 'one.eval.jsonl');
    const chooser = chooserOf(file);
    const target: DatasetTarget = { kind: 'rollout', rolloutId: wrong, corrected: { expected: '87' } };
    assert.deepEqual(await addToDataset(daemon.client, target, chooser), { file: 'rows.eval.jsonl', added: 1, duplicates: 0, noAnswer: 0 });
    const [row] = readRows(file);
    assert.equal(row!.id, 't-12x7');
    assert.deepEqual(row!.input, { question: 'What is 12*7+3?', answer: '87' });
    assert.equal(row!.expected, '87');
    assert.equal(row!.from!.answered, '84');
    assert.equal(row!.from!.runId, RUN);
    const call = row!.from!.call as { messages: { role: string; content: unknown }[] };
    assert.deepEqual(
      call.messages.map((m) => m.role),
      ['system', 'user', 'assistant', 'tool'],
      'the second (final) call: its prompt had the tool result',
    );
    assert.equal(call.messages[3]!.content, '84');
    assert.equal(readDataset(file, { grader: null }).tasks[0]!.grader.name, 'exact', 'agl eval reads the row');
    // The same task again (corrected or not) is never a second row.
    assert.deepEqual(await addToDataset(daemon.client, { kind: 'rollout', rolloutId: wrong }, chooser), {
      file: 'rows.eval.jsonl',
      added: 0,
      duplicates: 1,
      noAnswer: 0,
    });
    assert.equal(readRows(file).length, 1);
  });

  it("adds the filter's rollouts: the count confirmed, a task already there left out, no answer no row", async () => {
    const file = join(dir, 'one.eval.jsonl'); // holds t-12x7 (corrected) already, without its last newline now
    writeFileSync(file, readFileSync(file, 'utf8').trimEnd());
    const chooser = chooserOf(file);
    const got = await addToDataset(daemon.client, { kind: 'filter', filter: { runId: RUN, sort: 'reward', order: 'asc' } }, chooser);
    assert.deepEqual(chooser.asked, [{ kind: 'filter', count: 3 }]);
    assert.deepEqual(got, { file: 'rows.eval.jsonl', added: 1, duplicates: 1, noAnswer: 1 });
    const rows = readRows(file);
    assert.deepEqual(
      rows.map((r) => [r.id, r.expected, r.from!.rolloutId]),
      [
        ['t-12x7', '87', wrong],
        ['t-sq', '200', right],
      ],
    );
    assert.equal(rows[1]!.from!.answered, undefined, 'a recorded answer is not a correction');
    assert.equal(rows[1]!.from!.call, undefined);
    assert.equal(readDataset(file, { grader: null }).tasks.length, 2);
  });

  it('adds a selection; an id the store lacks is an error naming it, and a filter matching none says so', async () => {
    const file = join(dir, 'sel.eval.jsonl');
    const chooser = chooserOf(file);
    const got = await addToDataset(daemon.client, { kind: 'selection', rolloutIds: [right, silent, right] }, chooser);
    assert.deepEqual(chooser.asked, [{ kind: 'selection', count: 2 }]);
    assert.deepEqual(got, { file: 'rows.eval.jsonl', added: 1, duplicates: 0, noAnswer: 1 });
    await assert.rejects(addToDataset(daemon.client, { kind: 'selection', rolloutIds: ['ro-nope'] }, chooser), /no rollout ro-nope in this store/);
    await assert.rejects(addToDataset(daemon.client, { kind: 'filter', filter: { runId: 'run-none' } }, chooser), /no rollout matches the filter/);
    // A rollout with no answer of its own, corrected: its row is the correction.
    const corrected = await addToDataset(daemon.client, { kind: 'rollout', rolloutId: silent, corrected: { expected: 2 } }, chooser);
    assert.equal(corrected!.added, 1);
    const last = readRows(file).at(-1)!;
    assert.deepEqual([last.expected, last.from!.answered, last.from!.call], [2, null, undefined]);
  });

  it("a correction of a task the file holds with another answer replaces that row's answer when the user agrees, and only then", async () => {
    const file = join(dir, 'fix.eval.jsonl');
    const input = { question: 'What is 12*7+3?', answer: '87' }; // the wrong rollout's task
    const other = '{"id":"o","input":{"q":1},"expected":1}';
    const mine = JSON.stringify({ id: 'mine', input, expected: '85', grader: 'contains' }); // the grader written by hand
    const text = `${other}\r\n\r\n${mine}\r\n${other.replace('"o"', '"p"').replace('"q":1', '"q":2')}\r\n`;
    writeFileSync(file, text);
    const asked: unknown[] = [];
    const chooser = (answer: boolean): DatasetChooser => ({
      ...chooserOf(file),
      replace: async (ask) => (asked.push(ask), answer),
    });
    const target: DatasetTarget = { kind: 'rollout', rolloutId: wrong, corrected: { expected: '87' } };
    // Kept: the file is as it was, the row left out as a task already there.
    assert.deepEqual(await addToDataset(daemon.client, target, chooser(false)), { file: 'rows.eval.jsonl', added: 0, duplicates: 1, noAnswer: 0 });
    assert.deepEqual(asked, [{ file: 'rows.eval.jsonl', line: 3, expected: '85', corrected: '87' }]);
    assert.equal(readFileSync(file, 'utf8'), text);
    // Replaced: that line expects the correction and says where it came from; what was written by hand stays; every
    // other line (CRLF endings too) is as it was.
    const got = await addToDataset(daemon.client, target, chooser(true));
    assert.deepEqual(got, { file: 'rows.eval.jsonl', added: 0, replacedLine: 3, duplicates: 0, noAnswer: 0 });
    assert.equal(datasetAddedText(got!), 'the row on line 3 of rows.eval.jsonl now expects the corrected answer.');
    const lines = readFileSync(file, 'utf8').split('\r\n');
    assert.deepEqual([lines.length, lines[0], lines[1], lines[3], lines[4]], [5, other, '', text.split('\r\n')[3], '']);
    const row = JSON.parse(lines[2]!) as EvalRow;
    assert.deepEqual([row.id, row.input, row.expected, row.grader], ['mine', input, '87', 'contains']);
    assert.deepEqual([row.from!.rolloutId, row.from!.answered], [wrong, '84']);
    assert.ok(row.from!.call, 'the final call kept for agl sft');
    assert.equal(readDataset(file, { grader: null }).tasks.length, 3, 'agl eval reads the file');
    // The same correction again, or the rollout's recorded answer without one: nothing to ask, nothing written.
    const now = readFileSync(file, 'utf8');
    assert.equal((await addToDataset(daemon.client, target, chooser(true)))!.duplicates, 1);
    assert.equal((await addToDataset(daemon.client, { kind: 'rollout', rolloutId: wrong }, chooser(true)))!.duplicates, 1);
    assert.equal(asked.length, 2);
    assert.equal(readFileSync(file, 'utf8'), now);
  });

  it('a cancelled pick writes nothing', async () => {
    const file = join(dir, 'never.eval.jsonl');
    const got = await addToDataset(daemon.client, { kind: 'rollout', rolloutId: right }, { chooseFile: async () => null });
    assert.equal(got, null);
    assert.throws(() => readFileSync(file), /ENOENT/);
  });
});

describe('the rules of adding rows', () => {
  const row = (id: string, input: EvalRow['input'], rolloutId = `ro-${id}`): EvalRow => ({ id, input, expected: 1, from: { rolloutId, runId: null } });

  it('never adds a task twice, and gives each row an id not taken', () => {
    const existing = datasetContents('{"id":"a","input":{"q":1,"z":2}}\n\n{"input":{"q":2}}\n', 'f.eval.jsonl');
    assert.deepEqual([...existing.ids], ['a', 'line-3']);
    const got = newRows(existing, [
      row('b', { z: 2, q: 1 }), // the same task as line 1 (keys in another order)
      row('a', { q: 3 }, 'ro-x'), // id taken: the rollout's
      row('a', { q: 4 }, 'a'), // id and rollout id taken: a-2
      row('c', { q: 3 }), // the same task as a row just added
    ]);
    assert.deepEqual(
      got.rows.map((r) => [r.id, r.input]),
      [
        ['ro-x', { q: 3 }],
        ['a-2', { q: 4 }],
      ],
    );
    assert.deepEqual(got.duplicates, [
      { rolloutId: 'ro-b', line: 1 },
      { rolloutId: 'ro-c', line: null },
    ]);
  });

  it('names a line that is not a row, and appends after a missing last newline', () => {
    assert.throws(() => datasetContents('{"input":1}\n[1,2]\n', 'f.eval.jsonl'), /f\.eval\.jsonl:2: a row is a JSON object/);
    assert.throws(() => datasetContents('{"input":1\n', 'f.eval.jsonl'), /f\.eval\.jsonl:1: not valid JSON/);
    assert.equal(appendedText('{"input":1}', [row('x', 2)]), `\n${JSON.stringify(row('x', 2))}\n`);
    assert.equal(appendedText('', []), '');
  });

  it('replaces one line, every other as it was', () => {
    const text = '{"input":1}\n\n{"input":2,"expected":3}\r\n{"input":4}';
    assert.deepEqual(rowAt(text, 3), { input: 2, expected: 3 });
    assert.equal(replacedText(text, 3, { input: 2, expected: 5 }), '{"input":1}\n\n{"input":2,"expected":5}\r\n{"input":4}');
    assert.equal(replacedText(text, 4, { input: 4, expected: 1 }), '{"input":1}\n\n{"input":2,"expected":3}\r\n{"input":4,"expected":1}');
  });
});
