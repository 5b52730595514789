/**
 * The judge's step in training (daemon/algorithm/step-judge.ts) on a real SQLite store and a scripted judge over HTTP:
 * each judged rollout gets the judge's reward as its final reward, stored as a reward span (source judge, the
 * explanation as its feedback: what prompt optimization reads) beside the judge call's span (order shown, place, tries,
 * tokens, cost); with judge.weight it is added to the agent's own; a reward the agent locked is neither sent nor
 * replaced; a group the judge cannot score is left out with its reason counted, its rewards untouched (never 0);
 * validation rollouts are judged as judge.validation says.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { finalReward as trajectoryReward } from '../../daemon/algorithm/credit.js';
import type { GroupRollout } from '../../daemon/algorithm/rollouts.js';
import { judgeMetrics, StepJudge } from '../../daemon/algorithm/step-judge.js';
import { Judge } from '../../daemon/judge/judge.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { judgeVerdict } from '../../protocol/judge-reading.js';
import { JudgeSection, type JudgeSettingsInput } from '../../protocol/judge-settings.js';
import { finalReward, rolloutFeedback } from '../../protocol/span-reading.js';
import { AGL } from '../../protocol/spans.js';
import { storedRollout as stored, type Sample } from './stored-rollouts.js';
import { answerKeyJudge, startScriptedJudge, type Fault, type JudgeRequest, type ScriptedJudge } from '../helpers/scripted-judge.js';

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

async function stepJudge(settings: Partial<JudgeSettingsInput> = {}, faults: (n: number, r: JudgeRequest) => Fault | null = () => null) {
  const server = await startScriptedJudge({ score: answerKeyJudge(), faults });
  servers.push(server);
  const logs: string[] = [];
  const judge = new Judge({
    settings: JudgeSection.parse({ url: server.url, model: 'judge-m', rubric: RUBRIC, retries: 1, backoffSeconds: 0.01, priceIn: 3, priceOut: 5, ...settings }),
    rubric: RUBRIC,
    apiKey: '',
    seed: 7,
  });
  return { server, logs, step: new StepJudge(judge, store, { runId: 'run-j', step: 1, log: (m) => logs.push(m) }) };
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
      assert.deepEqual([...v.order].sort(), groups.map((x) => x.rollout.id).sort());
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
    assert.equal(server.requests[0]!.trajectories.length, 2);
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
});
