/**
 * For each backend's migration test: a training run as agl train recorded it before steps were numbered from 1
 * (protocol/metrics.ts FIRST_TRAINING_STEP): its first training step's metrics, transitions and rollouts at step 0,
 * the validations at the updates before them (0 and 1). Writes it with the store API (the test then rewinds the schema
 * version to 2); after reopening, the training step is step 1 everywhere and the validations did not move. Another
 * writer's metrics (no training reward: not agl train's) and a user's rollout metadata keep their steps.
 */
import assert from 'node:assert/strict';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { METRICS } from '../../protocol/metrics.js';

export interface ZeroBasedRun {
  runId: string;
  otherRunId: string;
  trainRollout: string;
  valRollout: string;
  userRollout: string;
}

export async function seedZeroBasedRun(store: LightningStore): Promise<ZeroBasedRun> {
  const run = await store.createTrainingRun({ agent: 'agent.ts#a', config: {}, totalSteps: 1 });
  const other = await store.createTrainingRun({ agent: 'agent.ts#b', config: {}, totalSteps: 1 });
  const trainRollout = await store.enqueueRollout({ input: 1, mode: 'train', metadata: { runId: run.id, step: 0, taskId: 't1', sample: 0 } });
  const valRollout = await store.enqueueRollout({ input: 2, mode: 'val', metadata: { runId: run.id, step: 1, taskId: 'v1' } });
  const userRollout = await store.enqueueRollout({ input: 3, mode: 'train', metadata: { step: 7 } });
  await store.addMetrics([
    { runId: run.id, step: 0, name: METRICS.valReward, value: 0.25 },
    { runId: run.id, step: 0, name: METRICS.rewardMean, value: 0.5 },
    { runId: run.id, step: 0, name: METRICS.loss, value: 0.1 },
    { runId: run.id, step: 1, name: METRICS.valReward, value: 0.75 },
    { runId: other.id, step: 0, name: 'custom/score', value: 3 },
  ]);
  await store.addTransitions([
    {
      runId: run.id,
      step: 0,
      rolloutId: trainRollout.id,
      attemptId: 'at-1',
      spanId: 'sp-1',
      groupId: 't1',
      index: 0,
      agentName: null,
      reward: 0.5,
      credit: 0.5,
      advantage: 0,
      promptTokens: 3,
      completionTokens: 2,
    },
  ]);
  return { runId: run.id, otherRunId: other.id, trainRollout: trainRollout.id, valRollout: valRollout.id, userRollout: userRollout.id };
}

export async function checkStepsRenumbered(store: LightningStore, seeded: ZeroBasedRun): Promise<void> {
  const points = (await store.queryMetrics(seeded.runId)).map((p) => [p.name, p.step, p.value]);
  assert.deepEqual(
    points.sort((a, b) => String(a[0]).localeCompare(String(b[0])) || Number(a[1]) - Number(b[1])),
    [
      [METRICS.loss, 1, 0.1],
      [METRICS.rewardMean, 1, 0.5],
      [METRICS.valReward, 0, 0.25],
      [METRICS.valReward, 1, 0.75],
    ],
  );
  assert.deepEqual(
    (await store.queryMetrics(seeded.otherRunId)).map((p) => p.step),
    [0],
    "another writer's metrics keep their steps",
  );
  const transitions = await store.queryTransitions({ runId: seeded.runId, step: 1 });
  assert.deepEqual(
    transitions.map((t) => [t.spanId, t.step]),
    [['sp-1', 1]],
  );
  assert.equal((await store.queryTransitions({ runId: seeded.runId, step: 0 })).length, 0);
  const step = async (id: string) => (await store.getRollout(id))?.metadata.step;
  assert.equal(await step(seeded.trainRollout), 1, "the training step's rollouts");
  assert.equal(await step(seeded.valRollout), 1, 'a validation rollout keeps its step');
  assert.equal(await step(seeded.userRollout), 7, "a rollout no run made keeps the user's step");
  const page = await store.queryRollouts({ runId: seeded.runId, step: 1 });
  assert.deepEqual(page.items.map((r) => r.id).sort(), [seeded.trainRollout, seeded.valRollout].sort(), 'the step filter finds them');
}
