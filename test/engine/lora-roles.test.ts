/**
 * One LoRA adapter per role on a shared, frozen base (torch engine + peft; `engine.lora` with `policies:`):
 *   - the engine: two adapters trained on different batches diverge from each other, an update of one never touches
 *     the other (weights and Adam moments, byte for byte), the base scores the same before and after, a saved
 *     adapter reloads with the same log-probs and its update count, and the requests that cannot be right are refused;
 *   - `agl train --engine torch` with engine.lora: each role's calls are served by its adapter (recorded on the call),
 *     the checkpoint holds one adapter folder per policy (no full weights), and --resume continues both adapters.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SequencePair, TrainLoss } from '../../daemon/model/policy-contract.js';
import { readSafetensors } from '../../daemon/model/safetensors.js';
import { startTorchEngine, type TorchAdapterModel, type TorchPolicyModel } from '../../daemon/model/torch-engine.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';
import { AGL, SPAN } from '../../protocol/spans.js';
import { runAgl, saveTinyPolicy, writeToyTasks } from '../algorithm/cli-helpers.js';
import { torchPython } from '../helpers/torch.js';
import { serveCheckpoint } from '../../samples/harness/serve-checkpoint.js';
import { AglClient } from '../../client/client.js';
import { attemptBaseUrl } from '../../protocol/ids.js';
import { tokenMeanGrpo } from './compare.js';

const WARMUP = join('samples', 'calc', 'warmup');
const LORA = { rank: 4, alpha: 8, dropout: 0, targetModules: null };

function grpo(n: number, sign: number): TrainLoss {
  return {
    ...tokenMeanGrpo([], { epsilonHigh: 0.2 }),
    samples: Array.from({ length: n }, (_, i) => ({ advantage: sign * (i % 2 ? 1 : -1), oldLogprobs: [] })),
  };
}

/** Pairs sampled from the given adapter (so old log-probs are the sampler's). */
async function batch(m: TorchAdapterModel | TorchPolicyModel, questions: string[], seed: number): Promise<{ pairs: SequencePair[]; old: number[][] }> {
  const t = m.tokenizer;
  const prompts = questions.map((q) => t.encode(t.applyChatTemplate([{ role: 'user', content: q }])));
  const gens = await m.generate(prompts, { maxTokens: 12, temperature: 1, seed });
  return { pairs: prompts.map((p, i) => ({ promptIds: p, completionIds: gens[i].tokenIds })), old: gens.map((g) => g.logprobs) };
}

function withOld(loss: TrainLoss, old: number[][]): TrainLoss {
  return loss.kind === 'grpo' ? { ...loss, samples: loss.samples.map((s, i) => ({ ...s, oldLogprobs: old[i] })) } : loss;
}

function tensors(file: string): Map<string, Float32Array> {
  return new Map([...readSafetensors(file).tensors].map(([k, t]) => [k, t.data as Float32Array]));
}
function maxDiff(a: Map<string, Float32Array>, b: Map<string, Float32Array>): number {
  let w = 0;
  for (const [k, x] of a) {
    const y = b.get(k);
    assert.ok(y, `${k} in both`);
    x.forEach((v, i) => {
      w = Math.max(w, Math.abs(v - y[i]));
    });
  }
  return w;
}

/** Each update's learning rate, sent with it (as the trainer does). */
const LR = { lr: 5e-3 };

describe('torch engine: one LoRA adapter per role', () => {
  let dir: string;
  let base: TorchPolicyModel;
  let writer: TorchAdapterModel;
  let rewriter: TorchAdapterModel;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agl-lora-'));
    base = await startTorchEngine(WARMUP, { python: torchPython(), optimizer: { microBatchSize: 4 } });
    writer = await base.addAdapter('writer', { lora: LORA });
    rewriter = await base.addAdapter('rewriter', { lora: LORA });
  });
  after(async () => {
    await base?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('adds adapters of the given shape on the model (GPT-2: c_attn), and says what it trains', () => {
    assert.deepEqual(writer.info.targetModules, ['c_attn']);
    assert.equal(writer.info.rank, 4);
    assert.equal(writer.info.step, 0);
    // c_attn is 128 -> 384 in each of the warm-up's 4 blocks: A (4 x 128) + B (384 x 4) per block.
    assert.equal(writer.parameterCount, 4 * (4 * 128 + 384 * 4));
    assert.match(writer.backend, /^torch cpu, LoRA r4 on warmup$/);
    assert.equal(writer.name, 'writer');
  });

  it('two adapters trained on different batches diverge; an update of one never touches the other; the base stays frozen', async () => {
    const probe = await batch(base, ['What is 12+30?', 'Ann has 5 pens and buys 7.'], 1);
    const baseBefore = await base.scoreLogprobs(probe.pairs);
    // Fresh adapters (B = 0) give the base's outputs.
    const fresh = await writer.scoreLogprobs(probe.pairs);
    fresh.forEach((row, i) => row.forEach((x, j) => assert.ok(Math.abs(x - baseBefore[i][j]) < 1e-5)));

    await rewriter.save(join(dir, 'r0'));
    for (let k = 0; k < 3; k++) {
      const b = await batch(writer, ['What is 42*17?', 'Bo had 9 apples and ate 4.', 'What is 3+4?', 'Sum 10 and 11.'], 10 + k);
      const r = await writer.trainStep(b.pairs, withOld(grpo(4, 1), b.old), LR);
      assert.ok(Number.isFinite(r.loss) && r.gradNorm > 0, 'the writer adapter got a gradient');
    }
    await rewriter.save(join(dir, 'r1'));
    for (const f of ['adapter_model.safetensors', 'optimizer.safetensors']) {
      const [a, b] = [readSafetensors(join(dir, 'r0', f)), readSafetensors(join(dir, 'r1', f))];
      assert.deepEqual(b.metadata, a.metadata);
      assert.equal(maxDiff(tensors(join(dir, 'r1', f)), tensors(join(dir, 'r0', f))), 0, `the rewriter's ${f}: the same values after the writer's updates`);
      assert.equal(b.tensors.size, a.tensors.size);
    }

    for (let k = 0; k < 3; k++) {
      const b = await batch(rewriter, ['Name a prime.', 'What is 100-1?', 'Half of 64?', 'What is 8*8?'], 20 + k);
      await rewriter.trainStep(b.pairs, withOld(grpo(4, -1), b.old), LR);
    }
    await writer.save(join(dir, 'w'));
    await rewriter.save(join(dir, 'r2'));
    const w = tensors(join(dir, 'w', 'adapter_model.safetensors'));
    const r = tensors(join(dir, 'r2', 'adapter_model.safetensors'));
    assert.ok(maxDiff(w, r) > 1e-4, 'the two adapters diverged from one start');
    assert.ok(maxDiff(r, tensors(join(dir, 'r0', 'adapter_model.safetensors'))) > 1e-4, 'the rewriter moved with its own updates');
    const meta = readSafetensors(join(dir, 'w', 'optimizer.safetensors')).metadata;
    assert.equal(meta.step, '3', "the writer's own update count");

    const baseAfter = await base.scoreLogprobs(probe.pairs);
    assert.deepEqual(baseAfter, baseBefore, 'the base scores exactly the same: it never trained');
    const [wl, rl] = [await writer.scoreLogprobs(probe.pairs), await rewriter.scoreLogprobs(probe.pairs)];
    assert.notDeepEqual(wl, baseBefore, 'the writer serves its own weights');
    assert.notDeepEqual(wl, rl);
    const cfg = JSON.parse(readFileSync(join(dir, 'w', 'adapter_config.json'), 'utf8')) as { r: number; peft_type: string; base_model_name_or_path: string };
    assert.equal(cfg.peft_type, 'LORA');
    assert.equal(cfg.r, 4);
    assert.match(cfg.base_model_name_or_path, /samples[\\/]calc[\\/]warmup$/);
  });

  it('a saved adapter reloads on a fresh engine with the same log-probs and update count', async () => {
    const probe = await batch(base, ['What is 6*7?'], 3);
    const want = await writer.scoreLogprobs(probe.pairs);
    const other = await startTorchEngine(WARMUP, { python: torchPython() });
    try {
      const again = await other.addAdapter('writer', { init: join(dir, 'w'), lora: LORA });
      assert.equal(again.info.step, 3);
      const got = await again.scoreLogprobs(probe.pairs);
      got[0].forEach((x, i) => assert.ok(Math.abs(x - want[0][i]) < 1e-5, `token ${i}: ${x} vs ${want[0][i]}`));
    } finally {
      await other.close();
    }
  });

  it('refuses what cannot be right, and keeps serving', async () => {
    await assert.rejects(base.addAdapter('writer', { lora: LORA }), /adapter "writer" exists already/);
    await assert.rejects(base.addAdapter('bad name!', { lora: LORA }), /name must be 1-64 letters/);
    await assert.rejects(base.addAdapter('x', { init: WARMUP, lora: LORA }), /is not an adapter folder \(no adapter_config\.json\)/);
    await assert.rejects(base.addAdapter('y', { lora: { ...LORA, targetModules: ['no_such_module'] } }), /add_adapter: .*no_such_module/);
    const b = await batch(base, ['What is 1+1?', 'What is 2+2?'], 5);
    await assert.rejects(base.trainStep(b.pairs, withOld(grpo(2, 1), b.old), LR), /the base model is frozen under LoRA adapters/);
    await assert.rejects(base.save(join(dir, 'base')), /the base model is frozen under LoRA adapters/);
    const [g] = await writer.generate([b.pairs[0].promptIds], { maxTokens: 4, temperature: 0 });
    assert.ok(g.tokenIds.length > 0, 'still serving');
  });

  it('the config: engine.lora needs the torch engine and one rank', () => {
    assert.throws(() => parseTrainConfig({ engine: { lora: {} }, policies: { writer: {} } }), /engine\.lora: needs engine\.kind: torch/);
    assert.throws(() => parseTrainConfig({ engine: { kind: 'torch', procs: 2, lora: {} }, policies: { writer: {} } }), /engine\.lora: runs on one rank/);
    const ok = parseTrainConfig({ engine: { kind: 'torch', lora: { rank: 16 } }, policies: { writer: {} } });
    assert.deepEqual(ok.engine.lora, { rank: 16, alpha: 16, dropout: 0, targetModules: null });
  });
});

describe('agl train --engine torch with engine.lora', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'agl-lora-train-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('serves each role from its adapter, checkpoints one adapter per policy, and --resume continues both', { timeout: 600_000 }, async () => {
    const model = await saveTinyPolicy(dir, 5);
    const tasks = writeToyTasks(join(dir, 'tasks.jsonl'), 4);
    const cfg = join(dir, 'lora.yaml');
    writeFileSync(
      cfg,
      'model:\n  maxTokens: 6\n  temperature: 1\ntraining:\n  batchSize: 2\n  groupSize: 4\n  maxSteps: 2\n  valEvery: 0\n  learningRate: 0.02\n  seed: 5\n' +
        'runtime:\n  workers: 2\nengine:\n  kind: torch\n  lora:\n    rank: 4\n    targetModules: [c_attn]\npolicies:\n  writer: {}\n  checker: {}\n',
    );
    const data = join(dir, 'data'),
      ckpt = join(dir, 'ckpt');
    const args = ['train', 'test/algorithm/fixtures/roles-agent.ts#rolesAgent', '--train', tasks, '--val', tasks, '--model', model, '--python', torchPython()];
    const first = await runAgl([...args, '--config', cfg, '--checkpoint-dir', ckpt, '--quiet'], data);
    assert.equal(first.code, 0, first.out);
    assert.match(first.out, /one policy per role: writer \(writer\); checker \(checker\); other roles: default \(tiny\), untrained/);
    const state = JSON.parse(readFileSync(join(ckpt, 'state.json'), 'utf8'));
    for (const name of ['writer', 'checker']) {
      const folder = join(ckpt, 'policy-2', name);
      assert.ok(existsSync(join(folder, 'adapter_config.json')) && existsSync(join(folder, 'adapter_model.safetensors')), `${name}: an adapter folder`);
      assert.ok(!existsSync(join(folder, 'model.safetensors')), `${name}: no full copy of the weights`);
      assert.equal(readSafetensors(join(folder, 'optimizer.safetensors')).metadata.step, String(state.trainer.policies[name].updates));
    }
    const w = tensors(join(ckpt, 'policy-2', 'writer', 'adapter_model.safetensors'));
    const c = tensors(join(ckpt, 'policy-2', 'checker', 'adapter_model.safetensors'));
    assert.ok(maxDiff(w, c) > 1e-5, "the two roles' adapters diverged");

    const store = new SqliteStore(join(data, 'store.sqlite'));
    try {
      const rollouts = (await store.queryRollouts({ limit: 100, mode: 'train' })).items;
      const calls = (await Promise.all(rollouts.map((r) => store.querySpans({ rolloutId: r.id, attemptId: 'latest', name: SPAN.llmCall })))).flat();
      const servedBy = (role: string) => new Set(calls.filter((s) => s.attributes[AGL.agentName] === role).map((s) => s.attributes[AGL.policyName]));
      assert.deepEqual([...servedBy('writer')], ['writer']);
      assert.deepEqual([...servedBy('checker')], ['checker']);
      assert.deepEqual([...servedBy('narrator')], ['default'], 'the role without a policy is served by the base, the default policy');
    } finally {
      await store.close();
    }

    // agl serve --model <checkpoint> --engine torch: the base once, each role from its adapter, as the run served them.
    const served = await serveCheckpoint(ckpt, { temperature: 0, maxTokens: 4 }, { engine: 'torch', python: torchPython() });
    try {
      const url = served.llm.baseUrl.replace(/\/v1$/, '');
      const client = new AglClient({ url, token: served.llm.apiKey });
      const claim = await client.startRollout({ input: {} }, 'test');
      for (const role of ['writer', 'checker', 'narrator']) {
        const res = await fetch(`${attemptBaseUrl(served.llm.baseUrl, claim.rollout.id, claim.attempt.id)}/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-agl-agent': role },
          body: JSON.stringify({ model: 'checkpoint', prompt: 'wp1:', max_tokens: 4, temperature: 0 }),
        });
        assert.equal(res.status, 200, await res.text());
      }
      const spans = (await client.querySpans({ rolloutId: claim.rollout.id })).filter((s) => s.name === SPAN.llmCall);
      assert.deepEqual(
        spans.map((s) => [s.attributes[AGL.agentName], s.attributes[AGL.policyName], s.attributes[AGL.policyVersion] ?? null]),
        [
          ['writer', 'writer', state.trainer.policies.writer.updates],
          ['checker', 'checker', state.trainer.policies.checker.updates],
          ['narrator', 'checkpoint', null],
        ],
      );
      const lp = spans.map((s) => JSON.stringify(s.attributes[AGL.completionLogprobs]));
      assert.ok(lp[0] !== lp[2] && lp[1] !== lp[2] && lp[0] !== lp[1], `each adapter changes the base's log-probs of the same prompt: ${lp.join(' | ')}`);
    } finally {
      await served.stop();
    }

    // Resume: both adapters come back from the checkpoint's adapter folders (their policy records checked).
    const resumed = await runAgl([...args, '--resume', ckpt, '--quiet'], data);
    assert.equal(resumed.code, 0, resumed.out);
    assert.match(resumed.out, /resumed at step 2/);
    assert.match(resumed.out, /one policy per role: writer \(writer\); checker \(checker\)/);
  });
});
