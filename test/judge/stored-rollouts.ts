/** Rollouts stored as the runner and the gateway leave them, for the judge's tests: a root span, a chat call, the answer, the agent's reward. */
import { spansToTrajectory } from '../../daemon/algorithm/adapter.js';
import type { GroupRollout, Task } from '../../daemon/algorithm/rollouts.js';
import { rootSpanIdForAttempt } from '../../protocol/ids.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { AGL, GENAI, SPAN } from '../../protocol/spans.js';

const keyTask = (id: string, question: string) => ({ id, input: { question, answer: 0 } });

/** Three sums and a rubric listing their answers (answerKeyJudge's key): `agl judge check`'s tests score them. */
export const ANSWER_KEY = {
  rubric: 'Right totals score 1.\n- Ann has 23 pens => 38\n- Bob has 7 cups => 12\n- Cy has 9 hats => 11',
  ann: keyTask('ann', 'Ann has 23 pens, gets 15 more.'),
  bob: keyTask('bob', 'Bob has 7 cups, gets 5 more.'),
  cy: keyTask('cy', 'Cy has 9 hats, gets 2 more.'),
};

export interface Sample {
  answer: string;
  /** The agent's own reward (returned: final); none when absent. */
  reward?: number;
  /** Emitted with emitReward(v, { final: true }). */
  locked?: boolean;
}

/** A succeeded rollout of `task` that answered `s.answer`, its trajectory read back as training reads it. */
export async function storedRollout(
  store: LightningStore,
  task: Task & { input: { question: string } },
  s: Sample,
  o: { mode?: 'train' | 'val'; runId?: string; step?: number } = {},
): Promise<GroupRollout> {
  const metadata = { runId: o.runId ?? 'run-j', step: o.step ?? 1, taskId: task.id };
  const { rollout, attempt } = await store.startRollout({ input: task.input, mode: o.mode ?? 'train', metadata });
  const base = { rolloutId: rollout.id, attemptId: attempt.id, parentSpanId: rootSpanIdForAttempt(attempt.id) };
  const t = Date.now() - 1_000;
  const reward = s.reward === undefined ? [] : [{ [AGL.rewardValue]: s.reward, [AGL.rewardFinal]: true, ...(s.locked ? { [AGL.rewardLocked]: true } : {}) }];
  await store.addSpans([
    { ...base, spanId: rootSpanIdForAttempt(attempt.id), parentSpanId: null, name: SPAN.agentRun, startTime: t, endTime: t + 50, status: { code: 'ok' } },
    {
      ...base,
      name: SPAN.llmCall,
      startTime: t + 1,
      endTime: t + 10,
      attributes: {
        [GENAI.operationName]: 'chat',
        [AGL.promptTokenIds]: [1, 2, 3],
        [AGL.completionTokenIds]: [4, 5],
        [GENAI.inputMessages]: JSON.stringify([{ role: 'user', content: task.input.question }]),
        [GENAI.outputMessages]: JSON.stringify([{ role: 'assistant', content: s.answer }]),
      },
    },
    {
      ...base,
      name: SPAN.object,
      startTime: t + 11,
      endTime: t + 11,
      attributes: { [AGL.objectJson]: JSON.stringify({ answer: s.answer }), [AGL.objectKind]: 'final' },
    },
    ...reward.map((attributes) => ({ ...base, name: SPAN.reward, startTime: t + 12, endTime: t + 12, attributes })),
  ]);
  await store.finishAttempt(attempt.id, { status: 'succeeded' });
  const spans = await store.querySpans({ rolloutId: rollout.id, attemptId: attempt.id });
  return { rollout: (await store.getRollout(rollout.id))!, task, trajectory: spansToTrajectory(spans), error: null };
}
