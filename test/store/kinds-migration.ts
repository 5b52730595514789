/**
 * For each backend's migration test: a store of schema 6, before runs had a kind and prompt optimization had tables.
 * The test writes a training run and a rollout with optimization metadata through the store API, then takes away what
 * schema 7 added (`SCHEMA_7_ADDED`, plus what its backend adds) and rewinds the version to 6. After reopening, the run
 * is a training run, the rollout is found by its candidate, and an optimization's records can be written and read.
 */
import assert from 'node:assert/strict';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { candidateId } from '../../protocol/prompts.js';

/** What schema 7 added that both backends drop alike to stand for a store of schema 6. */
export const SCHEMA_7_ADDED = `DROP TABLE prompt_candidates; DROP TABLE optimizer_calls; DROP TABLE promoted_prompts; DROP INDEX rollouts_candidate;
  ALTER TABLE training_runs DROP COLUMN kind;`;

export async function seedBeforeKinds(store: LightningStore): Promise<{ runId: string; rolloutId: string }> {
  const run = await store.createTrainingRun({ agent: 'agent.ts#a', config: {}, totalSteps: 1 });
  const rollout = await store.enqueueRollout({ input: 1, metadata: { runId: 'opt-early', candidate: 'pc-early', taskId: 't', split: 'val' } });
  return { runId: run.id, rolloutId: rollout.id };
}

export async function checkKindsMigrated(store: LightningStore, seeded: { runId: string; rolloutId: string }): Promise<void> {
  assert.equal((await store.getTrainingRun(seeded.runId))?.kind, 'train', 'a run stored before kinds is a training run');
  assert.deepEqual(
    (await store.listTrainingRuns(undefined, 'train')).map((r) => r.id),
    [seeded.runId],
  );
  assert.deepEqual(
    (await store.queryRollouts({ candidate: 'pc-early' })).items.map((r) => r.id),
    [seeded.rolloutId],
  );
  const opt = await store.createTrainingRun({ agent: 'agent.ts#a', kind: 'optimize', config: {}, totalSteps: 0 });
  const lineage = { parents: [], origin: 'seed' as const, component: null, reflection: null, minibatch: null };
  const seed = await store.addPromptCandidate({ id: candidateId(opt.id, 0), runId: opt.id, ordinal: 0, prompts: { system: 'Answer.' }, ...lineage });
  assert.deepEqual(await store.listPromptCandidates(opt.id), [seed]);
  assert.deepEqual(
    (await store.listTrainingRuns(undefined, 'optimize')).map((r) => r.id),
    [opt.id],
  );
}
