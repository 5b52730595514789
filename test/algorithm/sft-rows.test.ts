/**
 * Corrected dataset rows are demonstrations: a real `agl sft --data F` (in process, the built-in TF.js engine) on a
 * file of rows written as the viewer's Add to dataset writes them (protocol/dataset-rows.ts) trains each corrected
 * row's final call (a completion's prompt; a chat's messages) to answer the correction: after it, the corrected
 * answers are more likely than before, and more likely against what the agent had answered than they were. A row not
 * corrected is left out (and said so); a file with no corrected row is refused, naming why.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { demonstrationsOf, targetText } from '../../daemon/algorithm/sft-data.js';
import { demoToPair, type Demonstration, readJsonlLines } from '../../daemon/algorithm/sft-trainer.js';
import { loadTasks } from '../../daemon/algorithm/run-plan.js';
import { openPolicy } from '../../daemon/algorithm/open-policy.js';
import { run as sft } from '../../daemon/commands/sft.js';
import type { EvalRow } from '../../protocol/eval.js';
import { saveTinyPolicy } from './cli-helpers.js';

const ROWS: EvalRow[] = [
  {
    id: 't1',
    input: { question: '7*8' },
    expected: { answer: '56' },
    from: { rolloutId: 'ro-1', runId: 'run-1', answered: { answer: '54' }, call: { prompt: 'Q:7*8\n' } },
  },
  {
    id: 't2',
    input: { question: '9*9' },
    expected: '81',
    from: { rolloutId: 'ro-2', runId: 'run-1', answered: '18', call: { messages: [{ role: 'user', content: '9*9?' }] } },
  },
  // Not corrected: its expected answer is what the agent said.
  { id: 't3', input: { question: '6*6' }, expected: '36', from: { rolloutId: 'ro-3', runId: 'run-1' } },
];

/** The summed log-probability of each demonstration's completion under the model at `dir`. */
async function logLikelihoods(dir: string, demos: Demonstration[]): Promise<number[]> {
  const policy = await openPolicy(dir, { backend: 'cpu' });
  try {
    const scores = await policy.scoreLogprobs(demos.map((d, i) => demoToPair(d, policy.tokenizer, `demo ${i + 1}`)));
    return scores.map((s) => s.reduce((a, b) => a + b, 0));
  } finally {
    policy.dispose();
  }
}

/** Runs a command in this process with its stderr captured. */
async function withStderr(fn: () => Promise<number>): Promise<{ code: number; err: string }> {
  const err: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((s: string | Uint8Array) => err.push(String(s)) > 0) as typeof process.stderr.write;
  try {
    return { code: await fn(), err: err.join('') };
  } finally {
    process.stderr.write = write;
  }
}

test('the target of a corrected row: a string, a number, the one field of an object, else JSON', () => {
  assert.deepEqual(
    [targetText('x y'), targetText(42), targetText({ answer: '564' }), targetText({ a: 1, b: 2 }), targetText([1])],
    ['x y', '42', '564', '{"a":1,"b":2}', '[1]'],
  );
  const lines = [...ROWS, { prompt: 'p', completion: 'c' }].map((value, i) => ({ line: i + 1, value }));
  const { demos, rows, uncorrected } = demonstrationsOf(lines, 'f.eval.jsonl');
  assert.deepEqual([rows, uncorrected], [3, 1]);
  assert.deepEqual(demos, [
    { prompt: 'Q:7*8\n', completion: '56' },
    {
      messages: [
        { role: 'user', content: '9*9?' },
        { role: 'assistant', content: '81' },
      ],
    },
    { prompt: 'p', completion: 'c' },
  ]);
  assert.throws(
    () => demonstrationsOf([{ line: 1, value: { input: 1, grader: 'nope' } }], 'f.eval.jsonl'),
    /f\.eval\.jsonl:1: a dataset row with a bad field 'grader'/,
  );
});

test('a bad line is named by the line an editor shows: blank lines and rows left out still count', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-sft-lines-'));
  try {
    const file = join(dir, 'fixes.eval.jsonl');
    // line 1 a corrected row, 2 blank, 3 a row not corrected (left out), 4 blank, 5 a demonstration, 6 a bad row.
    const text = (last: unknown) =>
      [ROWS[0], '', ROWS[2], '', { prompt: 'p', completion: 'c' }, last].map((l) => (l === '' ? '' : JSON.stringify(l))).join('\n');
    writeFileSync(file, `${text({ input: 1, grader: 'nope' })}\n`);
    assert.throws(
      () => demonstrationsOf(readJsonlLines(file), file),
      (e: Error) => e.message.startsWith(`${file}:6: a dataset row with a bad field 'grader'`),
    );
    writeFileSync(file, `${text({ prompt: 'p' })}\n`);
    const data = demonstrationsOf(readJsonlLines(file), file);
    assert.deepEqual(data.lineOf, [1, 5, 6], 'each demonstration knows its line');
    // agl sft names a demonstration it cannot read by that line (not by its place among the demonstrations, 3).
    const model = await saveTinyPolicy(dir);
    await assert.rejects(
      () => withStderr(() => sft(['--data', file, '--model', model, '--out', join(dir, 'out'), '--steps', '1', '--data-dir', dir])),
      (e: Error) => e.message.startsWith(`${file}:6: expected {"prompt","completion"}`),
    );
    writeFileSync(file, '{"input": 1}\n\n{"input": \n');
    assert.throws(
      () => readJsonlLines(file),
      (e: Error) => e.message.startsWith(`${file}:3: not valid JSON`),
    );
    // A task file's error names its line too (train, val and test files, for agl train and agl optimize).
    writeFileSync(file, '{"q": 1}\n\n\n[1, 2]\n');
    assert.throws(
      () => loadTasks(file, 'train'),
      (e: Error) => e.message === `${file}:4: a task must be a JSON object`,
    );
    writeFileSync(file, '{"q": 1}\n\n{"q": 2}\n');
    assert.deepEqual(
      loadTasks(file, 'val').map((t) => t.id),
      ['val-1', 'val-2'],
      "a task's default id counts tasks, as before",
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('agl sft --data trains the final calls toward the corrected answers', { timeout: 240_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-sft-rows-'));
  try {
    const model = await saveTinyPolicy(dir);
    const data = join(dir, 'fixes.eval.jsonl');
    writeFileSync(data, ROWS.map((r) => `${JSON.stringify(r)}\n`).join(''));
    const corrected: Demonstration[] = [
      { prompt: 'Q:7*8\n', completion: '56' },
      {
        messages: [
          { role: 'user', content: '9*9?' },
          { role: 'assistant', content: '81' },
        ] as Demonstration['messages'],
      },
    ];
    const answered: Demonstration[] = [
      { prompt: 'Q:7*8\n', completion: '54' },
      {
        messages: [
          { role: 'user', content: '9*9?' },
          { role: 'assistant', content: '18' },
        ] as Demonstration['messages'],
      },
    ];
    const before = await logLikelihoods(model, [...corrected, ...answered]);
    const out = join(dir, 'fixed');
    const args = ['--data', data, '--model', model, '--out', out, '--steps', '40', '--batch-size', '2', '--lr', '1e-2', '--backend', 'cpu', '--data-dir', dir];
    const r = await withStderr(() => sft(args));
    assert.equal(r.code, 0, r.err);
    assert.match(r.err, /2 of 3 dataset rows are corrected answers, trained as demonstrations of their final call \(1 not corrected: left out\)/);
    assert.match(r.err, /2 demonstrations/);
    const after = await logLikelihoods(out, [...corrected, ...answered]);
    const nats = (l: number[]) => l.map((x) => x.toFixed(2)).join(', ');
    console.log(`log-likelihood (corrected prompt, corrected chat, answered prompt, answered chat): before ${nats(before)}; after ${nats(after)}`);
    for (const i of [0, 1]) {
      assert.ok(after[i]! > before[i]! + 1, `demo ${i + 1}: the corrected answer's log-likelihood ${before[i]!.toFixed(2)} -> ${after[i]!.toFixed(2)}`);
      const margin = (l: number[]) => l[i]! - l[i + 2]!;
      assert.ok(margin(after) > margin(before), `demo ${i + 1}: corrected over answered ${margin(before).toFixed(2)} -> ${margin(after).toFixed(2)}`);
    }
    writeFileSync(data, `${JSON.stringify(ROWS[2])}\n`);
    const none = await withStderr(() => sft(['--data', data, '--model', model, '--out', join(dir, 'none'), '--steps', '1', '--data-dir', dir]));
    assert.equal(none.code, 2);
    assert.match(none.err, /nothing to train on: 1 dataset row, none corrected \(correct an answer in the trajectory viewer/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
