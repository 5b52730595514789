/**
 * LoRA for a run's one policy (`engine.lora` without `policies:`, torch engine): `agl train` trains one adapter on the
 * run's model, which stays frozen and is the KL reference; the checkpoint holds the adapter (no full copy of the
 * weights) with the set's record; a stopped run's `--resume` continues that adapter (its update count and moments);
 * `agl serve --model <checkpoint> --engine torch` serves every call with base + adapter, exactly as the adapter scores.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readSafetensors } from '../../daemon/model/safetensors.js';
import { startTorchEngine } from '../../daemon/model/torch-engine.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { METRICS } from '../../protocol/metrics.js';
import { AGL, SPAN } from '../../protocol/spans.js';
import { attemptBaseUrl } from '../../protocol/ids.js';
import { AglClient } from '../../client/client.js';
import { serveCheckpoint } from '../../samples/harness/serve-checkpoint.js';
import { runAgl, saveTinyPolicy, startAgl, writeToyTasks } from '../algorithm/cli-helpers.js';
import { torchPython } from '../helpers/torch.js';

const AGENT = 'test/algorithm/fixtures/toy-agent.ts#toyAgent';
const LORA = { rank: 4, alpha: 8, dropout: 0, targetModules: ['c_attn'] };

const stateOf = (ckpt: string) => JSON.parse(readFileSync(join(ckpt, 'state.json'), 'utf8')) as { trainer: { step: number }; policyDir: string };
const adapterStep = (folder: string) => Number(readSafetensors(join(folder, 'optimizer.safetensors')).metadata.step);

/** Every file under `dir`, relative. */
function filesUnder(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`],
  );
}

describe('agl train --engine torch with engine.lora and no policies: one adapter on a frozen base', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'agl-lora-one-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('trains and checkpoints one adapter, --resume continues it, agl serve serves base + adapter', { timeout: 900_000 }, async () => {
    const model = await saveTinyPolicy(dir, 5);
    const tasks = writeToyTasks(join(dir, 'tasks.jsonl'), 8);
    const cfg = join(dir, 'lora.yaml');
    writeFileSync(
      cfg,
      'model:\n  maxTokens: 6\n  temperature: 1\ntraining:\n  batchSize: 2\n  groupSize: 4\n  maxSteps: 4\n  valEvery: 0\n  learningRate: 0.02\n  seed: 5\n' +
        '  grpo:\n    beta: 0.04\nruntime:\n  workers: 2\nengine:\n  kind: torch\n  lora:\n    rank: 4\n    alpha: 8\n    targetModules: [c_attn]\n',
    );
    const data = join(dir, 'data'),
      ckpt = join(dir, 'ckpt');
    const args = ['train', AGENT, '--train', tasks, '--val', tasks, '--model', model, '--python', torchPython(), '--quiet'];

    // Stopped (SIGTERM, as Ctrl-C) once a checkpoint is written: the last checkpoint is kept.
    const first = startAgl([...args, '--config', cfg, '--checkpoint-dir', ckpt], data);
    const stepOf = () => (existsSync(join(ckpt, 'state.json')) ? stateOf(ckpt).trainer.step : 0);
    while (stepOf() < 1) {
      const code = await Promise.race([first.exited, new Promise((r) => setTimeout(() => r('waiting'), 200))]);
      assert.equal(code, 'waiting', `agl train ended before it could be stopped:\n${first.output()}`);
    }
    first.child.kill('SIGTERM');
    await first.exited;
    assert.match(first.output(), /LoRA adapters on .*tiny, which stays frozen: policy \(\d+ parameters, fresh\)/);
    const stoppedAt = stepOf();
    assert.ok(stoppedAt >= 1 && stoppedAt < 4, `stopped mid-run (step ${stoppedAt})`);

    // The checkpoint: the set's record and one adapter folder, no full weights anywhere.
    const folder = join(ckpt, stateOf(ckpt).policyDir);
    const record = JSON.parse(readFileSync(join(folder, 'agl-policies.json'), 'utf8'));
    assert.deepEqual(record, {
      default: resolve(model),
      seed: 5,
      unassignedCalls: 'refuse',
      lora: LORA,
      policies: { policy: { dir: 'policy', roles: null, updates: stoppedAt } },
    });
    assert.deepEqual(filesUnder(folder).sort(), [
      'agl-policies.json',
      'policy/adapter_config.json',
      'policy/adapter_model.safetensors',
      'policy/agl-policy.json',
      'policy/optimizer.safetensors',
    ]);
    const savedUpdates = adapterStep(join(folder, 'policy'));
    assert.ok(savedUpdates >= 1, `the adapter was updated before the stop (${savedUpdates} updates)`);

    // --resume continues the adapter from its saved update count and moments, to the end of the plan.
    const resumed = await runAgl([...args, '--resume', ckpt], data);
    assert.equal(resumed.code, 0, resumed.out);
    assert.match(resumed.out, new RegExp(`resumed at step ${stoppedAt}`));
    assert.match(resumed.out, new RegExp(`policy \\(\\d+ parameters, continuing from update ${savedUpdates}\\)`));
    assert.equal(stepOf(), 4);
    const final = join(ckpt, 'policy-4', 'policy');
    assert.ok(adapterStep(final) >= savedUpdates, `the resumed adapter counts on from ${savedUpdates}: ${adapterStep(final)}`);

    // The KL term against the frozen base: zero while the adapter is fresh (B = 0), positive once it moved.
    const store = new SqliteStore(join(data, 'store.sqlite'));
    try {
      const [run] = await store.listTrainingRuns();
      const kl = (await store.queryMetrics(run!.id)).filter((m) => m.name === METRICS.kl).map((m) => m.value);
      assert.ok(kl.length >= 4 && kl.every((x) => Number.isFinite(x) && x >= 0), `KL per step: ${kl}`);
      assert.ok(
        kl.some((x) => x > 0),
        `the adapter moved away from its reference, the base: ${kl}`,
      );
    } finally {
      await store.close();
    }

    // agl serve --model <checkpoint> --engine torch: every call (no role named) served by base + the adapter.
    const served = await serveCheckpoint(ckpt, { temperature: 0, maxTokens: 4 }, { engine: 'torch', python: torchPython() });
    let span;
    try {
      const client = new AglClient({ url: served.llm.baseUrl.replace(/\/v1$/, ''), token: served.llm.apiKey });
      const claim = await client.startRollout({ input: {} }, 'test');
      const res = await fetch(`${attemptBaseUrl(served.llm.baseUrl, claim.rollout.id, claim.attempt.id)}/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'checkpoint', prompt: 'p1:', max_tokens: 4, temperature: 0 }),
      });
      assert.equal(res.status, 200, await res.text());
      span = (await client.querySpans({ rolloutId: claim.rollout.id })).find((s) => s.name === SPAN.llmCall)!;
      assert.equal(span.attributes[AGL.policyName], undefined, 'one policy: no per-role policy recorded');
    } finally {
      await served.stop();
    }
    const pair = { promptIds: span.attributes[AGL.promptTokenIds] as number[], completionIds: span.attributes[AGL.completionTokenIds] as number[] };
    const servedLogprobs = span.attributes[AGL.completionLogprobs] as number[];
    const engine = await startTorchEngine(model, { python: torchPython() });
    try {
      const [base] = await engine.scoreLogprobs([pair]);
      const adapter = await engine.addAdapter('policy', { init: final, lora: LORA });
      const [own] = await adapter.scoreLogprobs([pair]);
      own!.forEach((x, i) => assert.ok(Math.abs(x - servedLogprobs[i]!) < 1e-4, `token ${i}: served ${servedLogprobs[i]} vs the adapter's ${x}`));
      assert.ok(
        base!.some((x, i) => Math.abs(x - own![i]!) > 1e-4),
        'the adapter changes the base: the served log-probs are not the base model alone',
      );
    } finally {
      await engine.close();
    }
  });
});
