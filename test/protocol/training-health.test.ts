/**
 * Whether a run can learn, and why not (protocol/training-health.ts): the cause the evidence names, in its order (no
 * LLM call recorded through the gateway, greedy sampling, every rollout failed, one reward for every rollout, every
 * rollout 0, each task's rollouts alike), each with the first thing to try; the notes on steps, with a policy whose
 * roles did not run in a step told apart from one whose calls had no advantage; whether the policy changed at all;
 * and which calls count as sampled greedily.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { METRICS, judgeFailureMetric, policyMetric, roleMetric } from '../../protocol/metrics.js';
import { sampledGreedily } from '../../protocol/span-reading.js';
import { GENAI, SPAN } from '../../protocol/spans.js';
import {
  LEARNING_CHECK_STEPS,
  describeDiagnosis,
  diagnoseLearning,
  diagnosisSentence,
  policyChanged,
  runContext,
  stepNotes,
  type PointLike,
} from '../../protocol/training-health.js';

const step = (s: number, m: Record<string, number>): PointLike[] => Object.entries(m).map(([name, value]) => ({ step: s, name, value }));
const STEPS = Array.from({ length: LEARNING_CHECK_STEPS }, (_, i) => i + 1);

/** A step of 8 rollouts that taught nothing: every group zero-variance, nothing trained; `m` overrides. */
function flat(s: number, m: Record<string, number> = {}): PointLike[] {
  return step(s, {
    [METRICS.rewardMean]: 0,
    [METRICS.rewardStd]: 0,
    [METRICS.fracRewardZeroStd]: 1,
    [METRICS.rolloutCount]: 8,
    [METRICS.rolloutFailed]: 0,
    [METRICS.llmCalls]: 8,
    [METRICS.greedyCalls]: 0,
    [METRICS.rolloutTransitions]: 8,
    [METRICS.trainedTokens]: 0,
    ...m,
  });
}
const run = (m: Record<string, number>) => STEPS.flatMap((s) => flat(s, m));

describe('the cause of a run that cannot learn, in the order of evidence', () => {
  it('no LLM call recorded through the gateway comes first, whatever the rollouts scored', () => {
    const d = diagnoseLearning(run({ [METRICS.llmCalls]: 0, [METRICS.rolloutTransitions]: 0, [METRICS.rewardMean]: 1, [METRICS.fracRewardZeroStd]: 0 }), {
      agent: '../agent.ts#a',
    })!;
    assert.equal(d.kind, 'no-llm-call');
    assert.match(d.message, new RegExp(`no LLM call was recorded through the gateway in the first ${LEARNING_CHECK_STEPS} steps \\(24 rollouts ran\\)`));
    assert.match(d.advice[0]!, /baseURL: llm\.baseUrl/);
    assert.match(d.advice[1]!, /agl rollout \.\.\/agent\.ts#a --task/, 'the agent as the reader names it');
  });

  it('greedy sampling before what the rollouts scored; the first thing to try follows where the temperature came from', () => {
    const points = run({ [METRICS.greedyCalls]: 8 });
    const byConfig = diagnoseLearning(points, { temperature: 0 })!;
    assert.equal(byConfig.kind, 'greedy-sampling');
    assert.match(byConfig.message, /every LLM call was sampled greedily: every GRPO group had zero variance/);
    assert.match(byConfig.cause, /the run's model\.temperature is 0/);
    assert.match(byConfig.advice[0]!, /model\.temperature: 1 in the run's train\.yaml/);
    assert.doesNotMatch(describeDiagnosis(byConfig).join('\n'), /agl sft/, 'not "warm up with agl sft" though every rollout scored 0');
    const byAgent = diagnoseLearning(points, { temperature: 1 })!;
    assert.match(byAgent.cause, /the agent's LLM calls set temperature 0 \(or top_k 1\), over the run's model\.temperature 1/);
    assert.match(byAgent.advice[0]!, /drop temperature \/ top_k from the agent's own LLM calls/);
    assert.match(diagnoseLearning(run({ [METRICS.greedyCalls]: 6 }))!.message, /75% of the LLM calls were sampled greedily/);
    assert.equal(diagnoseLearning(run({ [METRICS.greedyCalls]: 2 }))!.kind, 'all-zero', 'a few greedy calls do not make the cause');
  });

  it('every rollout failed', () => {
    const d = diagnoseLearning(run({ [METRICS.rolloutFailed]: 8, [METRICS.llmCalls]: 0, [METRICS.rolloutTransitions]: 0 }))!;
    assert.equal(d.kind, 'all-failed');
    assert.match(d.advice[0]!, /open a failed rollout/);
    // Runs recorded before rollout/count: some failed and none left a call.
    const older = STEPS.flatMap((s) =>
      step(s, { [METRICS.rewardMean]: 0, [METRICS.rolloutFailed]: 8, [METRICS.rolloutTransitions]: 0, [METRICS.trainedTokens]: 0 }),
    );
    assert.equal(diagnoseLearning(older)!.kind, 'all-failed');
  });

  it('every rollout scored the same non-zero value, then every rollout 0, then each task alike', () => {
    const same = diagnoseLearning(run({ [METRICS.rewardMean]: 1 }))!;
    assert.equal(same.kind, 'same-reward');
    assert.equal(same.title, 'every rollout scored 1');
    assert.match(same.advice[0]!, /check that the reward depends on the answer/);
    assert.equal(diagnoseLearning(run({ [METRICS.rewardMean]: 0.5 }))!.title, 'every rollout scored 0.5');
    const zero = diagnoseLearning(run({}))!;
    assert.equal(zero.kind, 'all-zero');
    assert.match(zero.advice[0]!, /agl sft/);
    const alike = diagnoseLearning(run({ [METRICS.rewardMean]: 0.4, [METRICS.rewardStd]: 0.5 }))!;
    assert.equal(alike.kind, 'zero-variance');
    assert.match(alike.advice[0]!, /partial credit/);
  });

  it('waits for the first steps, and says nothing when one of them could teach', () => {
    assert.equal(diagnoseLearning(run({}).filter((p) => p.step < LEARNING_CHECK_STEPS)), null);
    const learning = [...flat(1), ...flat(2, { [METRICS.fracRewardZeroStd]: 0.5, [METRICS.rewardStd]: 0.4, [METRICS.trainedTokens]: 40 }), ...flat(3)];
    assert.equal(diagnoseLearning(learning), null);
    assert.equal(diagnoseLearning(flat(1), {}, 1)!.kind, 'all-zero', 'a shorter run is judged on its steps');
  });

  it('says it in one sentence for the editor, in lines for the terminal, in the same words', () => {
    const d = diagnoseLearning(run({ [METRICS.greedyCalls]: 8 }), { temperature: 0 })!;
    assert.equal(diagnosisSentence(d), `${d.message} Likely cause: ${d.cause}. Try first: ${d.advice[0]}.`);
    assert.deepEqual(describeDiagnosis(d).slice(0, 2), [d.message, `Likely cause: ${d.cause}.`]);
  });
});

describe('notes on the steps that taught little', () => {
  it("names a step's cause and what to try about it", () => {
    const notes = stepNotes(
      [...flat(1, { [METRICS.greedyCalls]: 8 }), ...flat(2, { [METRICS.trainedTokens]: 30, [METRICS.fracRewardZeroStd]: 0.75, [METRICS.greedyCalls]: 8 })],
      {
        temperature: 0,
      },
    );
    assert.deepEqual(
      notes.map((n) => [n.step, n.kind]),
      [
        [1, 'no-update'],
        [2, 'zero-variance'],
      ],
    );
    assert.equal(notes[0]!.text, 'no update: greedy sampling (temperature 0 / top-k 1)');
    assert.match(notes[0]!.tryFirst, /model\.temperature: 1/);
    assert.match(notes[1]!.text, /75% of the groups had zero variance \(most calls were sampled greedily/);
  });

  it('tells a role that runs only on some paths from a policy whose calls had no advantage', () => {
    const ctx = runContext({
      id: 'run-1',
      agent: 'samples/sql/agent.ts#sqlAgent',
      config: { model: { temperature: 1 }, policies: { writer: {}, rewriter: {}, checker: { shared: 'writer' } } },
    });
    assert.deepEqual(ctx.policyRoles, { writer: ['writer', 'checker'], rewriter: ['rewriter'] });
    assert.equal(ctx.temperature, 1);
    const roles = (s: number, rewriterCalls: number, rewriterUpdates: number, rewriterTransitions: number) =>
      flat(s, {
        [METRICS.trainedTokens]: 40,
        [METRICS.fracRewardZeroStd]: 0.25,
        [roleMetric('writer', 'calls')]: 12,
        [roleMetric('checker', 'calls')]: 12,
        ...(rewriterCalls ? { [roleMetric('rewriter', 'calls')]: rewriterCalls } : {}),
        [policyMetric('writer', 'updates')]: s,
        [policyMetric('writer', 'transitions')]: 24,
        [policyMetric('rewriter', 'updates')]: rewriterUpdates,
        [policyMetric('rewriter', 'transitions')]: rewriterTransitions,
      });
    const points = [...roles(1, 4, 1, 4), ...roles(2, 0, 1, 0), ...roles(3, 4, 1, 4), ...roles(4, 4, 2, 4)];
    const notes = stepNotes(points, ctx);
    assert.deepEqual(
      notes.map((n) => [n.step, n.kind, n.policy]),
      [
        [2, 'policy-no-update', 'rewriter'],
        [3, 'policy-no-update', 'rewriter'],
      ],
    );
    assert.equal(
      notes[0]!.text,
      "policy rewriter: no update: role rewriter made no LLM call in this step (it called in steps 1, 3, 4: the agent takes it only on some paths, e.g. when another role's answer is rejected)",
    );
    assert.match(notes[0]!.tryFirst, /nothing is wrong when the agent calls it only when needed/);
    assert.doesNotMatch(notes[0]!.tryFirst, /partial credit|agl sft/);
    assert.equal(notes[1]!.text, 'policy rewriter: no update: none of its 4 calls had a nonzero advantage (its groups scored alike)');
    assert.match(notes[1]!.tryFirst, /partial credit/);
    const never = stepNotes([...roles(1, 0, 0, 0), ...roles(2, 0, 0, 0)], ctx);
    assert.match(never[0]!.text, /role rewriter made no LLM call in this step \(nor in any step so far/);
  });
});

describe('notes on the groups an LLM judge could not score', () => {
  const judged = (s: number, scored: number, failed: Partial<Record<'malformed' | 'partial' | 'error' | 'timeout', number>>, m: Record<string, number> = {}) =>
    flat(s, {
      [METRICS.trainedTokens]: 40,
      [METRICS.fracRewardZeroStd]: 0,
      [METRICS.judgeCalls]: scored + Object.values(failed).reduce((a, n) => a + n, 0),
      [METRICS.judgeGroups]: scored,
      [METRICS.judgeFailedGroups]: Object.values(failed).reduce((a, n) => a + n, 0),
      ...Object.fromEntries(Object.entries(failed).map(([k, n]) => [judgeFailureMetric(k as 'partial'), n])),
      ...m,
    });

  it('says how many groups it could not score, why, and what to try about the main reason', () => {
    const notes = stepNotes([...judged(1, 16, {}), ...judged(2, 13, { partial: 2, timeout: 1 })]);
    assert.deepEqual(
      notes.map((n) => [n.step, n.kind]),
      [[2, 'judge-left-out']],
    );
    assert.equal(notes[0]!.text, 'the judge could not score 3 of 16 groups (2 answers missing a trajectory, 1 timeout): left out of the update');
    assert.match(notes[0]!.tryFirst, /answers in the JSON asked for .*judge\.mode: single/);
  });

  it('a step whose every group it could not score has no reward (never 0) and one note that says nothing was trained', () => {
    const points = judged(3, 0, { error: 4 }, { [METRICS.trainedTokens]: 0 }).filter((p) => p.name !== METRICS.rewardMean && p.name !== METRICS.rewardStd);
    const notes = stepNotes(points);
    assert.deepEqual(
      notes.map((n) => n.kind),
      ['judge-left-out'],
    );
    assert.equal(
      notes[0]!.text,
      'the judge could not score 4 of 4 groups (4 requests that failed with a 429, a 5xx or a broken connection): left out of the update, so nothing was left to train on',
    );
    assert.match(notes[0]!.tryFirst, /judge\.url.*judge\.retries/);
    assert.equal(
      diagnoseLearning([
        ...points,
        ...judged(1, 0, { error: 4 }, { [METRICS.trainedTokens]: 0 }),
        ...judged(2, 0, { error: 4 }, { [METRICS.trainedTokens]: 0 }),
      ]),
      null,
    );
  });

  it("the judge's weight (judge.retest): a note saying why when it scaled the update, and when it left the judged groups out", () => {
    const rel = (w: number, out: number, m: Record<string, number> = {}) =>
      judged(
        4,
        12,
        {},
        {
          ...{ [METRICS.judgeWeight]: w, [METRICS.judgeReliability]: 0.27, [METRICS.judgeReliabilityLow]: w * w, [METRICS.judgeInformativeness]: 0.52 },
          ...{ [METRICS.judgeRetestPairs]: 48, [METRICS.judgeNoise]: 0.05, [METRICS.judgeSignal]: 0.08, [METRICS.judgeUnreliableGroups]: out, ...m },
        },
      );
    assert.deepEqual(stepNotes(rel(0.97, 0)), [], 'a judge that agrees with itself: nothing to say');
    const scaled = stepNotes(rel(0.38, 0));
    assert.deepEqual(
      scaled.map((n) => n.kind),
      ['judge-unreliable'],
    );
    assert.equal(
      scaled[0]!.text,
      "judge weight 0.38: its scores of the same trajectories in separate calls correlate 0.27 within groups (at least 0.14 at 95%; informativeness 0.52; 48 pairs this step and the last steps'), so the judged groups' advantages were multiplied by 0.38",
    );
    const out = stepNotes(rel(0, 12, { [METRICS.trainedTokens]: 0 }));
    assert.deepEqual(
      out.map((n) => n.kind),
      ['judge-unreliable', 'no-update'],
    );
    assert.match(out[0]!.text, /^judge weight 0: .* \(at least 0\.00 at 95%; .*\), so its 12 groups were left out of the update$/);
    assert.equal(out[1]!.text, 'no update: the judge was not shown to be informative (its note says how)');
    assert.match(out[0]!.tryFirst, /judge\.temperature 0.*agl judge check/);
  });
});

describe('whether the policy changed, and which calls sampled greedily', () => {
  it('a run changed the policy when any step trained on some tokens', () => {
    assert.equal(policyChanged([]), null);
    assert.equal(policyChanged(run({})), false);
    assert.equal(policyChanged([...flat(1), ...flat(2, { [METRICS.trainedTokens]: 12 })]), true);
  });

  it('a call sampled at temperature 0.1 or less, or with top-k 1, is greedy', () => {
    const call = (attributes: Record<string, number>) => ({ name: SPAN.llmCall, attributes });
    assert.equal(sampledGreedily(call({ [GENAI.requestTemperature]: 0 })), true);
    assert.equal(sampledGreedily(call({ [GENAI.requestTemperature]: 0.1 })), true);
    assert.equal(sampledGreedily(call({ [GENAI.requestTemperature]: 0.7 })), false);
    assert.equal(sampledGreedily(call({ [GENAI.requestTemperature]: 1, [GENAI.requestTopK]: 1 })), true);
    assert.equal(sampledGreedily(call({})), false);
  });
});
