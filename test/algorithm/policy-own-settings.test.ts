/**
 * Each policy of a run with policies per role lives by its own settings and counts, through the real trainer, gateway,
 * runner and store:
 *   - its learning-rate warm-up counts its own updates from 0, whatever step the run is at (a role policy that has not
 *     updated yet once started its warm-up at the run's step);
 *   - the group view checks each call's stored advantage with its own policy's GRPO settings (a dr_grpo role in a grpo
 *     run was flagged "advantages do not follow the formula"), and the run header names each policy's own settings;
 *   - what the store keeps per policy was measured: its loss, KL, clip ratio, gradient norm and learning rate exist at
 *     the steps it updated, never a made-up 0 at the others, and the run has no single `grpo/lr`.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import { OpenPolicySet, trainedPolicy } from '../../daemon/algorithm/open-policy-set.js';
import { Trainer } from '../../daemon/algorithm/trainer.js';
import { recordedPolicies } from '../../daemon/algorithm/run-record.js';
import { newTrainerState } from '../../daemon/algorithm/trainer-state.js';
import { startTrainingHost } from '../../daemon/algorithm/training-host.js';
import { createPolicy, TfPolicyModel } from '../../daemon/model/policy.js';
import { groupPage } from '../../daemon/store/views.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { METRICS, policyMetric } from '../../protocol/metrics.js';
import { policySet } from '../../protocol/policy-set.js';
import { configSummary } from '../../webview/dashboard/run-header.js';

const AGENT = 'test/algorithm/fixtures/roles-agent.ts#rolesAgent';
const BASE_LR = 1e-3;
const WARMUP = 4;

/** The learning rate of every update each TF.js policy makes while `fn` runs, in order (the real update runs). */
async function recordingRates(fn: () => Promise<unknown>): Promise<Map<string, number[]>> {
  const seen = new Map<string, number[]>();
  const proto = TfPolicyModel.prototype as unknown as { trainStep: (this: TfPolicyModel, ...args: unknown[]) => Promise<unknown> };
  const real = proto.trainStep;
  proto.trainStep = function (this: TfPolicyModel, ...args: unknown[]) {
    seen.set(this.name, [...(seen.get(this.name) ?? []), (args[2] as { lr: number }).lr]);
    return real.apply(this, args);
  };
  try {
    await fn();
  } finally {
    proto.trainStep = real;
  }
  return seen;
}

describe('policies per role: each by its own settings and counts', () => {
  it(
    'a resumed run at step 5: warm-up from each policy’s own first update; the views check advantages by each policy’s settings',
    { timeout: 600_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'agl-own-settings-'));
      const store = new SqliteStore(join(dir, 'store.sqlite'));
      const mk = (name: string) => createPolicy({ size: { dModel: 32, nLayers: 1, nHeads: 2 }, contextLength: 32, seed: 1, backend: 'cpu', name });
      const [fallback, writer, checker] = await Promise.all([mk('default'), mk('writer'), mk('checker')]);
      const config = parseTrainConfig({
        model: { temperature: 1, maxTokens: 6 },
        training: { batchSize: 2, groupSize: 4, maxSteps: 8, epochs: 4, valEvery: 0, seed: 3, learningRate: BASE_LR, warmupSteps: WARMUP },
        runtime: { workers: 2 },
        policies: { writer: {}, checker: { grpo: { variant: 'dr_grpo' } } },
      });
      const plan = policySet(config);
      const policies = new OpenPolicySet(plan, [trainedPolicy(plan.policies[0]!, writer), trainedPolicy(plan.policies[1]!, checker)], fallback);
      const host = await startTrainingHost({ store, policies, token: 'test-token-abcdef0123456789', dataDir: dir, workers: 2, agent: AGENT });
      try {
        const tasks = Array.from({ length: 4 }, (_, i) => ({ id: `p${i}`, input: { prompt: `p${i}:` } }));
        const run = await store.createTrainingRun({ agent: AGENT, config: config as unknown as Record<string, unknown>, totalSteps: 8 });
        // Resumed after 5 steps in which neither role policy updated (e.g. their roles were added to a running config).
        const state = { ...newTrainerState(run), step: 5, val: [{ step: 5, reward: 0, tasks: 4 }] };
        const trainer = new Trainer(
          { store, policies, endpoint: host.endpoint, agent: AGENT, config, train: tasks, val: tasks, checkpoint: async () => {} },
          state,
        );
        const rates = await recordingRates(() => trainer.run());
        for (const name of ['writer', 'checker']) {
          const lrs = rates.get(name) ?? [];
          assert.ok(lrs.length >= 1, `${name} updated at least once in 3 steps`);
          // Its k-th update (k = 1, 2, ...) is at BASE_LR * min(1, k / WARMUP): its own count, not the run's step 6.
          lrs.forEach((lr, k) => assert.ok(Math.abs(lr - BASE_LR * Math.min(1, (k + 1) / WARMUP)) < 1e-12, `${name} update ${k + 1}: lr ${lr}`));
          assert.equal(trainer.state.policies![name]!.updates, lrs.length);
        }

        // What the store holds per policy: measured values only.
        const points = await store.queryMetrics(run.id);
        const at = (step: number, name: string) => points.find((p) => p.step === step && p.name === name)?.value;
        assert.ok(!points.some((p) => p.name === METRICS.lr), 'with policies per role each has its own rate: no run-wide grpo/lr');
        for (const name of ['writer', 'checker']) {
          let before = 0;
          for (const step of [6, 7, 8]) {
            const updates = at(step, policyMetric(name, 'updates'))!;
            const updated = updates > before;
            for (const m of ['loss', 'kl', 'clip_ratio', 'grad_norm', 'lr'])
              assert.equal(at(step, policyMetric(name, m)) !== undefined, updated, `${name} step ${step}: ${m} recorded iff it updated`);
            if (updated) assert.equal(at(step, policyMetric(name, 'lr')), BASE_LR * Math.min(1, updates / WARMUP));
            before = updates;
          }
        }

        // The group view: every stored advantage follows its own policy's formula (the checker's is Dr.GRPO's: no std).
        // The run's record as agl train writes it (run-record.ts): each policy's own settings, which the header reads.
        const recorded = await store.updateTrainingRun(run.id, { summary: { policies: recordedPolicies(config) } });
        let checked = 0;
        for (const step of [6, 7, 8]) {
          const page = await groupPage(store, { runId: run.id, step });
          for (const g of page.groups) {
            if (!g.advantage || g.advantage.zeroVariance) continue;
            checked++;
            assert.equal(g.advantage.matchesStored, true, `step ${step} task ${g.groupId}: the stored advantages follow each policy's own formula`);
            assert.deepEqual(
              g.advantage.byPolicy?.map((p) => [p.policy, p.scaleRewards, p.variant]),
              [
                ['writer', 'group', 'grpo'],
                ['checker', 'none', 'dr_grpo'],
              ],
            );
            assert.equal(g.advantage.scaleRewards, null, 'no one scaling holds for the whole group');
          }
        }
        assert.ok(checked >= 1, 'a group with spread was checked');
        assert.deepEqual(
          configSummary(recorded)
            .filter(([field]) => field === 'lr' || field === 'variant')
            .map(([field, , value]) => [field, value]),
          [
            ['lr', '1e-3'],
            ['variant', 'writer grpo · checker dr_grpo'],
          ],
        );
      } finally {
        await host.close();
        await store.close();
        for (const p of [fallback, writer, checker]) p.dispose();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
