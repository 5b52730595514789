/**
 * bfloat16 that learns, on the CPU: the engine keeps float32 master weights and float32 Adam moments under bfloat16
 * parameters (engines/torch/agl_torch/optim.py). The shipped calc warm-up (float32 weights and moments) opens, trains
 * and resumes in bfloat16; an update at lr 1e-6, most of whose steps are smaller than half a bfloat16 step, still
 * moves every trainable tensor, norms included; and 5 bfloat16 updates land near the float32 run's.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SequencePair, TrainLoss } from '../../daemon/model/policy-contract.js';
import { readSafetensors, readSafetensorsMetadata } from '../../daemon/model/safetensors.js';
import { startTorchEngine, type TorchPolicyModel } from '../../daemon/model/torch-engine.js';
import { torchPython } from '../helpers/torch.js';
import { tokenMeanGrpo } from './compare.js';

const WARMUP = join('samples', 'calc', 'warmup');
const QUESTIONS = [
  'Ann has 23 pens, gets 15 more. How many?',
  'What is 42*17?',
  'Bo had 9 apples and ate 4.',
  'What is 120/8?',
  'Cy reads 12 pages a day for 5 days.',
];

const start = (folder: string, dtype: string) => startTorchEngine(folder, { python: torchPython(), dtype, optimizer: { microBatchSize: 4 } });

/** A batch sampled once (float32), with fixed advantages: the same update request for every engine. */
async function sampledBatch(e: TorchPolicyModel, seed: number): Promise<{ pairs: SequencePair[]; loss: TrainLoss }> {
  const t = e.tokenizer;
  const prompts = QUESTIONS.map((q) => t.encode(t.applyChatTemplate([{ role: 'user', content: q }])));
  const gens = await e.generate([...prompts, ...prompts], { maxTokens: 16, temperature: 1, seed });
  const pairs = gens.map((g, i) => ({ promptIds: prompts[i % prompts.length]!, completionIds: g.tokenIds }));
  const samples = gens.map((g, i) => ({ advantage: [1, -1, 0.5, -0.5, 0.8][i % 5]! * (i < prompts.length ? 1 : -0.6), oldLogprobs: g.logprobs }));
  return { pairs, loss: tokenMeanGrpo(samples, { ratioBase: 'update', tisCap: 3 }) };
}

/** A safetensors file's header: each tensor's dtype as stored. */
function headerOf(file: string): Record<string, { dtype: string }> {
  const buf = readFileSync(file);
  const header = JSON.parse(buf.subarray(8, 8 + Number(buf.readBigUInt64LE(0))).toString('utf8')) as Record<string, { dtype: string }>;
  delete header.__metadata__;
  return header;
}

function tensors(dir: string): Map<string, Float32Array> {
  return new Map([...readSafetensors(join(dir, 'model.safetensors')).tensors].map(([k, v]) => [k, v.data as Float32Array]));
}

describe('torch engine in bfloat16: float32 masters and moments', () => {
  let scratch = '';
  const batches: { pairs: SequencePair[]; loss: TrainLoss }[] = [];
  // Two engines on the warm-up that the last two tests take through the same updates: a float32 one (which samples
  // the batches first) and a bfloat16 one.
  const run: Record<'float32' | 'bfloat16', TorchPolicyModel | null> = { float32: null, bfloat16: null };
  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'agl-bf16-'));
    run.float32 = await start(WARMUP, 'float32');
    for (let s = 0; s < 5; s++) batches.push(await sampledBatch(run.float32, 100 + s));
    run.bfloat16 = await start(WARMUP, 'bfloat16');
  });
  after(async () => {
    await run.float32?.close();
    await run.bfloat16?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('the calc warm-up (float32 weights and moments) trains and resumes in bfloat16', async () => {
    const e = await start(WARMUP, 'bfloat16');
    try {
      assert.equal(e.hello!.model.dtype, 'bfloat16');
      assert.equal(e.hello!.model.masterWeights, true);
      const r = await e.trainStep(batches[0]!.pairs, batches[0]!.loss, { lr: 1e-3 });
      assert.ok(Number.isFinite(r.loss) && r.gradNorm > 0, `loss ${r.loss}, grad norm ${r.gradNorm}`);
      assert.equal(r.stats.clipped, 0, 'the ratio is against the update itself');
      assert.ok(r.stats.gapSum > 0, 'bfloat16 scores the float32 samples a little differently');
      await e.save(join(scratch, 'once'));
    } finally {
      await e.close();
    }
    const dtypes = new Set(Object.values(headerOf(join(scratch, 'once', 'model.safetensors'))).map((t) => t.dtype));
    assert.deepEqual([...dtypes], ['F32'], 'a bfloat16 run saves its float32 masters');
    const resumed = await start(join(scratch, 'once'), 'bfloat16');
    try {
      assert.equal(resumed.hello!.model.step, 1201);
      const r = await resumed.trainStep(batches[1]!.pairs, batches[1]!.loss, { lr: 1e-3 });
      assert.ok(Number.isFinite(r.loss));
      await resumed.save(join(scratch, 'twice'));
      assert.equal(readSafetensorsMetadata(join(scratch, 'twice', 'optimizer.safetensors')).step, '1202');
    } finally {
      await resumed.close();
    }
  });

  it('an update at lr 1e-6 moves every trainable tensor, norms and biases included', async () => {
    // Both engines take the update (the float32 one too, so that the next test compares the same updates).
    for (const e of [run.float32!, run.bfloat16!]) await e.trainStep(batches[0]!.pairs, batches[0]!.loss, { lr: 1e-6 });
    await run.bfloat16!.save(join(scratch, 'tiny-lr'));
    const [before, after] = [tensors(WARMUP), tensors(join(scratch, 'tiny-lr'))];
    const still = [...before].filter(([k, v]) => after.get(k)!.every((x, i) => x === v[i])).map(([k]) => k);
    assert.deepEqual(still, [], `tensors an lr 1e-6 update left unchanged: ${still.join(', ')}`);
    assert.ok(
      [...before.keys()].some((k) => /ln_/.test(k)),
      'the warm-up has norm weights',
    );
  });

  it('5 bfloat16 updates land within 10% (mean) of the float32 run', async () => {
    const runs: Record<string, string> = {};
    for (const dtype of ['float32', 'bfloat16'] as const) {
      const e = run[dtype]!;
      for (const b of batches) await e.trainStep(b.pairs, b.loss, { lr: 1e-4 });
      await e.save((runs[dtype] = join(scratch, dtype)));
    }
    const [w0, f32, bf16] = [tensors(WARMUP), tensors(runs.float32!), tensors(runs.bfloat16!)];
    let moved = 0,
      off = 0,
      worst = 0,
      largest = 0;
    for (const [k, base] of w0) {
      const a = f32.get(k)!,
        b = bf16.get(k)!;
      for (let i = 0; i < base.length; i++) {
        const d32 = a[i]! - base[i]!,
          d16 = b[i]! - base[i]!;
        moved += Math.abs(d32);
        off += Math.abs(d16 - d32);
        worst = Math.max(worst, Math.abs(d16 - d32));
        largest = Math.max(largest, Math.abs(d32));
      }
    }
    console.log(
      `float32 moved the weights by ${moved.toExponential(3)} in all (largest ${largest.toExponential(2)}); bfloat16 differs by ${off.toExponential(3)} (${((100 * off) / moved).toFixed(1)}%), at most ${worst.toExponential(2)}`,
    );
    assert.ok(off <= 0.1 * moved, `bfloat16's updates differ from float32's by ${((100 * off) / moved).toFixed(1)}% of their size`);
    assert.ok(worst <= 5 * 1e-4 * 1.01, `no weight differs by more than 5 updates of lr 1e-4: ${worst}`);
  });
});
