/**
 * `agl train` with the other kinds of policy a user can pass to --model: a Hugging Face model folder
 * (a tiny random Qwen2 with the real Qwen3 tokenizer.json and chat template) and the built-in 5M GPT.
 * Two GRPO steps each through the real CLI, gateway and runner workers; the checkpoint it writes must
 * hold weights that differ from the starting ones (the update reached the model) and load again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPolicy } from '../../daemon/algorithm/open-policy.js';
import { readSafetensors } from '../../daemon/model/safetensors.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { writeTinyQwen2 } from '../model/tiny.js';
import { runAgl, writeToyTasks } from './cli-helpers.js';

const AGENT = 'test/algorithm/fixtures/toy-agent.ts#toyAgent';

/** Largest absolute difference between two checkpoints' tensors of the same name. */
function maxWeightChange(a: string, b: string): number {
  const x = readSafetensors(a).tensors,
    y = readSafetensors(b).tensors;
  let max = 0;
  for (const [name, t] of x) {
    const u = y.get(name) ?? y.get(name.replace(/^model\./, ''));
    assert.ok(u, `tensor ${name} is in the trained checkpoint`);
    const p = t.data as Float32Array,
      q = u.data as Float32Array;
    for (let i = 0; i < p.length; i++) max = Math.max(max, Math.abs(p[i] - q[i]));
  }
  return max;
}

for (const kind of ['hf-qwen2', 'builtin:5m'] as const) {
  test(`agl train updates a ${kind} policy through the gateway and runner`, { timeout: 600_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agl-train-models-'));
    try {
      let model: string, initial: string;
      if (kind === 'hf-qwen2') {
        model = writeTinyQwen2();
        initial = join(model, 'model.safetensors');
      } else {
        // What `--model builtin:5m` starts from: the seeded initialisation (training.seed below).
        model = 'builtin:5m';
        const init = await openPolicy(model, { seed: 5 });
        await init.save(join(dir, 'init'));
        init.dispose();
        initial = join(dir, 'init', 'model.safetensors');
      }
      const tasks = writeToyTasks(join(dir, 'tasks.jsonl'), 4);
      // beta > 0: the KL term to a frozen copy of the starting policy runs end to end too.
      writeFileSync(
        join(dir, 'train.yaml'),
        'model:\n  maxTokens: 4\n  temperature: 1\ntraining:\n  batchSize: 2\n  groupSize: 4\n  maxSteps: 2\n  valEvery: 0\n  learningRate: 0.01\n  seed: 5\n  grpo:\n    beta: 0.05\nruntime:\n  workers: 2\n',
      );
      const ckpt = join(dir, 'ckpt');
      const data = join(dir, 'data');
      const { code, out } = await runAgl(
        ['train', AGENT, '--train', tasks, '--val', tasks, '--model', model, '--config', join(dir, 'train.yaml'), '--checkpoint-dir', ckpt, '--quiet'],
        data,
      );
      assert.equal(code, 0, out);
      assert.equal(JSON.parse(readFileSync(join(ckpt, 'state.json'), 'utf8')).trainer.step, 2, 'both steps trained');
      const policyDir = join(ckpt, 'policy-2');
      const weights = join(policyDir, 'model.safetensors');
      assert.ok(existsSync(weights) && existsSync(join(policyDir, 'config.json')), `checkpoint in ${policyDir}`);
      if (kind === 'hf-qwen2') assert.ok(existsSync(join(policyDir, 'tokenizer.json')), 'the HF tokenizer travels with the checkpoint');
      assert.ok(maxWeightChange(initial, weights) > 1e-4, 'GRPO changed the weights');

      const store = new SqliteStore(join(data, 'store.sqlite'));
      try {
        const [run] = await store.listTrainingRuns();
        const metrics = await store.queryMetrics(run.id);
        const byStep = (name: string) =>
          metrics
            .filter((m) => m.name === name)
            .sort((a, b) => a.step - b.step)
            .map((m) => m.value);
        const kl = byStep('grpo/kl'),
          gradNorm = byStep('grpo/grad_norm');
        assert.equal(kl.length, 2, 'kl recorded every step');
        assert.ok(
          kl.every((v) => Number.isFinite(v) && v >= 0),
          `kl by step ${kl}`,
        );
        // The reference is the starting policy itself: before any update the two agree.
        assert.ok(kl[0] < 1e-4, `at step 0 the policy is the reference (kl ${kl[0]})`);
        // A step that updates after a step that updated measures a policy that has moved away. (A step
        // whose groups all lack reward spread updates nothing and records kl 0: nothing was measured.)
        if (gradNorm[0] > 0 && gradNorm[1] > 0) assert.ok(kl[1] > 0, `after one update the policy has moved away from the reference (kl ${kl[1]})`);
      } finally {
        await store.close();
      }
      const again = await openPolicy(policyDir);
      again.dispose();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
