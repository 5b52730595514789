/**
 * `agl optimize` as a user runs it (#40 items 3 and 5), each a real `agl` process: against a running daemon (--url,
 * --token, its runner workers its own) printing with --json exactly the object the issue names; then `agl optimize
 * promote` publishing the best as what the agent gets outside optimization and writing a file seed's text beside it
 * (`desk.optimized.md`) or into it (--apply), and --clear taking it back; and killed with SIGKILL mid-run, then `--resume RUN`, reaching the same
 * candidates and scores as a run never interrupted, having spent at most the rollouts in flight more.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { flagArgs } from '../../protocol/cli-options.js';
import { OPTIMIZE_COMMAND } from '../../protocol/optimize-options.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { DESK_PROMPT } from '../../samples/apo/prompts.js';
import { runAgl, startAgl } from '../algorithm/cli-helpers.js';
import { candidateShapes, DESK_AGENT, deskFlags, type OptimizeStack, startOptimizeStack } from '../helpers/optimize-stack.js';

let stack: OptimizeStack;
let work: string;
before(async () => {
  stack = await startOptimizeStack({ workers: 4, perProcess: 2 });
  // Inside the repository, so the agent below finds the SDK and `openai` as the samples do.
  mkdirSync('tmp', { recursive: true });
  work = mkdtempSync(join('tmp', 'apo-cli-'));
});
after(async () => {
  await stack.close();
  rmSync(work, { recursive: true, force: true });
});

/** The desk agent with its seed in a file, as a user keeps prompts in the repository. */
function fileSeedAgent(): string {
  mkdirSync(join(work, 'prompts'), { recursive: true });
  writeFileSync(join(work, 'prompts', 'desk.md'), `${DESK_PROMPT}\n`);
  writeFileSync(
    join(work, 'agent.ts'),
    [
      "import OpenAI from 'openai';",
      "import { rollout, type LLM } from '../../sdk/index.js';",
      "import { grade, recordLine, type DeskTask } from '../../samples/apo/world.js';",
      'export const fileAgent = rollout(async (task: DeskTask, llm: LLM) => {',
      "  const content = llm.prompt('desk', { file: 'prompts/desk.md' }, { record: recordLine(task.record), question: task.question });",
      '  const openai = new OpenAI({ baseURL: llm.baseUrl, apiKey: llm.apiKey, maxRetries: 0 });',
      "  const res = await openai.chat.completions.create({ model: llm.model, messages: [{ role: 'user', content }] });",
      "  return grade(task, res.choices[0]?.message?.content ?? '');",
      '});',
      '',
    ].join('\n'),
  );
  return `${join(work, 'agent.ts')}#fileAgent`;
}

const optimizeArgs = (agent: string, flags: Parameters<typeof deskFlags>[1]) => [
  'optimize',
  agent,
  ...flagArgs(OPTIMIZE_COMMAND, { ...deskFlags(stack.llm, flags), workers: '3' }),
];

test("against a running daemon, --json prints the issue's object; promote publishes the best and writes a file seed's text", async () => {
  const agent = fileSeedAgent();
  const daemon = ['--url', stack.daemon.url, '--token', stack.daemon.token];
  const { code, out } = await runAgl([...optimizeArgs(agent, { budget: '120', seed: '1', json: true }), ...daemon], work);
  assert.equal(code, 0, out);
  const o = JSON.parse(out.trim().split('\n').at(-1)!);
  assert.deepEqual(Object.keys(o), ['runId', 'prompts', 'scores', 'rollouts', 'optimizerCalls', 'candidates']);
  assert.deepEqual(Object.keys(o.prompts), ['desk']);
  assert.equal(o.prompts.desk.seed, `${DESK_PROMPT}\n`, 'the seed is the file the agent reads, byte for byte');
  assert.deepEqual(Object.keys(o.scores), ['seed', 'best']);
  for (const k of ['seed', 'best']) assert.deepEqual(Object.keys(o.scores[k]), ['val', 'test']);
  assert.ok(o.scores.best.val > o.scores.seed.val && o.rollouts <= 120 && o.optimizerCalls > 0 && o.candidates > 1, JSON.stringify(o));
  assert.equal(readFileSync(join(work, 'prompts', 'desk.md'), 'utf8'), `${DESK_PROMPT}\n`, 'nothing replaced the seed without a say');

  const promoted = await runAgl(['optimize', 'promote', o.runId, '--json', ...daemon], work);
  assert.equal(promoted.code, 0, promoted.out);
  const p = JSON.parse(promoted.out.trim().split('\n').at(-1)!);
  assert.equal(p.prompts[0].file, join(process.cwd(), work, 'prompts', 'desk.optimized.md'));
  const best: string = o.prompts.desk.best;
  assert.equal(readFileSync(p.prompts[0].file, 'utf8'), best.endsWith('\n') ? best : `${best}\n`, 'ends in a newline as its seed file does');
  const now = await stack.conn.store.listPromotedPrompts(p.agent);
  assert.deepEqual(
    now.map((x) => [x.name, x.text, x.runId]),
    [['desk', o.prompts.desk.best, o.runId]],
  );

  const applied = await runAgl(['optimize', 'promote', o.runId, '0', '--apply', ...daemon], work);
  assert.equal(applied.code, 0, applied.out);
  assert.equal(readFileSync(join(work, 'prompts', 'desk.md'), 'utf8'), `${DESK_PROMPT}\n`, 'candidate 0 is the seed: --apply wrote it back unchanged');
  assert.equal((await stack.conn.store.listPromotedPrompts(p.agent))[0]!.text, `${DESK_PROMPT}\n`);

  // Until cleared: --clear gives the agent its seed again, and says when nothing was promoted.
  const cleared = await runAgl(['optimize', 'promote', o.runId, '--clear', '--json', ...daemon], work);
  assert.equal(cleared.code, 0, cleared.out);
  assert.deepEqual(JSON.parse(cleared.out.trim().split('\n').at(-1)!), { runId: o.runId, agent: p.agent, cleared: ['desk'] });
  assert.deepEqual(await stack.conn.store.listPromotedPrompts(p.agent), []);
  const again = await runAgl(['optimize', 'promote', o.runId, '--clear', ...daemon], work);
  assert.match(again.out, /nothing was promoted for .* of run .*'s prompts/);
});

test('killed with SIGKILL mid-run, --resume reaches the same end as a run never interrupted', { timeout: 600_000 }, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'agl-apo-kill-'));
  try {
    const first = startAgl([...optimizeArgs(DESK_AGENT, { seed: '5', json: true }), '--data-dir', dataDir], dataDir);
    const store = new SqliteStore(join(dataDir, 'store.sqlite'));
    let runId = '';
    let spent = 0;
    for (let i = 0; i < 600 && spent < 90; i++) {
      await new Promise((r) => setTimeout(r, 200));
      runId ||= (await store.listTrainingRuns(undefined, 'optimize'))[0]?.id ?? '';
      spent = runId ? ((await store.queryRollouts({ runId, withTotal: true, limit: 1 })).total ?? 0) : 0;
    }
    first.child.kill('SIGKILL');
    await first.exited;
    assert.ok(spent >= 90, `the run had spent ${spent} rollouts when killed:\n${first.output()}`);
    const resumed = await runAgl(['optimize', '--resume', runId, '--json', '--data-dir', dataDir], dataDir);
    assert.equal(resumed.code, 0, resumed.out);
    const end = JSON.parse(resumed.out.trim().split('\n').at(-1)!);
    const whole = await stack.optimize(DESK_AGENT, deskFlags(stack.llm, { seed: '5' }));
    assert.deepEqual(candidateShapes(await store.listPromptCandidates(runId)), candidateShapes(await stack.conn.store.listPromptCandidates(whole.runId)));
    assert.deepEqual(end.scores, whole.scores);
    assert.deepEqual(end.prompts, whole.prompts);
    assert.ok(
      end.rollouts >= whole.rollouts && end.rollouts <= whole.rollouts + 3,
      `resumed ${end.rollouts}, uninterrupted ${whole.rollouts}: at most the 3 in flight lost`,
    );
    assert.ok(
      (await store.listOptimizerCalls(runId)).length === (await stack.conn.store.listOptimizerCalls(whole.runId)).length,
      'no optimizer call asked twice',
    );
    await store.close();
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
