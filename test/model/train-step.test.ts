/**
 * Training primitives: the loss goes down, tensor count stays flat across steps, an update's own settings hold for
 * that update only, micro-batching gives the same update as one big batch, checkpoints round-trip weights and
 * optimizer state, and resuming from a checkpoint gives exactly the weights of not stopping.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import type { LossInputs } from '../../daemon/model/loss.js';
import type { SequencePair } from '../../daemon/model/policy-contract.js';
import { loadPolicy, type TfPolicyModel } from '../../daemon/model/policy.js';
import { savedOptimizerSettings } from '../../daemon/model/model-folder.js';
import { readSafetensorsMetadata, writeSafetensors } from '../../daemon/model/safetensors.js';
import { fittingChunks } from '../../daemon/model/train-step.js';
import { DEFAULT_OPTIMIZER } from '../../protocol/engine.js';
import { tempDir, tinyGpt } from './tiny.js';

const pairs: SequencePair[] = Array.from({ length: 6 }, (_, i) => ({
  promptIds: Array.from({ length: 3 + (i % 3) }, (_, j) => 65 + ((i + j) % 10)),
  completionIds: Array.from({ length: 4 + (i % 4) }, (_, j) => 97 + ((i * 3 + j) % 7)),
}));
const totalTokens = pairs.reduce((n, p) => n + p.completionIds.length, 0);
/** Each update's own learning rate (a policy has none of its own). */
const LR = { lr: 3e-4 };
const nll = ({ logprobs, mask }: LossInputs) => logprobs.mul(mask).sum().neg().div(totalTokens) as tf.Scalar;

async function weights(m: TfPolicyModel): Promise<Map<string, Float32Array>> {
  const out = new Map<string, Float32Array>();
  for (const [k, v] of m.params) out.set(k, (await v.data()) as Float32Array);
  return out;
}
function maxDiff(a: Map<string, Float32Array>, b: Map<string, Float32Array>): number {
  let d = 0;
  for (const [k, x] of a) {
    const y = b.get(k)!;
    for (let i = 0; i < x.length; i++) d = Math.max(d, Math.abs(x[i] - y[i]));
  }
  return d;
}

test('supervised steps lower the loss and leave no tensors behind', async () => {
  const model = await tinyGpt(11);
  const lr = { lr: 3e-3 };
  const first = await model.trainStepWith(pairs, nll, lr);
  const counts: number[] = [];
  let last = first;
  for (let s = 0; s < 8; s++) {
    last = await model.trainStepWith(pairs, nll, lr);
    counts.push(tf.memory().numTensors);
  }
  assert.ok(last.loss < first.loss * 0.8, `loss ${first.loss} -> ${last.loss}`);
  assert.ok(first.gradNorm > 0 && Number.isFinite(first.gradNorm));
  assert.equal(
    first.tokens,
    pairs.reduce((n, p) => n + p.promptIds.length + p.completionIds.length, 0),
  );
  assert.deepEqual(new Set(counts).size, 1, `tensor counts changed across steps: ${counts.join(',')}`);
  model.dispose();
});

test("an update's settings hold for that update only, and a policy opened without a rate has none: an update without lr is refused naming it", async () => {
  const model = await tinyGpt(12);
  const configured = { ...model.optimizerConfig };
  assert.deepEqual(configured, { ...DEFAULT_OPTIMIZER, microBatchSize: 4 });
  assert.equal(configured.lr, undefined, 'opened without a rate, it has none');
  const start = await weights(model);
  await model.trainStep(pairs, { kind: 'nll' }, { lr: 0.1 });
  const middle = await weights(model);
  // AdamW moves a weight by about its learning rate per update (|m / sqrt(v)| is about 1 or less).
  assert.ok(maxDiff(start, middle) > 0.05, `lr 0.1 moved the weights by ${maxDiff(start, middle)}`);
  assert.deepEqual(model.optimizerConfig, configured, "the update's rate did not stay");
  await assert.rejects(model.trainStep(pairs, { kind: 'nll' }), /lr: the update carries no learning rate/);
  assert.equal(maxDiff(middle, await weights(model)), 0, 'the refused update changed nothing');
  model.dispose();
});

test('a checkpoint carries no learning rate, and one an older version saved is not read back', async () => {
  const model = await tinyGpt(5);
  await model.trainStep(pairs, { kind: 'nll' }, { lr: 0.01 });
  const dir = tempDir('no-lr');
  await model.save(dir);
  model.dispose();
  const saved = JSON.parse(readSafetensorsMetadata(join(dir, 'optimizer.safetensors')).config!) as Record<string, unknown>;
  assert.equal('lr' in saved, false, `saved settings: ${JSON.stringify(saved)}`);
  assert.equal(saved.beta2, DEFAULT_OPTIMIZER.beta2);
  // A folder an older version wrote: its settings with the default's lr, which no update used.
  writeSafetensors(join(dir, 'optimizer.safetensors'), new Map(), { step: '0', config: JSON.stringify({ ...saved, lr: 3e-4 }) });
  assert.deepEqual(savedOptimizerSettings(dir), saved);
});

test('micro-batches accumulate to the same update as one batch', async () => {
  const a = await tinyGpt(4),
    b = await tinyGpt(4);
  a.optimizerConfig.microBatchSize = 2;
  b.optimizerConfig.microBatchSize = 6;
  const ra = await a.trainStepWith(pairs, nll, LR),
    rb = await b.trainStepWith(pairs, nll, LR);
  assert.ok(Math.abs(ra.loss - rb.loss) < 1e-5);
  assert.ok(Math.abs(ra.gradNorm - rb.gradNorm) < 1e-4);
  assert.ok(maxDiff(await weights(a), await weights(b)) < 1e-6);
  a.dispose();
  b.dispose();
});

test('lossFn gets [B, T] logprobs, mask, entropy and batch indices', async () => {
  const model = await tinyGpt(6);
  model.optimizerConfig.microBatchSize = 4;
  const seen: number[][] = [];
  await model.trainStepWith(
    pairs,
    (inp) => {
      const T = Math.max(...inp.indices.map((i) => pairs[i].completionIds.length));
      assert.deepEqual(inp.logprobs.shape, [inp.indices.length, T]);
      assert.deepEqual(inp.mask.shape, inp.logprobs.shape);
      assert.deepEqual(inp.entropy.shape, inp.logprobs.shape);
      seen.push(inp.indices);
      return inp.logprobs.mul(inp.mask).sum().neg().add(inp.entropy.sum().mul(0.01)) as tf.Scalar;
    },
    LR,
  );
  assert.deepEqual(seen, [
    [0, 1, 2, 3],
    [4, 5],
  ]);
  model.dispose();
});

test("a long prompt and another pair's long completion go to separate micro-batches (each pair fits, together they would not)", async () => {
  const model = await tinyGpt(6, 32);
  // Prompt 20 + completion 2 and prompt 4 + completion 20 fit 32 alone; padded together they need 20 + 20 - 1 = 39 slots.
  const mixed: SequencePair[] = [
    { promptIds: Array.from({ length: 20 }, (_, j) => 65 + (j % 10)), completionIds: [97, 98] },
    { promptIds: [65, 66, 67, 68], completionIds: Array.from({ length: 20 }, (_, j) => 97 + (j % 7)) },
    { promptIds: [70, 71], completionIds: [99] },
  ];
  assert.deepEqual(
    fittingChunks(mixed, 4, 32).map((g) => g.map((p) => mixed.indexOf(p))),
    [[0], [1, 2]],
  );
  assert.deepEqual(
    fittingChunks(mixed, 4, 64).map((g) => g.length),
    [3],
    'one micro-batch when the context holds them',
  );
  const seen: number[][] = [];
  const r = await model.trainStepWith(
    mixed,
    (inp) => {
      seen.push(inp.indices);
      return inp.logprobs.mul(inp.mask).sum().neg() as tf.Scalar;
    },
    LR,
  );
  assert.deepEqual(seen, [[0], [1, 2]]);
  assert.ok(Number.isFinite(r.loss) && r.loss > 0);
  assert.equal((await model.scoreLogprobs(mixed)).map((x) => x.length).join(','), '2,20,1');
  model.dispose();
});

test('save + load restores weights and optimizer; resuming equals not stopping', async () => {
  const straight = await tinyGpt(8);
  for (let s = 0; s < 4; s++) await straight.trainStepWith(pairs, nll, LR);

  const stopped = await tinyGpt(8);
  for (let s = 0; s < 2; s++) await stopped.trainStepWith(pairs, nll, LR);
  const dir = tempDir('ckpt');
  await stopped.save(dir);
  const before = await weights(stopped);
  stopped.dispose();

  const resumed = await loadPolicy(dir);
  assert.equal(maxDiff(before, await weights(resumed)), 0, 'weights round-trip exactly');
  assert.equal(resumed.optimizer.step, 2);
  for (let s = 0; s < 2; s++) await resumed.trainStepWith(pairs, nll, LR);
  assert.ok(maxDiff(await weights(straight), await weights(resumed)) < 1e-6, 'resumed run matches the uninterrupted one');
  const p = [1, 2, 3];
  const [g1] = await straight.generate([p], { maxTokens: 8, temperature: 0, seed: 1 });
  const [g2] = await resumed.generate([p], { maxTokens: 8, temperature: 0, seed: 1 });
  assert.deepEqual(g1.tokenIds, g2.tokenIds);
  straight.dispose();
  resumed.dispose();
});

test('bad input is rejected with a clear error', async () => {
  const model = await tinyGpt(1, 16);
  await assert.rejects(model.trainStepWith([{ promptIds: [], completionIds: [1] }], nll, LR), /promptIds is empty/);
  await assert.rejects(model.trainStepWith([{ promptIds: Array(10).fill(1), completionIds: Array(10).fill(1) }], nll, LR), /exceed the context/);
  await assert.rejects(loadPolicy(tempDir('empty')), /no config\.json/);
  model.dispose();
});

test('a loaded Qwen2 folder trains, saves with its tokenizer, and reloads to the same outputs', async () => {
  const { writeTinyQwen2 } = await import('./tiny.js');
  const model = await loadPolicy(writeTinyQwen2({ tie: true }));
  const batch: SequencePair[] = [
    { promptIds: [1, 2, 3], completionIds: [4, 5] },
    { promptIds: [9], completionIds: [8, 7, 6] },
  ];
  const loss = ({ logprobs, mask }: LossInputs) => logprobs.mul(mask).sum().neg() as tf.Scalar;
  const r1 = await model.trainStepWith(batch, loss, LR);
  const n = tf.memory().numTensors;
  const r2 = await model.trainStepWith(batch, loss, LR);
  assert.equal(tf.memory().numTensors, n);
  assert.ok(r2.loss < r1.loss, `loss ${r1.loss} -> ${r2.loss}`);
  const dir = tempDir('qwen-ckpt');
  await model.save(dir);
  const again = await loadPolicy(dir);
  assert.equal(again.tokenizer.encode('héllo 世界').length, model.tokenizer.encode('héllo 世界').length);
  const [a] = await model.scoreLogprobs([batch[1]]),
    [b] = await again.scoreLogprobs([batch[1]]);
  a.forEach((x, i) => assert.ok(Math.abs(x - b[i]) < 1e-5));
  model.dispose();
  again.dispose();
});
