/**
 * Each GRPO variant drives the real training loop end to end (SQLite store, HTTP gateway serving the policy,
 * runner workers running the toy agent, adapter, credit, update): two short steps each, the weights move,
 * and DAPO's dynamic sampling rolls out fresh tasks when a scheduled group has no reward spread, trains on
 * the groups with spread only, and records what it did. Learning itself is the benchmarks' business.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { METRICS } from '../../protocol/metrics.js';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import { startTrainingHost } from '../../daemon/algorithm/training-host.js';
import { Trainer } from '../../daemon/algorithm/trainer.js';
import { newTrainerState } from '../../daemon/algorithm/trainer-state.js';
import { tasksForStep } from '../../daemon/algorithm/schedule.js';
import { onePolicySet } from '../../daemon/algorithm/open-policy-set.js';
import { createPolicy } from '../../daemon/model/policy.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';

const AGENT = 'test/algorithm/fixtures/toy-agent.ts#toyAgent';
/** 8 per group: a scored task's group is all-zero (no update) with odds 0.53^8 at the random start. */
const GROUP = 8;
const PROBE = [{ promptIds: [10, 20, 30], completionIds: [40, 50, 60, 70] }];

test('dr_grpo, gspo and dapo each train through gateway + runner; dapo refills groups without spread', { timeout: 300_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-variants-test-'));
  const store = new SqliteStore(join(dir, 'store.sqlite'));
  const policy = await createPolicy({
    size: { dModel: 32, nLayers: 1, nHeads: 2 },
    contextLength: 32,
    seed: 7,
    backend: process.env.AGL_BACKEND ?? 'auto',
  });
  // Six tasks whose every rollout earns 0.5 (no spread, ever) and four scored by the completion.
  const train = Array.from({ length: 10 }, (_, i) => ({ id: `p${i}`, input: i < 6 ? { prompt: `p${i}:`, reward: 0.5 } : { prompt: `p${i}:` } }));
  const val = Array.from({ length: 4 }, (_, i) => ({ id: `v${i}`, input: { prompt: `v${i}:` } }));
  // The host serves the policy under any name; each variant's trainer gets the policy with its own settings.
  const host = await startTrainingHost({
    store,
    policies: onePolicySet(policy, parseTrainConfig({})),
    token: 'test-token-abcdef0123456789',
    dataDir: dir,
    workers: 2,
    agent: AGENT,
  });
  try {
    for (const variant of ['dr_grpo', 'gspo', 'dapo'] as const) {
      const seed = 4;
      const config = parseTrainConfig({
        model: { temperature: 1, maxTokens: 6, valTemperature: 1 },
        training: { batchSize: 2, groupSize: GROUP, maxSteps: 2, valEvery: 0, seed, learningRate: 2e-2, grpo: { variant, dynamicSamplingRounds: 3 } },
        runtime: { workers: 2, rolloutTimeoutSeconds: 60 },
      });
      const [before] = await policy.scoreLogprobs(PROBE);
      const run = await store.createTrainingRun({ agent: AGENT, config: {}, totalSteps: 2 });
      const trainer = new Trainer(
        { store, policies: onePolicySet(policy, config), endpoint: host.endpoint, agent: AGENT, config, train, val, checkpoint: async () => {} },
        newTrainerState(run),
      );
      const state = await trainer.run();
      assert.equal(state.step, 2, variant);
      const [after] = await policy.scoreLogprobs(PROBE);
      assert.ok(
        after.some((x, i) => Math.abs(x - before[i]) > 1e-6),
        `${variant}: the update moved the weights`,
      );
      const metrics = await store.queryMetrics(run.id);
      const loss = metrics.filter((m) => m.name === METRICS.loss);
      assert.equal(loss.length, 2);
      assert.ok(
        loss.every((m) => Number.isFinite(m.value)),
        `${variant}: finite loss`,
      );

      t.diagnostic(`${variant}: clip ratio by step ${metrics.filter((m) => m.name === METRICS.clipRatio).map((m) => m.value.toFixed(3))}`);
      const rounds = metrics.filter((m) => m.name === METRICS.samplingRounds);
      if (variant !== 'dapo') {
        assert.equal(rounds.length, 0, `${variant} samples no extra rounds`);
        continue;
      }
      // With seed 4, the first step schedules at least one fixed-reward task: its group has no spread, so a refill must run.
      const scheduled = tasksForStep(train, 2, seed, 0);
      const fixed = scheduled.filter((x) => (x.input as { reward?: number }).reward !== undefined);
      assert.ok(fixed.length > 0, `precondition: step 1 schedules a fixed-reward task (${scheduled.map((x) => x.id)})`);
      const step1 = rounds.find((m) => m.step === 1)!;
      assert.ok(step1.value >= 1 && step1.value <= 3, `step 1 ran ${step1.value} extra rounds (bounded by 3)`);
      const kept = metrics.find((m) => m.name === METRICS.groupsKept && m.step === 1)!.value;
      assert.ok(kept >= 1 && kept <= 2);
      const transitions = await store.queryTransitions({ runId: run.id, step: 1 });
      const groups = new Set(transitions.map((x) => x.groupId));
      assert.ok(
        [...groups].some((g) => !scheduled.some((s) => s.id === g)),
        'transitions of fresh tasks are stored',
      );
      for (const g of fixed) {
        const own = transitions.filter((x) => x.groupId === g.id);
        assert.equal(own.length, GROUP, `the fixed task ${g.id} was rolled out`);
        assert.ok(
          own.every((x) => x.advantage === 0 && x.credit === 0.5),
          `the dropped group ${g.id} trains nothing`,
        );
      }
      const trained = [...groups].filter((g) => transitions.some((x) => x.groupId === g && x.advantage !== 0));
      assert.equal(trained.length, kept, 'the kept groups are the ones with non-zero advantages');
      t.diagnostic(`dapo step 1: ${step1.value} extra round(s), ${kept} group(s) kept of ${groups.size} rolled out`);
    }
  } finally {
    await host.close();
    await store.close();
    policy.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});
