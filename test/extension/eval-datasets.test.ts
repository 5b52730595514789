/**
 * The Test Explorer's eval datasets without VS Code (extension/eval-datasets.ts): the setting's entries, a dataset's
 * lines as items (a task labelled by its id and question; a bad row in the very words `agl eval` refuses it with), the
 * agent beside a dataset (the nearest folder upward with agents, tests and fixtures left out), the outcome
 * `agl eval --json` prints read back, and a task's history over agent versions in words.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { readDataset } from '../../daemon/eval/dataset.js';
import {
  agentsBeside,
  datasetItems,
  datasetsFromSetting,
  evalArgs,
  historyWords,
  readEvalOutcome,
  type TaskHistoryEntry,
} from '../../extension/eval-datasets.js';
import type { EvalRunInfo } from '../../protocol/eval-compare.js';
import type { EvalTaskResult } from '../../protocol/eval.js';
import type { AgentInfo } from '../../protocol/lsp.js';

const root = join('/', 'home', 'user', 'project');
const at = (rel: string) => join(root, rel);
const agent = (rel: string, name: string): AgentInfo => ({
  id: `${rel}#${name}`,
  name,
  language: 'typescript',
  uri: pathToFileURL(at(rel)).href,
  range: { start: { line: 0, character: 0 }, end: { line: 1, character: 0 } },
});

test('the setting names datasets by path (relative to the workspace folder) or with their agent; a bad entry says how to write it', () => {
  const r = datasetsFromSetting(['evals/a.eval.jsonl', { data: '/abs/b.jsonl', agent: 'src/bot.ts#bot' }, { file: 'x' }, 3], root);
  assert.deepEqual(r.datasets, [
    { file: at('evals/a.eval.jsonl'), agent: null },
    { file: '/abs/b.jsonl', agent: 'src/bot.ts#bot' },
  ]);
  assert.deepEqual(r.problems, [
    'agentLightning.evalDatasets[2]: give a path, or { "data": path, "agent": "file.ts#export" }',
    'agentLightning.evalDatasets[3]: give a path, or { "data": path, "agent": "file.ts#export" }',
  ]);
  assert.deepEqual(datasetsFromSetting(undefined, root), { datasets: [], problems: [] });
});

test("a dataset's lines are tasks labelled by id and question; a bad row is an item in agl eval's own words", () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-eval-items-'));
  try {
    const file = join(dir, 'calc.eval.jsonl');
    const lines = [
      '{"id":"v0","input":{"question":"Ann has 69 books,\\n loses 12. How many?"},"expected":57,"grader":"number"}',
      '',
      '{"input":"plain text task"}',
      '{"id":"v3","input":{"q":1},"expceted":3}',
      '{"id":"v0","input":{}}',
      'not json',
    ];
    writeFileSync(file, lines.join('\n'));
    const items = datasetItems(file, lines.join('\n'));
    assert.deepEqual(items.slice(0, 2), [
      { kind: 'task', id: 'v0', line: 1, label: 'v0: Ann has 69 books, loses 12. How many?' },
      { kind: 'task', id: 'line-3', line: 3, label: 'line-3: plain text task' },
    ]);
    const bad = items.filter((i) => i.kind === 'bad').map((i) => (i as { error: string }).error);
    assert.equal(bad.length, 3);
    assert.equal(bad[0], `${file}:4: field 'expceted' is not a row's field (id, input, expected, grader, tolerance, from): a typo?`);
    assert.equal(bad[1], `${file}:5: field 'id': 'v0' is the id of line 1 too: give each row its own id`);
    assert.match(bad[2]!, new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:6: not valid JSON`));
    // agl eval refuses the same file with the same words, one line per bad row.
    assert.throws(
      () => readDataset(file, { grader: null }),
      (e: Error) => bad.every((b) => e.message.includes(`\n  ${b}`)),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the agent beside a dataset: the nearest folder upward with agents, tests and fixtures left out', () => {
  const calc = agent('samples/calc/agent.ts', 'calcAgent');
  const sqlA = agent('samples/sql/agent.ts', 'sqlAgent');
  const sqlB = agent('samples/sql/agent.ts', 'writer');
  const fixture = agent('samples/calc/data/fixtures/agents.ts', 'crashing');
  const top = agent('main.ts', 'topAgent');
  const all = [calc, sqlA, sqlB, fixture, top];
  const names = (file: string, folders = [root]) => agentsBeside(at(file), all, folders).map((a) => a.name);
  assert.deepEqual(names('samples/calc/data/calc.eval.jsonl'), ['calcAgent']);
  assert.deepEqual(names('samples/sql/data/sql.eval.jsonl'), ['sqlAgent', 'writer']);
  assert.deepEqual(names('samples/rag/data/rag.eval.jsonl'), ['topAgent']);
  assert.deepEqual(names('samples/calc/data/calc.eval.jsonl', [join('/', 'elsewhere')]), []);
  assert.deepEqual(agentsBeside(at('samples/rag/data/rag.eval.jsonl'), [calc], [root]), []);
});

test("agl eval --json's outcome is read back from its last outcome line", () => {
  const summary = { runId: 'eval-9', tasks: [{ id: 't' }], mean: 1 };
  assert.deepEqual(readEvalOutcome(['agl eval: run eval-9', JSON.stringify(summary), '']), { runId: 'eval-9', summary });
  assert.equal(readEvalOutcome(['{"runId": broken', 'agl eval: failed']), null);
});

test("a task's history names each agent version's latest verdict, the three measured last, newest last", () => {
  const run = (id: string, version: string, createdAt: number): EvalRunInfo => ({
    id,
    agent: 'a',
    status: 'succeeded',
    createdAt,
    data: 'f',
    version,
    mean: 0,
    passAtK: 0,
    tasks: 1,
  });
  const result = (passed: boolean, errored = false) => ({ passed, errored }) as EvalTaskResult;
  const entries: TaskHistoryEntry[] = [
    { run: run('e1', 'warmup', 1), result: result(false) },
    { run: run('e3', 'run-abc step 40', 3), result: result(false) },
    { run: run('e2', 'warmup', 2), result: result(true) },
  ];
  assert.equal(historyWords(entries), 'passed on warmup, fails on run-abc step 40');
  assert.equal(historyWords([...entries, { run: run('e4', 'warmup', 4), result: result(false, true) }]), 'fails on run-abc step 40, errored on warmup');
  assert.equal(historyWords([]), null);
});

test("a run of some of a dataset's items asks agl eval for those tasks only; a run of them all asks for the dataset", () => {
  const model = ['--model', 'samples/calc/warmup'];
  assert.deepEqual(evalArgs('a.ts#agent', '/w/calc.eval.jsonl', ['t3'], 16, model), [
    'eval',
    'a.ts#agent',
    '--data',
    '/w/calc.eval.jsonl',
    '--json',
    '--task',
    't3',
    '--model',
    'samples/calc/warmup',
  ]);
  assert.deepEqual(evalArgs('a.ts#agent', '/w/d.eval.jsonl', ['a', 'b'], 2, []), ['eval', 'a.ts#agent', '--data', '/w/d.eval.jsonl', '--json']);
});
