/**
 * Feedback with a reward, through the runner and a real daemon: `emitReward(v, { feedback })` and an agent returning
 * `{ reward, feedback }` record the grader's words on the reward span (the returned one final, what else it returned the
 * episode's answer); a returned reward that is no number or a feedback that is no text fails the rollout naming it; a
 * rollout that fails or times out scores 0 with its error as its feedback wherever a score is read (span-reading's
 * rolloutFeedback over its spans, whose root span the runner records when the agent's process could not; the
 * optimization view), whatever it emitted before.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { rootSpanIdForAttempt } from '../../protocol/ids.js';
import { candidateId } from '../../protocol/prompts.js';
import { lockedReward } from '../../protocol/judge-reading.js';
import { episodeAnswer, finalReward, rolloutFeedback } from '../../protocol/span-reading.js';
import { AGL, SPAN } from '../../protocol/spans.js';
import type { Rollout } from '../../protocol/store.js';
import { type Harness, type RunnerStack, startRunnerStack } from '../helpers/daemon.js';

const agents = resolve('test/sdk/fixtures/feedback-agents.ts'); // tests run from the repo root
const runnerAgents = resolve('test/runner/fixtures/agents.ts');

describe('feedback with a reward', () => {
  let stack: RunnerStack;
  let daemon: Harness;
  before(async () => {
    stack = await startRunnerStack(2);
    ({ daemon } = stack);
  });
  after(() => stack.close());

  const run = (agent: string, extra: { timeoutSeconds?: number } = {}, input: unknown = { total: 10 }): Promise<Rollout> =>
    stack.runToEnd({ input, agent, config: extra.timeoutSeconds ? { timeoutSeconds: extra.timeoutSeconds } : {} });
  const spansOf = (r: Rollout) => daemon.client.querySpans({ rolloutId: r.id });

  it('an agent returning { reward, feedback, ...answer } records a final reward with its feedback, and the rest as its answer', async () => {
    const r = await run(`${agents}#gradedAgent`);
    assert.equal(r.status, 'succeeded');
    const spans = await spansOf(r);
    const [reward] = spans.filter((s) => s.name === SPAN.reward);
    assert.deepEqual(
      [reward.attributes[AGL.rewardValue], reward.attributes[AGL.rewardFinal], reward.attributes[AGL.rewardFeedback]],
      [0, true, 'the total 15 misses the shipping fee'],
    );
    assert.equal(finalReward(spans), 0);
    assert.equal(rolloutFeedback(spans), 'the total 15 misses the shipping fee');
    assert.deepEqual(episodeAnswer(spans).value, { answer: 15 });
    const [row] = (await daemon.client.queryRollouts({ ids: [r.id], withSummaries: true })).summaries!;
    assert.equal(row.finalReward, 0, "the store's summary reads the returned reward");
  });

  it('emitReward(v, { feedback }) puts the words on the reward span, named components and all', async () => {
    const r = await run(`${agents}#emittingAgent`);
    const [reward] = (await spansOf(r)).filter((s) => s.name === SPAN.reward);
    assert.deepEqual(
      [reward.attributes[AGL.rewardName], reward.attributes[AGL.rewardValue], reward.attributes[AGL.rewardFeedback]],
      ['exact', 0, 'well formed, wrong value'],
    );
    assert.equal(rolloutFeedback(await spansOf(r)), 'well formed, wrong value');
  });

  it('a reward the agent marks final (returned { reward, final: true }, or emitReward(v, { final: true })) is locked against an LLM judge', async () => {
    const returned = await spansOf(await run(`${agents}#lockingAgent`));
    const emitted = await spansOf(await run(`${agents}#lockingAgent`, {}, { total: 0 }));
    assert.deepEqual(lockedReward(returned)?.value, 1);
    assert.deepEqual(lockedReward(emitted)?.value, 0.25);
    assert.deepEqual([finalReward(returned), finalReward(emitted)], [1, 0.25]);
    assert.equal(rolloutFeedback(returned), 'checked against the ledger');
    // A plain returned number is final but not locked: a judge may replace it.
    assert.equal(lockedReward(await spansOf(await run(`${agents}#gradedAgent`))), null);
    const bad = await run(`${agents}#badFinalAgent`);
    assert.equal(bad.status, 'failed');
    assert.match(
      (await daemon.client.getAttempts(bad.id))[0].error?.message ?? '',
      /returned \{ final \} of type string: true locks the reward against an LLM judge/,
    );
  });

  it('a returned reward that is no finite number, or a feedback that is no text, fails the rollout naming it', async () => {
    const nan = await run(`${agents}#nanRewardAgent`);
    const numeric = await run(`${agents}#numericFeedbackAgent`);
    assert.deepEqual([nan.status, numeric.status], ['failed', 'failed']);
    assert.match((await daemon.client.getAttempts(nan.id))[0].error?.message ?? '', /returned \{ reward: NaN \}: the reward must be a finite number/);
    assert.match(
      (await daemon.client.getAttempts(numeric.id))[0].error?.message ?? '',
      /returned \{ feedback \} of type number: give the grader's words as a string/,
    );
  });

  it('a rollout killed at its timeout, a crashed one and one whose agent never loaded say their error as feedback: the runner records their root span', async () => {
    const cases = [
      [await run(`${agents}#slowGradedAgent`, { timeoutSeconds: 1 }), /^rollout timed out after 1 s: the agent process was killed/],
      [await run(`${runnerAgents}#crashingAgent`), /^agent process exited \(code 3\) during the rollout/],
      [await run(`${runnerAgents}#noSuchExport`), /has no exported function 'noSuchExport'/],
    ] as const;
    for (const [r, error] of cases) {
      assert.equal(r.status, 'failed');
      const spans = await spansOf(r);
      const [attempt] = await daemon.client.getAttempts(r.id);
      const roots = spans.filter((s) => s.name === SPAN.agentRun);
      assert.equal(roots.length, 1, 'one root span');
      assert.equal(roots[0].spanId, rootSpanIdForAttempt(attempt.id));
      assert.equal(roots[0].status.code, 'error');
      assert.match(rolloutFeedback(spans) ?? '', error);
    }
    const graded = (await spansOf(cases[0][0])).find((s) => s.name === SPAN.reward)!;
    assert.equal(graded.parentSpanId, rootSpanIdForAttempt((await daemon.client.getAttempts(cases[0][0].id))[0].id), 'what it emitted hangs under that root');
  });

  it('an agent that throws keeps the one root span its worker wrote (the runner adds none)', async () => {
    const r = await run(`${runnerAgents}#throwingAgent`);
    const spans = await spansOf(r);
    assert.equal(spans.filter((s) => s.name === SPAN.agentRun).length, 1);
    assert.equal(rolloutFeedback(spans), 'the agent broke on purpose', "its root span's error, the attempt's");
  });

  it("scores an optimization's val rollouts 0 with their error when they time out, whatever they emitted before", async () => {
    const opt = await daemon.client.createTrainingRun({ agent: `${agents}#gradedAgent`, kind: 'optimize', config: {}, totalSteps: 0 });
    const seed = await daemon.client.addPromptCandidate({
      ...{ id: candidateId(opt.id, 0), runId: opt.id, ordinal: 0, prompts: { system: 'Answer.' } },
      ...{ parents: [], origin: 'seed', component: null, reflection: null, minibatch: null },
    });
    const val = (agent: string, taskId: string, timeoutSeconds?: number) =>
      stack.runToEnd({
        input: { total: 1 },
        agent,
        mode: 'val',
        config: timeoutSeconds ? { timeoutSeconds } : {},
        metadata: { runId: opt.id, candidate: seed.id, taskId, split: 'val' },
      });
    await val(`${agents}#slowGradedAgent`, 'v1', 1);
    await val(`${agents}#gradedAgent`, 'v2');
    const view = await daemon.client.getOptimizationView(opt.id);
    assert.deepEqual(
      Object.entries(view.candidates[0]!.val).map(([task, s]) => [task, s.score, s.feedback]),
      [
        ['v1', 0, 'rollout timed out after 1 s: the agent process was killed'],
        ['v2', 0, 'the total 6 misses the shipping fee'],
      ],
    );
  });
});
