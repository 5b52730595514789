/**
 * The judge's step in training (daemon/algorithm/step-judge.ts) on a real SQLite store and a scripted judge over HTTP:
 * each judged rollout gets the judge's reward as its final reward, stored as a reward span (source judge, the
 * explanation as its feedback: what prompt optimization reads) beside the judge call's span (order shown, place, tries,
 * tokens, cost); with judge.weight it is added to the agent's own; a reward the agent locked is neither sent nor
 * replaced; a group the judge cannot score is left out with its reason counted, its rewards untouched (never 0);
 * validation rollouts are judged as judge.validation says. With judge.retest (the default) half of a round's groups
 * whose scores spread are shown again by a separate call (single mode: one rollout a step gets a second call), its
 * second scores never a reward; a judge that agrees with itself gets weight ~1, one right 80% of the time a weight above
 * 0, and one scoring every call at random or by the place it shows a trajectory at weight 0, its groups left out.
 * Also: a step of many groups adds no abort listener per call to the run's signal.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { finalReward as trajectoryReward } from '../../daemon/algorithm/credit.js';
import type { GroupRollout } from '../../daemon/algorithm/rollouts.js';
import { judgeMetrics, reliabilityMetrics, StepJudge } from '../../daemon/algorithm/step-judge.js';
import type { ReliabilityState } from '../../daemon/judge/reliability.js';
import { Judge } from '../../daemon/judge/judge.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { judgeVerdict } from '../../protocol/judge-reading.js';
import { JudgeSection, type JudgeSettingsInput } from '../../protocol/judge-settings.js';
import { finalReward, rolloutFeedback } from '../../protocol/span-reading.js';
import { AGL } from '../../protocol/spans.js';
import { storedRollout as stored, type Sample } from './stored-rollouts.js';
import {
  answerKeyJudge,
  noisyJudge,
  positionJudge,
  randomJudge,
  startScriptedJudge,
  type Fault,
  type JudgeRequest,
  type ScoreLine,
  type ScriptedJudge,
} from '../helpers/scripted-judge.js';

const RUBRIC = 'Right total: 1, else 0.\n- Ann has 23 pens => 38';
const TASK = { id: 'ann', input: { question: 'Ann has 23 pens, gets 15 more. How many?', answer: 38 } };
let store: SqliteStore;
const servers: ScriptedJudge[] = [];

before(() => {
  store = new SqliteStore(join(mkdtempSync(join(tmpdir(), 'agl-step-judge-')), 'store.sqlite'));
});
after(async () => {
  for (const s of servers) await s.close();
  await store.close();
});

const storedRollout = (s: Sample, mode: 'train' | 'val' = 'train') => stored(store, TASK, s, { mode });

async function stepJudge(
  settings: Partial<JudgeSettingsInput> = {},
  faults: (n: number, r: JudgeRequest) => Fault | null = () => null,
  o: { signal?: AbortSignal; score?: (r: JudgeRequest) => ScoreLine[] } = {},
) {
  const server = await startScriptedJudge({ score: o.score ?? answerKeyJudge(), faults });
  servers.push(server);
  const logs: string[] = [];
  const judge = new Judge({
    settings: JudgeSection.parse({ url: server.url, model: 'judge-m', rubric: RUBRIC, retries: 1, backoffSeconds: 0.01, priceIn: 3, priceOut: 5, ...settings }),
    rubric: RUBRIC,
    apiKey: '',
    seed: 7,
    signal: o.signal,
  });
  const at = (step: number) => new StepJudge(judge, store, { runId: 'run-j', step, log: (m) => logs.push(m) });
  return { server, logs, judge, at, step: at(1) };
}

const spansOf = (g: GroupRollout) => store.querySpans({ rolloutId: g.rollout.id, attemptId: 'latest' });

describe("the judge's step", () => {
  it("replaces each rollout's reward with the judge's, stored with its explanation as feedback beside the judge call's span", async () => {
    const groups = [
      await storedRollout({ answer: '38', reward: 0.2 }),
      await storedRollout({ answer: '40', reward: 0.9 }),
      await storedRollout({ answer: '38' }),
    ];
    const { step, server } = await stepJudge();
    const round = await step.judgeRound(groups);
    assert.equal(round.kept.length, 3);
    assert.equal(round.leftOut.length, 0);
    assert.equal(server.requests.length, 2, 'the group call, and (judge.retest) the group shown again');
    const expected = [1, 0, 1];
    const callIds = new Set<string>();
    for (const [k, g] of groups.entries()) {
      const spans = await spansOf(g);
      assert.equal(finalReward(spans), expected[k], `rollout ${k}: the store's final reward is the judge's`);
      assert.equal(trajectoryReward(g.trajectory!), expected[k], `rollout ${k}: the trajectory the step goes on with`);
      const v = judgeVerdict(spans)!;
      assert.equal(v.score, expected[k]);
      assert.equal(v.model, 'judge-m');
      assert.equal(v.mode, 'group');
      assert.deepEqual([...new Set(v.order)].sort(), groups.map((x) => x.rollout.id).sort());
      assert.equal(v.order.length, 4, 'the three, one of them twice (judge.retest)');
      assert.equal(v.order[v.position! - 1], g.rollout.id, 'its place in the recorded order is its own');
      assert.ok(v.inputTokens! > 0 && v.cost! > 0);
      callIds.add(v.callId);
      assert.equal(rolloutFeedback(spans), k === 1 ? 'the answer 40 is not 38' : 'the answer 38 is the expected 38');
      const judgeReward = spans.find((s) => s.attributes[AGL.rewardSource] === 'judge')!;
      assert.equal(judgeReward.parentSpanId, v.spanId, "the reward hangs under the judge call's span");
      assert.equal(judgeReward.attributes[AGL.rewardComponents], JSON.stringify({ judge: expected[k] }));
    }
    assert.equal(callIds.size, 1, 'one call judged the group: its id on every rollout');
    const m = judgeMetrics(step.totals);
    assert.equal(m['judge/calls'], 2);
    assert.equal(m['judge/groups'], 1);
    assert.equal(m['judge/failed_groups'], 0);
    assert.ok(m['judge/tokens']! > 100);
    assert.ok(m['judge/cost']! > 0);
  });

  it("with judge.weight, the reward is the agent's own plus weight times the judge's score", async () => {
    const groups = [await storedRollout({ answer: '38', reward: 0.5 }), await storedRollout({ answer: '41' })];
    const { step } = await stepJudge({ weight: 0.5 });
    await step.judgeRound(groups);
    const [a, b] = await Promise.all(groups.map(spansOf));
    assert.equal(finalReward(a!), 0.5 + 0.5 * 1);
    assert.equal(finalReward(b!), 0, 'no reward of its own: 0 + 0.5 x 0');
    assert.equal(judgeVerdict(a!)!.agentReward, 0.5);
  });

  it('a reward the agent locked is neither sent to the judge nor replaced', async () => {
    const locked = await storedRollout({ answer: '40', reward: 1, locked: true });
    const groups = [locked, await storedRollout({ answer: '38', reward: 0 }), await storedRollout({ answer: '40', reward: 0 })];
    const { step, server } = await stepJudge();
    await step.judgeRound(groups);
    assert.equal(server.requests[0]!.trajectories.length, 3, 'the two unlocked, one of them twice (judge.retest)');
    const spans = await spansOf(locked);
    assert.equal(finalReward(spans), 1);
    assert.equal(judgeVerdict(spans), null);
  });

  it('a group the judge cannot score is left out with its reason counted, its rewards untouched, never 0', async () => {
    const groups = [await storedRollout({ answer: '38', reward: 0.3 }), await storedRollout({ answer: '40', reward: 0.7 })];
    const { step, logs } = await stepJudge({}, () => 'partial');
    const round = await step.judgeRound(groups);
    assert.equal(round.kept.length, 0);
    assert.deepEqual(round.leftOut, groups);
    for (const [k, g] of groups.entries()) {
      const spans = await spansOf(g);
      assert.equal(finalReward(spans), [0.3, 0.7][k], "the agent's reward stands");
      const v = judgeVerdict(spans)!;
      assert.equal(v.score, null);
      assert.match(v.error!, /missing from the answer.*after 2 tries/);
      assert.equal(spans.filter((s) => s.attributes[AGL.rewardSource] === 'judge').length, 0);
    }
    const m = judgeMetrics(step.totals);
    assert.equal(m['judge/failed_groups'], 1);
    assert.equal(m['judge/failed_partial'], 1);
    assert.equal(m['judge/groups'], 0);
    assert.equal(m['judge/calls'], 1);
    assert.match(step.lastReason!, /trajectory \d missing/);
    assert.match(logs[0]!, /task ann left out of step 1: /);
  });

  it('validation: auto judges only the rollouts the agent gave no reward; agent judges none; one the judge cannot score leaves the mean', async () => {
    const val = [
      await storedRollout({ answer: '38', reward: 0 }, 'val'),
      await storedRollout({ answer: '38' }, 'val'),
      await storedRollout({ answer: '40' }, 'val'),
    ];
    const auto = await stepJudge({ validation: 'auto' });
    const scored = await auto.step.judgeValidation(val);
    assert.equal(scored.length, 3);
    assert.equal(auto.server.requests.length, 2, 'one call per unrewarded rollout (single mode)');
    assert.deepEqual(await Promise.all(val.map(async (g) => finalReward(await spansOf(g)))), [0, 1, 0]);
    const agent = await stepJudge({ validation: 'agent' });
    assert.equal((await agent.step.judgeValidation(val)).length, 3);
    assert.equal(agent.server.requests.length, 0);
    const failing = await stepJudge({ validation: 'judge' }, (_n, r) => (r.trajectories[0]!.finalAnswer?.includes('40') ? 'server-error' : null));
    const kept = await failing.step.judgeValidation([await storedRollout({ answer: '38' }, 'val'), await storedRollout({ answer: '40' }, 'val')]);
    assert.equal(kept.length, 1);
    assert.match(failing.logs.join('\n'), /could not score 1 of 2 rollouts/);
  });

  it("a step of many groups judged under the run's abort signal adds no listener per call to it (no MaxListenersExceededWarning)", async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const controller = new AbortController();
      const tasks = Array.from({ length: 16 }, (_, i) => ({ id: `t${i}`, input: { question: `Ann has 23 pens (${i}), gets 15 more. How many?`, answer: 38 } }));
      const groups = await Promise.all(tasks.flatMap((t) => ['38', '40'].map((answer) => stored(store, t, { answer }, { runId: 'run-many' }))));
      const { step, server } = await stepJudge({ concurrency: 12 }, () => null, { signal: controller.signal });
      const round = await step.judgeRound(groups);
      assert.equal(round.kept.length, 32);
      assert.equal(server.requests.length, 24, 'a call per group, and half of them shown again (judge.retest)');
      // A warning is emitted on the next tick after the listener that crossed the limit was added.
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(
        warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message),
        [],
      );
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('retest, group mode: the group is shown again by a separate call, its second scores no reward; the copy within the call stays', async () => {
    const groups = [await storedRollout({ answer: '38' }), await storedRollout({ answer: '40' }), await storedRollout({ answer: '41' })];
    const { step, server } = await stepJudge();
    await step.judgeRound(groups);
    assert.equal(server.requests.length, 2, 'the group call, then a call of its own showing the group again');
    const [first, again] = server.requests.map((r) => r.trajectories.map((t) => t.text));
    assert.equal(first!.length, 4, 'the group call shows one of the three twice');
    assert.equal(new Set(first).size, 3);
    assert.deepEqual([...again!].sort(), [...new Set(first)].sort(), 'the second call shows each of the three once');
    for (const g of groups) {
      const spans = await spansOf(g);
      const v = judgeVerdict(spans)!;
      assert.equal(v.order.length, 4, 'the verdict is the group call');
      assert.equal(v.retest!.score, v.score, 'the answer-key judge agrees with itself');
      assert.equal(spans.filter((s) => s.attributes[AGL.judgeRetest] === true).length, 1, 'a judge span of the second call, marked a retest');
      assert.equal(spans.filter((s) => s.attributes[AGL.rewardSource] === 'judge').length, 1, 'one judged reward, from the group call');
    }
    assert.equal(step.totals.calls, 2, 'the second call counts in the calls, tokens and cost');
    const rel = step.reliability(undefined)!;
    assert.equal(rel.step.r, 1);
    assert.equal(rel.step.stepPairs, 3);
    assert.equal(rel.step.weight, 0, 'three pairs of one group (2 degrees of freedom) bound nothing: no weight from a few agreeing pairs');
    assert.equal(rel.step.scale, 0);
    assert.deepEqual([...rel.step.groups], ['ann']);
  });

  it('retest: weight ~1 for a consistent judge, above 0 for one right 80% of the time, 0 for random and position-only judges', async () => {
    const tasks = Array.from({ length: 12 }, (_, i) => ({ id: `q${i}`, input: { question: `Ann has 23 pens (${i}), gets 15 more. How many?`, answer: 38 } }));
    const run = async (score: (r: JudgeRequest) => ScoreLine[]) => {
      // One call at a time: a noisy judge's draws follow the order the calls come in, the same every run.
      const { at, server } = await stepJudge({ concurrency: 1 }, () => null, { score });
      let state: ReliabilityState | undefined;
      const weights: number[] = [];
      for (let k = 1; k <= 4; k++) {
        const groups = [];
        for (const t of tasks) for (const answer of ['38', '40', '38', '37']) groups.push(await stored(store, t, { answer }, { runId: 'run-r', step: k }));
        const step = at(k);
        await step.judgeRound(groups);
        const rel = step.reliability(state)!;
        state = rel.state;
        weights.push(rel.step.scale);
        if (k === 4) return { weights, rel: rel.step, requests: server.requests.length };
      }
      throw new Error('unreachable');
    };
    const consistent = await run(answerKeyJudge());
    assert.ok(
      consistent.weights.every((w) => w > 0.9),
      `consistent judge's weights ${consistent.weights.join(' ')}`,
    );
    assert.equal(consistent.rel.stepPairs, 24, 'half of the 12 groups, 4 pairs each');
    assert.equal(consistent.requests, 4 * 18, 'a call per group, and one for each group shown again');
    assert.deepEqual(reliabilityMetrics(consistent.rel)['judge/unreliable_groups'], 0);
    const right80 = await run(noisyJudge(0.8, 5));
    assert.ok(
      right80.weights.slice(1).every((w) => w > 0.1),
      `80% judge's weights ${right80.weights.map((w) => w.toFixed(2)).join(' ')}`,
    );
    for (const [name, score] of [
      ['random', randomJudge(3)],
      ['position-only', positionJudge()],
    ] as const) {
      const noise = await run(score);
      assert.deepEqual(noise.weights, [0, 0, 0, 0], `${name} judge's weights`);
      const m = reliabilityMetrics(noise.rel);
      assert.equal(m['judge/unreliable_groups'], 12, `${name}: its groups are left out`);
      assert.equal(m['judge/weight'], 0);
      assert.ok(m['judge/noise']! > 0.03 && m['judge/signal']! > 0.03, JSON.stringify(m));
    }
  });

  it('retest, single mode: one rollout of the step gets a second call, marked as a retest and never its verdict or reward', async () => {
    const groups = [await storedRollout({ answer: '38' }), await storedRollout({ answer: '40' })];
    const { step, server } = await stepJudge({ mode: 'single' });
    await step.judgeRound(groups);
    assert.equal(server.requests.length, 3, 'one call each, and one retest');
    const all = await Promise.all(groups.map(spansOf));
    const retestSpans = all.flat().filter((s) => s.attributes[AGL.judgeRetest] === true);
    assert.equal(retestSpans.length, 1);
    const again = all.find((spans) => spans.includes(retestSpans[0]!))!;
    const v = judgeVerdict(again)!;
    assert.notEqual(v.spanId, retestSpans[0]!.spanId, 'the verdict is the first call');
    assert.deepEqual(v.retest, { score: v.score, position: null });
    assert.equal(again.filter((s) => s.attributes[AGL.rewardSource] === 'judge').length, 1);
    assert.equal(step.reliability(undefined)!.step.stepPairs, 1);
    assert.equal(step.totals.calls, 3, 'the retest call counts in the calls, tokens and cost');
  });

  it('judge.retest false: nothing shown twice, no reliability', async () => {
    const groups = [await storedRollout({ answer: '38' }), await storedRollout({ answer: '40' })];
    const { step, server } = await stepJudge({ retest: false });
    await step.judgeRound(groups);
    assert.equal(server.requests[0]!.trajectories.length, 2);
    assert.equal(step.reliability(undefined), null);
  });
});
