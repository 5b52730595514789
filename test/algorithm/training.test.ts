/**
 * End to end: a short seeded GRPO run on the toy task through the real pieces (SQLite store, HTTP
 * gateway serving the policy being trained, runner worker processes running the agent with the openai
 * client, adapter, credit, GRPO update). The held-out reward must rise by a clear margin, and every
 * step must leave its metrics, transitions and run progress in the store.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import { startTrainingHost } from '../../daemon/algorithm/training-host.js';
import { Trainer } from '../../daemon/algorithm/trainer.js';
import { newTrainerState } from '../../daemon/algorithm/trainer-state.js';
import { onePolicySet } from '../../daemon/algorithm/open-policy-set.js';
import { createPolicy } from '../../daemon/model/policy.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';

const AGENT = 'test/algorithm/fixtures/toy-agent.ts#toyAgent';

test('GRPO through gateway + runner raises the toy reward clearly', { timeout: 600_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-train-test-'));
  const store = new SqliteStore(join(dir, 'store.sqlite'));
  const policy = await createPolicy({
    size: { dModel: 32, nLayers: 1, nHeads: 2 },
    contextLength: 32,
    seed: 7,
    backend: process.env.AGL_BACKEND ?? 'auto',
  });
  const config = parseTrainConfig({
    model: { temperature: 1, maxTokens: 6, valTemperature: 1 },
    training: { batchSize: 4, groupSize: 8, maxSteps: 16, valEvery: 0, seed: 3, learningRate: 2e-2, grpo: { scaleRewards: 'group' } },
    runtime: { workers: 2, rolloutTimeoutSeconds: 60 },
  });
  const tasks = Array.from({ length: 8 }, (_, i) => ({ id: `p${i}`, input: { prompt: `p${i}:` } }));
  // 32 held-out prompts: one sample each at temperature 1, so the mean is steady enough to compare.
  const val = Array.from({ length: 32 }, (_, i) => ({ id: `v${i}`, input: { prompt: `v${i}:` } }));
  const policies = onePolicySet(policy, config);
  const host = await startTrainingHost({ store, policies, token: 'test-token-abcdef0123456789', dataDir: dir, workers: 2, agent: AGENT });
  try {
    const run = await store.createTrainingRun({ agent: AGENT, config: {}, totalSteps: 16 });
    const trainer = new Trainer(
      {
        store,
        policies,
        endpoint: host.endpoint,
        agent: AGENT,
        config,
        train: tasks,
        val,
        checkpoint: async () => {},
      },
      newTrainerState(run),
    );
    const state = await trainer.run();
    const before = state.val[0].reward,
      after = state.val.at(-1)!.reward;
    t.diagnostic(`toy held-out reward ${before.toFixed(3)} -> ${after.toFixed(3)}`);
    assert.equal(state.step, 16);
    assert.ok(after > before + 0.3, `held-out toy reward should rise clearly: ${before.toFixed(3)} -> ${after.toFixed(3)}`);

    const metrics = await store.queryMetrics(run.id);
    const names = new Set(metrics.map((m) => m.name));
    for (const n of [
      'reward/mean',
      'reward/std',
      'grpo/frac_reward_zero_std',
      'grpo/kl',
      'grpo/clip_ratio',
      'policy/entropy',
      'response/length_mean',
      'perf/tokens_per_s',
      'perf/step_s',
      'val/reward',
    ]) {
      assert.ok(names.has(n), `metric ${n} recorded`);
    }
    assert.equal(metrics.filter((m) => m.name === 'reward/mean').length, 16);
    const transitions = await store.queryTransitions({ runId: run.id, step: 1 });
    assert.equal(transitions.length, 4 * 8, 'one transition per LLM call of the step');
    // Advantages are centred per group (task).
    for (const g of new Set(transitions.map((t) => t.groupId))) {
      const adv = transitions.filter((t) => t.groupId === g).map((t) => t.advantage);
      assert.ok(Math.abs(adv.reduce((a, x) => a + x, 0)) < 1e-6);
    }
    assert.ok(transitions.every((t) => t.completionTokens > 0 && t.promptTokens > 0));
  } finally {
    await host.close();
    await store.close();
    policy.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});
