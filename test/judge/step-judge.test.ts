/**
 * The judge's step in training (daemon/algorithm/step-judge.ts) on a real SQLite store and a scripted judge over HTTP:
 * each judged rollout gets the judge's reward as its final reward, stored as a reward span (source judge, the
 * explanation as its feedback: what prompt optimization reads) beside the judge call's span (order shown, place, tries,
 * tokens, cost); with judge.weight it is added to the agent's own; a reward the agent locked is neither sent nor
 * replaced; a group the judge cannot score is left out with its reason counted, its rewards untouched (never 0);
 * validation rollouts are judged as judge.validation says. With judge.retest (the default) one trajectory of each group
 * call is shown twice (single mode: one rollout a step gets a second call), its second score never a reward; a judge
 * that agrees with itself has reliability 1, one scoring every call at random ~0, below the floor.
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
    assert.equal(server.requests.length, 1);
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
    assert.equal(m['judge/calls'], 1);
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
      assert.equal(server.requests.length, 16);
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

  it('retest, group mode: one trajectory is shown twice in the call, both places recorded, its second score no reward', async () => {
    const groups = [await storedRollout({ answer: '38' }), await storedRollout({ answer: '40' }), await storedRollout({ answer: '41' })];
    const { step, server } = await stepJudge();
    await step.judgeRound(groups);
    const read = server.requests[0]!.trajectories;
    assert.equal(read.length, 4);
    const texts = read.map((t) => t.text);
    const twice = texts.find((t, i) => texts.indexOf(t) !== i);
    assert.ok(twice, 'one trajectory was sent twice, word for word');
    const verdicts = await Promise.all(groups.map(async (g) => ({ g, v: judgeVerdict(await spansOf(g))! })));
    const retested = verdicts.filter((x) => x.v.retest !== null);
    assert.equal(retested.length, 1, 'one rollout carries the retest');
    const { g, v } = retested[0]!;
    assert.equal(v.order[v.retest!.position! - 1], g.rollout.id, 'its second place in the recorded order is its own');
    assert.notEqual(v.retest!.position, v.position);
    assert.equal(v.retest!.score, v.score, 'the answer-key judge agrees with itself');
    const spans = await spansOf(g);
    assert.equal(spans.filter((s) => s.name === 'agentlightning.judge').length, 1, 'one judge span per rollout, the copy on it');
    assert.equal(spans.filter((s) => s.attributes[AGL.rewardSource] === 'judge').length, 1, 'one judged reward, from its first place');
    const rel = step.reliability(undefined)!;
    assert.equal(rel.step.r, 1);
    assert.equal(rel.step.pairs, 1);
    assert.equal(rel.step.scale, 1);
    assert.deepEqual([...rel.step.groups], ['ann']);
  });

  it('retest: a consistent judge keeps reliability 1; one scoring every call at random falls near 0, below the floor', async () => {
    const tasks = Array.from({ length: 12 }, (_, i) => ({ id: `q${i}`, input: { question: `Ann has 23 pens (${i}), gets 15 more. How many?`, answer: 38 } }));
    const run = async (score: (r: JudgeRequest) => ScoreLine[]) => {
      // One call at a time: the random judge's draws follow the order the calls come in, the same every run.
      const { at, server } = await stepJudge({ concurrency: 1 }, () => null, { score });
      let state: ReliabilityState | undefined;
      const rs: number[] = [];
      for (let k = 1; k <= 4; k++) {
        const groups = [];
        for (const t of tasks) for (const answer of ['38', '40', '38', '37']) groups.push(await stored(store, t, { answer }, { runId: 'run-r', step: k }));
        const step = at(k);
        await step.judgeRound(groups);
        const rel = step.reliability(state)!;
        state = rel.state;
        rs.push(rel.step.r);
        if (k === 4) return { rs, rel: rel.step, requests: server.requests.length };
      }
      throw new Error('unreachable');
    };
    const consistent = await run(answerKeyJudge());
    assert.deepEqual(consistent.rs, [1, 1, 1, 1]);
    assert.equal(consistent.rel.pairs, 12);
    assert.equal(consistent.requests, 48, 'no extra call in group mode: the copy rides in the group call');
    assert.deepEqual(reliabilityMetrics(consistent.rel)['judge/unreliable_groups'], 0);
    const random = await run(randomJudge(3));
    assert.ok(random.rel.r < 0.3, `random judge's reliability ${random.rs.map((r) => r.toFixed(2)).join(' ')}`);
    assert.equal(random.rel.scale, 0, 'below judge.minReliability: its groups are left out');
    const m = reliabilityMetrics(random.rel);
    assert.equal(m['judge/unreliable_groups'], 12);
    assert.ok(m['judge/noise']! > 0.03 && m['judge/signal']! > 0.03, JSON.stringify(m));
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
    assert.equal(step.reliability(undefined)!.step.pairs, 1);
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
