/**
 * For each backend's migration test: a two-policy training run as agl train recorded it before a step without a
 * policy's update was a gap (its loss, KL, clip ratio, gradient norm and learning rate written as 0, its reward 0 when
 * its roles made no call). Written with the store API (the test then rewinds the schema version to 5); after reopening,
 * exactly those made-up values are gone, and everything measured (counts, a real update's values, the run's own
 * metrics, another writer's) is still there.
 */
import assert from 'node:assert/strict';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { METRICS, policyMetric } from '../../protocol/metrics.js';

const UPDATE = ['loss', 'kl', 'clip_ratio', 'grad_norm', 'lr'] as const;

export async function seedPolicyZeros(store: LightningStore): Promise<{ runId: string; otherRunId: string }> {
  const run = await store.createTrainingRun({ agent: 'agent.ts#a', config: {}, totalSteps: 2 });
  const other = await store.createTrainingRun({ agent: 'agent.ts#b', config: {}, totalSteps: 1 });
  const policy = (name: string, step: number, updates: number, transitions: number, reward: number, updated: boolean) => [
    { runId: run.id, step, name: policyMetric(name, 'updates'), value: updates },
    { runId: run.id, step, name: policyMetric(name, 'transitions'), value: transitions },
    { runId: run.id, step, name: policyMetric(name, 'reward'), value: reward },
    ...UPDATE.map((m) => ({ runId: run.id, step, name: policyMetric(name, m), value: updated ? 0.25 : 0 })),
  ];
  await store.addMetrics([
    // writer updates at step 1, not at step 2 (no advantage); checker's roles make no call at step 1, it updates at 2.
    ...policy('writer', 1, 1, 4, 0.5, true),
    ...policy('writer', 2, 1, 3, 0.2, false),
    ...policy('checker', 1, 0, 0, 0, false),
    ...policy('checker', 2, 1, 2, 0.4, true),
    { runId: run.id, step: 1, name: METRICS.loss, value: 0 },
    { runId: run.id, step: 2, name: METRICS.rewardMean, value: 0.3 },
    { runId: other.id, step: 1, name: 'policy/x/loss', value: 0 },
  ]);
  return { runId: run.id, otherRunId: other.id };
}

export async function checkPolicyGaps(store: LightningStore, seeded: { runId: string; otherRunId: string }): Promise<void> {
  const names = async (step: number, policy: string) =>
    (await store.queryMetrics(seeded.runId))
      .filter((p) => p.step === step && p.name.startsWith(`policy/${policy}/`))
      .map((p) => p.name.split('/')[2])
      .sort();
  const all = ['clip_ratio', 'grad_norm', 'kl', 'loss', 'lr', 'reward', 'transitions', 'updates'];
  assert.deepEqual(await names(1, 'writer'), all, "the writer's update at step 1 is kept whole");
  assert.deepEqual(await names(2, 'writer'), ['reward', 'transitions', 'updates'], 'no update at step 2: no loss, KL, clip, norm or rate');
  assert.deepEqual(await names(1, 'checker'), ['transitions', 'updates'], 'no call and no update at step 1: no reward either');
  assert.deepEqual(await names(2, 'checker'), all);
  const run = (await store.queryMetrics(seeded.runId)).filter((p) => !p.name.startsWith('policy/')).map((p) => [p.name, p.step]);
  assert.deepEqual(run.sort(), [
    [METRICS.loss, 1],
    [METRICS.rewardMean, 2],
  ]);
  assert.deepEqual(
    (await store.queryMetrics(seeded.otherRunId)).map((p) => p.name),
    ['policy/x/loss'],
    "a run without a policy's updates count is another writer's: kept",
  );
}
