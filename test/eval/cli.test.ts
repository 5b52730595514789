/**
 * `agl eval` as CI runs it (an `agl` process, its own runner workers, the store a SQLite file), on an agent whose answers the test
 * knows (test/eval/quiz-agent.ts): a first run passes its --min and writes JUnit XML (checked against the JUnit
 * schema's rules with a real XML parser: testsuites > testsuite > testcase, the required attributes, the counts
 * matching the cases, a failing rollout an <error>); then the agent's prompt is promoted to answer off by one and a
 * second run, pinned to that promoted text, compared with --baseline and gated by --no-worse-than, loses every task:
 * exit 1, the paired test's exact p 2/64, the failures carrying answer vs expected; a third run fails --min only.
 * The rollouts are tagged with their run and carry the grader's verdict as the final reward's feedback. Then
 * `agl dataset from-rollouts` writes rows from those rollouts, and usage errors (a bad dataset, an unknown baseline)
 * exit 2 naming the line and field, or the flag.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { parseStringPromise } from 'xml2js';
import { run as datasetCommand } from '../../daemon/commands/dataset.js';
import { run as evalCommand } from '../../daemon/commands/eval.js';
import { readDataset } from '../../daemon/eval/dataset.js';
import { storedAgentId } from '../../daemon/runner/agent-ref.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { finalReward, promptVersions, rolloutFeedback } from '../../protocol/span-reading.js';
import { runAgl } from '../algorithm/cli-helpers.js';
import { answerKeyJudge, startScriptedJudge } from '../helpers/scripted-judge.js';
import { readRolloutMetadata } from '../../protocol/store.js';

const AGENT = 'test/eval/quiz-agent.ts#quizAgent';
let dir: string;
let store: SqliteStore;
let data: string;
const answers = [3, 7, 11, 20, 42, 100];

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'agl-eval-cli-'));
  store = new SqliteStore(join(dir, 'store.sqlite'));
  data = join(dir, 'quiz.eval.jsonl');
  const rows = answers.map((a, i) => ({ id: `q${i}`, input: { q: `q${i}`, answer: a }, expected: a, grader: 'number' }));
  rows.push({ id: 'boom', input: { q: 'boom', answer: 0 }, expected: 0, grader: 'number' });
  writeFileSync(data, rows.map((r) => JSON.stringify(r)).join('\n'));
});
after(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Runs a command in this process with its stderr captured (its stdout is left alone: the test runner reports through
 * it); for what prints to stderr only (usage errors, agl dataset without --json).
 */
async function inProcess(command: (argv: string[]) => Promise<number>, argv: string[]): Promise<{ code: number; err: string }> {
  const err: string[] = [];
  const writeErr = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((s: string | Uint8Array) => err.push(String(s)) > 0) as typeof process.stderr.write;
  try {
    return { code: await command(argv), err: err.join('') };
  } finally {
    process.stderr.write = writeErr;
  }
}

/** `agl eval ...` as a process (stdout and stderr together); with --json, its object. */
async function agl(args: string[]): Promise<{ code: number | null; out: string; json: Record<string, unknown> | null }> {
  const r = await runAgl(['eval', ...args], dir);
  const line = /^\{"runId".*$/m.exec(r.out)?.[0];
  return { ...r, json: line ? (JSON.parse(line) as Record<string, unknown>) : null };
}

const evalArgs = (...more: string[]) => [AGENT, '--data', data, '--store', join(dir, 'store.sqlite'), '--workers', '2', '--quiet', ...more];

interface JunitCase {
  $: Record<string, string>;
  failure?: { _: string; $: Record<string, string> }[];
  error?: { _: string; $: Record<string, string> }[];
}

/** The JUnit file read with a real XML parser and checked against the (Ant) JUnit schema's structure and required attributes. */
async function readJunit(file: string): Promise<{ suite: Record<string, string>; cases: JunitCase[] }> {
  const xml = (await parseStringPromise(readFileSync(file, 'utf8'))) as { testsuites: { $: Record<string, string>; testsuite: unknown[] } };
  assert.equal(xml.testsuites.testsuite.length, 1);
  const suite = xml.testsuites.testsuite[0] as { $: Record<string, string>; testcase: JunitCase[]; properties: unknown[] };
  for (const attr of ['name', 'timestamp', 'hostname', 'tests', 'failures', 'errors', 'time', 'id', 'package'])
    assert.ok(suite.$[attr] !== undefined, `testsuite has ${attr}`);
  assert.match(suite.$.timestamp!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/, 'an ISO 8601 time without zone, as the schema types it');
  assert.equal(suite.properties.length, 1);
  const cases = suite.testcase;
  for (const c of cases) {
    for (const attr of ['name', 'classname', 'time']) assert.ok(c.$[attr] !== undefined, `testcase has ${attr}`);
    assert.ok(Number.isFinite(Number(c.$.time)));
    for (const f of [...(c.failure ?? []), ...(c.error ?? [])]) assert.ok(f.$.type, 'a failure or error has its type');
  }
  assert.equal(Number(suite.$.tests), cases.length);
  assert.equal(Number(suite.$.failures), cases.filter((c) => c.failure).length);
  assert.equal(Number(suite.$.errors), cases.filter((c) => c.error).length);
  assert.equal(xml.testsuites.$.tests, suite.$.tests);
  return { suite: suite.$, cases };
}

let runA = '';
let runB = '';

test('a passing run: --min holds (exit 0), JUnit XML per task, rollouts tagged with the run and graded', { timeout: 120_000 }, async () => {
  const junit = join(dir, 'a.xml');
  const r = await agl(evalArgs('--min', '0.8', '--junit', junit));
  assert.equal(r.code, 0, r.out);
  runA = /run (eval-[\w-]+)/.exec(r.out)![1]!;
  assert.match(r.out, /^pass {2}q0 +1\.000/m);
  assert.match(r.out, /^ERROR boom +0\.000 +(Error: )?the quiz agent was asked to fail/m);
  assert.match(r.out, /mean 0\.857 \(95% interval [\d.]+ to [\d.]+\) over 7 tasks; pass@1 0\.857 \(6 of 7 passed\)/);
  assert.match(r.out, /ok: mean 0\.857 reaches --min 0\.8/);
  const { cases } = await readJunit(junit);
  assert.deepEqual(
    cases.map((c) => [c.$.name, c.$.classname, Boolean(c.failure), Boolean(c.error)]),
    [...answers.map((_, i) => [`q${i}`, 'quiz.eval', false, false]), ['boom', 'quiz.eval', false, true]],
  );
  assert.match(cases[6]!.error![0]!._, /reason: +(Error: )?the quiz agent was asked to fail/);
  const run = await store.getTrainingRun(runA);
  assert.equal(run?.kind, 'eval');
  assert.equal(run?.status, 'succeeded');
  const rollouts = (await store.queryRollouts({ runId: runA, limit: 50 })).items;
  assert.equal(rollouts.length, 7);
  const q1 = rollouts.find((x) => readRolloutMetadata(x.metadata).taskId === 'q1')!;
  assert.equal(readRolloutMetadata(q1.metadata).sample, 0);
  const spans = await store.querySpans({ rolloutId: q1.id, attemptId: 'latest' });
  assert.equal(finalReward(spans), 1);
  assert.equal(rolloutFeedback(spans), '7 is within 0.000001 of 7');
});

test('a worse run: --baseline compares task by task, --no-worse-than fails (exit 1); the pinned prompt is read', { timeout: 120_000 }, async () => {
  await store.promotePrompt({ agent: storedAgentId(AGENT), name: 'mode', text: 'off-by-one', candidateId: null, by: 'test' });
  const junit = join(dir, 'b.xml');
  const r = await agl(evalArgs('--prompt', 'mode=promoted', '--baseline', runA, '--no-worse-than', runA, '--junit', junit, '--json'));
  assert.equal(r.code, 1, r.out);
  const o = r.json as unknown as {
    runId: string;
    mean: number;
    comparisons: Record<string, { wins: number; losses: number; ties: number; significant: boolean; test: { p: number; exact: boolean; n: number } }>;
    gates: { flag: string; ok: boolean; said: string }[];
  };
  runB = o.runId;
  assert.equal(o.mean, 0);
  // The line that opens the two runs side by side in the editor (the extension's URI handler: extension/eval-commands.ts).
  assert.match(r.out, new RegExp(`compare them in VS Code: vscode://agent-lightning\\.agent-lightning-vscode/compare\\?base=${runA}&run=${runB} `));
  const c = o.comparisons[runA]!;
  assert.deepEqual([c.wins, c.losses, c.ties, c.test.n, c.test.exact, c.significant], [0, 6, 1, 6, true, true]);
  assert.ok(Math.abs(c.test.p - 2 / 64) < 1e-12, String(c.test.p));
  assert.deepEqual(o.gates, [{ flag: 'no-worse-than', ok: false, said: o.gates[0]!.said }]);
  const { cases } = await readJunit(junit);
  const q1 = cases.find((x) => x.$.name === 'q1')!;
  assert.equal(q1.failure![0]!.$.type, 'number');
  assert.match(q1.failure![0]!._, /answer: +"8"\nexpected: 7\nreason: +answered 8, expected 7 \(off by 1, tolerance 0\.000001\)/);
  const rollout = (await store.queryRollouts({ runId: runB, limit: 50 })).items.find((x) => readRolloutMetadata(x.metadata).taskId === 'q1')!;
  assert.equal(readRolloutMetadata(rollout.metadata).candidate, 'promoted');
  const read = promptVersions(await store.querySpans({ rolloutId: rollout.id, attemptId: 'latest' }));
  assert.deepEqual(
    read.map((p) => [p.name, p.version, p.template]),
    [['mode', 'promoted', 'off-by-one']],
  );
});

test('--min alone fails a run no worse than its baseline (exit 1)', { timeout: 120_000 }, async () => {
  const r = await agl(evalArgs('--min', '0.5', '--no-worse-than', runB));
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, /0 better, 0 worse, 7 tied/);
  assert.match(r.out, /p = 1\.0000 \(exact\); not significant/);
  assert.match(r.out, /^FAILED: mean 0\.000 is below --min 0\.5$/m);
  assert.match(r.out, /^ok: no significant drop against eval-/m);
});

test('the judge grader: single mode, one call per answer, its explanation the reason and the feedback', { timeout: 120_000 }, async () => {
  const judge = await startScriptedJudge({ score: answerKeyJudge() });
  try {
    const rubric = join(dir, 'rubric.md');
    writeFileSync(rubric, 'The listed answer scores 1.\n- q1 => 8\n- q2 => 11\n');
    const judged = join(dir, 'judged.eval.jsonl');
    writeFileSync(
      judged,
      ['{"id":"q1","input":{"q":"q1","answer":7},"expected":8,"grader":"judge"}', '{"id":"q2","input":{"q":"q2","answer":11},"grader":"judge"}'].join('\n'),
    );
    const flags = ['--judge-url', judge.url, '--judge-model', 'scripted-judge', '--judge-rubric', rubric, '--json'];
    const r = await agl([AGENT, '--data', judged, ...evalArgs(...flags).slice(3)]);
    assert.equal(r.code, 0, r.out);
    const o = r.json as unknown as { runId: string; tasks: { id: string; passed: boolean; reason: string; grader: string }[] };
    assert.deepEqual(
      o.tasks.map((t) => [t.id, t.grader, t.passed, t.reason]),
      [
        ['q1', 'judge', true, 'the answer 8 is the expected 8'],
        ['q2', 'judge', false, 'the answer 12 is not 11'],
      ],
    );
    assert.equal(judge.requests.length, 2, 'one call per answer');
    const tasks = judge.requests.map((q) => q.task);
    assert.ok(
      tasks.some((t) => /q: q1\nanswer: 7\nexpected: 8/.test(t)),
      `the row's expected shown to the judge: ${JSON.stringify(tasks)}`,
    );
    const q2 = (await store.queryRollouts({ runId: o.runId, limit: 10 })).items.find((x) => readRolloutMetadata(x.metadata).taskId === 'q2')!;
    const spans = await store.querySpans({ rolloutId: q2.id, attemptId: 'latest' });
    assert.equal(finalReward(spans), 0);
    assert.equal(rolloutFeedback(spans), 'the answer 12 is not 11');
  } finally {
    await judge.close();
  }
});

test('agl dataset from-rollouts writes rows of recorded answers the filter selects', { timeout: 60_000 }, async () => {
  const base = ['--store', join(dir, 'store.sqlite'), '--data-dir', dir];
  const good = join(dir, 'good.eval.jsonl');
  const r = await inProcess(datasetCommand, ['from-rollouts', '--run', runA, '--status', 'succeeded', '--out', good, ...base]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.err, /6 rows written to .*good\.eval\.jsonl\n/);
  const rows = readFileSync(good, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { id: string; input: { answer: number }; expected: string; from: { runId: string } });
  assert.equal(rows.length, 6);
  for (const row of rows) {
    assert.equal(row.expected, String(row.input.answer));
    assert.equal(row.from.runId, runA);
  }
  assert.deepEqual(
    readDataset(good, { grader: null }).tasks.map((t) => t.grader.name),
    Array(6).fill('exact'),
  );
  const failed = join(dir, 'failed.eval.jsonl');
  const f = await inProcess(datasetCommand, ['from-rollouts', '--run', runB, '--reward-max', '0.5', '--grader', 'number', '--out', failed, ...base]);
  assert.equal(f.code, 0, f.err);
  assert.match(f.err, /6 rows written/, 'the failed rollout has no reward: left out');
  assert.match(readFileSync(failed, 'utf8'), /"expected":"8","grader":"number"/);
  const again = await inProcess(datasetCommand, ['from-rollouts', '--run', runB, '--out', failed, ...base]);
  assert.equal(again.code, 2);
  assert.match(again.err, /exists: give another file, or --append/);
});

test('usage errors exit 2 before anything runs: a bad row (its line and field), an unknown baseline', async () => {
  const bad = join(dir, 'bad.eval.jsonl');
  writeFileSync(bad, '{"input":1,"expected":2}\n{"input":2,"expected":"x","grader":"number"}\n');
  const r = await inProcess(evalCommand, [AGENT, '--data', bad, '--store', join(dir, 'store.sqlite'), '--data-dir', dir]);
  assert.equal(r.code, 2);
  assert.match(r.err, /bad\.eval\.jsonl:2: field 'expected': the number grader needs a number, got "x"/);
  const b = await inProcess(evalCommand, [...evalArgs('--baseline', 'eval-nope'), '--data-dir', dir]);
  assert.equal(b.code, 2);
  assert.match(b.err, /--baseline eval-nope: no such run in this store/);
  const before = (await store.queryRollouts({ limit: 500 })).items.length;
  assert.equal(before, 23, 'nothing was rolled out for them');
});

test("--task runs only the tasks it names (the Test Explorer's run of one item); an id the dataset lacks exits 2 naming it", { timeout: 120_000 }, async () => {
  const bad = await inProcess(evalCommand, [...evalArgs('--task', 'q1', '--task', 'q99'), '--data-dir', dir]);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /--task q99: the dataset has no such task \(its 7 ids: q0, q1, q2, q3, q4, q5, boom\)/);
  const before = (await store.queryRollouts({ limit: 500 })).items.length;
  const r = await agl(evalArgs('--task', 'q4', '--task', 'q1', '--json'));
  assert.equal(r.code, 0, r.out);
  assert.deepEqual(
    (r.json!.tasks as { id: string }[]).map((t) => t.id),
    ['q1', 'q4'],
    "the named tasks, in the dataset's order",
  );
  assert.equal((await store.queryRollouts({ limit: 500 })).items.length, before + 2, 'two rollouts, one per task named');
  const run = (await store.getTrainingRun(r.json!.runId as string))!;
  assert.deepEqual((run.config as { only?: string[] }).only, ['q1', 'q4'], 'the run records which tasks it ran');
});
