/**
 * `agl optimize` with an LLM judge as the reward (#41 item 1: `--judge-url`, `--judge-model`, `--judge-rubric`, or a
 * train.yaml's judge: section through --config; the same settings as training's): the order desk optimized on the
 * scripted desk server and runner pool (test/helpers/optimize-stack.ts), its rollouts scored by a scripted judge over
 * HTTP. Every rollout that succeeded carries the judge's reward (source judge, its explanation the feedback), the
 * candidates' scores are the judge's, not the desk's own grade, and the optimizer reads the judge's explanations.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { runOptimization } from '../../daemon/optimize/optimize-run.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { flagArgs } from '../../protocol/cli-options.js';
import { OPTIMIZE_COMMAND } from '../../protocol/optimize-options.js';
import { startAgl, runAgl } from '../algorithm/cli-helpers.js';
import { planFromFlags, planResume } from '../../daemon/optimize/run-plan.js';
import { judgeVerdict } from '../../protocol/judge-reading.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import type { OptimizationSummary } from '../../protocol/prompts.js';
import { finalReward, rolloutFeedback } from '../../protocol/span-reading.js';
import { AGL, SPAN } from '../../protocol/spans.js';
import { DESK_AGENT, deskFlags, type OptimizeStack, startOptimizeStack } from '../helpers/optimize-stack.js';
import { startScriptedJudge, type JudgeRequest, type ScoreLine, type ScriptedJudge } from '../helpers/scripted-judge.js';

/** A judge with a scale of its own: 0.8 for an answer of digits only, 0.3 otherwise, and words the desk never says. */
const digitsJudge = (r: JudgeRequest): ScoreLine[] =>
  r.trajectories.map((t) => {
    const digits = /^\s*\d+\s*$/.test(t.replies.at(-1) ?? '');
    return {
      trajectory: t.index,
      score: digits ? 0.8 : 0.3,
      explanation: digits ? 'JUDGE-SAYS: digits only, as the rubric asks' : 'JUDGE-SAYS: not digits only',
    };
  });

/** Each judge call the run's rollouts hold spans of, once (read here from the spans, not by the code under test). */
async function recordedJudgeCalls(store: LightningStore, runId: string): Promise<number> {
  const ids = new Set<string>();
  for (const r of (await store.queryRollouts({ runId, limit: 500 })).items)
    for (const s of await store.querySpans({ rolloutId: r.id, name: SPAN.judge })) ids.add(String(s.attributes[AGL.judgeCallId]));
  return ids.size;
}

let stack: OptimizeStack;
let judge: ScriptedJudge;
let dir: string;
before(async () => {
  stack = await startOptimizeStack({ workers: 4, perProcess: 2 });
  judge = await startScriptedJudge({ score: digitsJudge });
  dir = mkdtempSync(join(tmpdir(), 'agl-opt-judge-'));
});
after(async () => {
  await judge.close();
  await stack.close();
});

test("the judge's scores are the candidates' scores and its explanations the feedback the optimizer reads", { timeout: 300_000 }, async () => {
  writeFileSync(join(dir, 'rubric.md'), 'An answer of digits only scores 0.8; anything else 0.3.\n');
  const flags = { budget: '40', seed: '2', test: undefined, 'judge-url': judge.url, 'judge-model': 'scripted-judge', 'judge-rubric': join(dir, 'rubric.md') };
  const out = await stack.optimize(DESK_AGENT, deskFlags(stack.llm, flags));
  const store = stack.conn.store;
  // Every scored rollout (the probe that reads the seed's prompts is no score: the judge leaves it).
  const rollouts = (await store.queryRollouts({ runId: out.runId, status: ['succeeded'], limit: 500 })).items.filter((r) => r.metadata.probe !== true);
  assert.ok(rollouts.length >= 15, `${rollouts.length} rollouts`);
  let own = 0;
  const seedVal: number[] = [];
  for (const r of rollouts) {
    const spans = await store.querySpans({ rolloutId: r.id, attemptId: 'latest' });
    const v = judgeVerdict(spans);
    assert.ok(v && v.score !== null, `rollout ${r.id} was judged`);
    assert.equal(v.mode, 'single');
    assert.equal(finalReward(spans), v.score, "its final reward is the judge's score");
    assert.match(rolloutFeedback(spans) ?? '', /^JUDGE-SAYS: /, "its feedback is the judge's explanation");
    assert.ok(spans.some((s) => s.attributes[AGL.rewardSource] === 'judge'));
    // The desk's own grade (0 or 1) is still on the rollout, under the judge's.
    if (spans.some((s) => s.name === SPAN.reward && s.attributes[AGL.rewardSource] === undefined)) own++;
    if (r.metadata.candidate === out.seedCandidate && r.metadata.split === 'val') seedVal.push(v.score!);
  }
  assert.equal(own, rollouts.length, "the agent's own reward stays on every rollout, replaced as the final one");
  assert.equal(judge.requests.length, rollouts.length, 'one judge call per rollout, none twice (the cache reads them back)');
  // What the judge cost is counted apart from the optimizer's: in the outcome (the terminal's end line) and the run's summary.
  assert.equal(out.judge?.calls, judge.requests.length);
  assert.ok(out.judge!.tokens.prompt > 0 && out.judge!.tokens.completion > 0, JSON.stringify(out.judge));
  assert.equal(out.judge!.cost, null, 'no judge prices given: no cost');
  const summary = (await store.getTrainingRun(out.runId))!.summary as OptimizationSummary;
  assert.equal(summary.judgeCalls, judge.requests.length);
  assert.deepEqual(summary.judgeTokens, out.judge!.tokens);
  // The seed's val score is the mean of the judge's scores of its val rollouts (0.8 or 0.3 each), not of the desk's 0/1 grades.
  assert.equal(seedVal.length, 14);
  assert.ok(Math.abs(out.scores.seed.val! - seedVal.reduce((a, x) => a + x, 0) / seedVal.length) < 1e-9, `seed val ${out.scores.seed.val}`);
  assert.ok(seedVal.every((x) => x === 0.3 || x === 0.8));
  const calls = await store.listOptimizerCalls(out.runId);
  assert.ok(calls.length > 0);
  assert.ok(
    calls.some((c) => c.messages.some((m) => m.content.includes('JUDGE-SAYS: '))),
    "the optimizer was shown the judge's explanations",
  );
});

test('the judge settings come from a train.yaml judge: section (--config), the flags over it; none without either', () => {
  writeFileSync(join(dir, 'train.yaml'), 'judge:\n  url: http://127.0.0.1:9/v1\n  model: file-judge\n  rubric: { file: rubric.md }\n  weight: 0.5\n');
  const plan = planFromFlags(DESK_AGENT, deskFlags(stack.llm, { test: undefined, budget: '40', config: join(dir, 'train.yaml'), 'judge-model': 'flag-judge' }));
  assert.equal(plan.config.judge!.model, 'flag-judge');
  assert.equal(plan.config.judge!.weight, 0.5);
  assert.deepEqual(plan.config.judge!.rubric, { file: join(dir, 'rubric.md') }, 'the rubric found beside the config file');
  assert.equal(planFromFlags(DESK_AGENT, deskFlags(stack.llm, { test: undefined, budget: '40' })).config.judge, null);
  assert.throws(
    () => planFromFlags(DESK_AGENT, deskFlags(stack.llm, { test: undefined, budget: '40', 'judge-url': 'http://127.0.0.1:9/v1' })),
    /invalid judge settings: judge\.model: .*judge\.rubric/,
  );
});

test("a stopped run resumed: the judge's calls of both processes are counted once, none asked again", { timeout: 300_000 }, async () => {
  writeFileSync(join(dir, 'rubric.md'), 'An answer of digits only scores 0.8; anything else 0.3.\n');
  const flags = { budget: '40', seed: '3', test: undefined, 'judge-url': judge.url, 'judge-model': 'scripted-judge', 'judge-rubric': join(dir, 'rubric.md') };
  const plan = planFromFlags(DESK_AGENT, deskFlags(stack.llm, flags));
  const asked = judge.requests.length;
  const stop = new AbortController();
  // Stop once 8 judge calls are recorded in the store (a call is counted before it is recorded). Not on the judge server's count
  // of requests: the 8th request may still be in flight then, cut short by the stop and rightly not counted.
  let watching = true;
  const store = stack.conn.store;
  const watch = (async () => {
    while (watching && !stop.signal.aborted) {
      const run = (await store.listTrainingRuns(undefined, 'optimize')).find((r) => r.status === 'running');
      if (run && (await recordedJudgeCalls(store, run.id)) >= 8) stop.abort();
      else await new Promise((res) => setTimeout(res, 20));
    }
  })();
  const report = { log: () => {} };
  const first = await runOptimization(plan, stack.conn, { signal: stop.signal, report, backoffMs: 5 }).finally(() => (watching = false));
  await watch;
  assert.equal(first, null, 'the first process was stopped');
  const runId = (await stack.conn.store.listTrainingRuns(undefined, 'optimize')).find((r) => r.status === 'cancelled')!.id;
  const stopped = (await stack.conn.store.getTrainingRun(runId))!.summary as OptimizationSummary;
  assert.ok(stopped.judgeCalls! >= 8, `the stopped run recorded its judge calls: ${stopped.judgeCalls}`);
  const out = (await runOptimization(await planResume(stack.conn.store, runId, {}), stack.conn, {
    signal: new AbortController().signal,
    report,
    backoffMs: 5,
  }))!;
  const rollouts = (await stack.conn.store.queryRollouts({ runId, status: ['succeeded'], limit: 500 })).items.filter((r) => r.metadata.probe !== true);
  // A call the stop cut short recorded nothing and is not counted: the resumed run asked it. Every other one is counted
  // once, by the process that asked it, and no rollout was judged twice.
  for (const r of rollouts) {
    const spans = await stack.conn.store.querySpans({ rolloutId: r.id, attemptId: 'latest' });
    assert.equal(spans.filter((s) => s.name === SPAN.judge).length, 1, `rollout ${r.id}: one judge call`);
    assert.notEqual(judgeVerdict(spans)?.score ?? null, null, `rollout ${r.id} has the judge's score`);
  }
  assert.equal(out.judge!.calls, rollouts.length, 'every judge call of the run counted once over both processes');
  const seen = judge.requests.length - asked;
  assert.ok(seen >= out.judge!.calls && seen <= out.judge!.calls + 8, `the server saw ${seen} (the counted ones, and any the stop cut short)`);
});

test("killed with SIGKILL mid-run, --resume counts every judge call the run recorded, the killed process's too", { timeout: 300_000 }, async () => {
  writeFileSync(join(dir, 'rubric.md'), 'An answer of digits only scores 0.8; anything else 0.3.\n');
  const dataDir = mkdtempSync(join(tmpdir(), 'agl-opt-judge-kill-'));
  const store = new SqliteStore(join(dataDir, 'store.sqlite'));
  try {
    const judging = { 'judge-url': judge.url, 'judge-model': 'scripted-judge', 'judge-rubric': join(dir, 'rubric.md') };
    const flags = { ...deskFlags(stack.llm, { budget: '40', seed: '4', test: undefined, ...judging }), workers: '3' };
    const asked = judge.requests.length;
    const first = startAgl(['optimize', DESK_AGENT, ...flagArgs(OPTIMIZE_COMMAND, flags), '--data-dir', dataDir], dataDir);
    // Killed once 10 calls are recorded and the run's stored summary counts fewer (as a kill mostly finds it: the
    // summary is written at each val score, a call's spans at each call).
    let runId = '';
    let atKill = 0;
    for (let i = 0; i < 1500 && !atKill; i++) {
      await new Promise((r) => setTimeout(r, 100));
      runId ||= (await store.listTrainingRuns(undefined, 'optimize'))[0]?.id ?? '';
      if (!runId) continue;
      const recorded = await recordedJudgeCalls(store, runId);
      const summary = ((await store.getTrainingRun(runId))?.summary ?? {}) as OptimizationSummary;
      if (recorded >= 10 && recorded > (summary.judgeCalls ?? 0)) atKill = recorded;
    }
    first.child.kill('SIGKILL');
    await first.exited;
    assert.ok(atKill >= 10, `the killed run had recorded ${atKill} judge calls:\n${first.output()}`);
    const resumed = await runAgl(['optimize', '--resume', runId, '--data-dir', dataDir], dataDir);
    assert.equal(resumed.code, 0, resumed.out);
    const summary = (await store.getTrainingRun(runId))!.summary as OptimizationSummary;
    const recorded = await recordedJudgeCalls(store, runId);
    assert.ok(recorded > atKill, 'the resumed run asked the judge too');
    assert.equal(summary.judgeCalls, recorded, "every call recorded over both processes counted once, the killed process's included");
    assert.match(resumed.out, new RegExp(`${recorded} judge calls`), 'the end line counts them');
    const seen = judge.requests.length - asked;
    assert.ok(seen >= recorded && seen <= recorded + 8, `the server saw ${seen}: the recorded ones and the few the kill cut short, none twice`);
  } finally {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
