/**
 * Numerical agreement with an independent implementation: logits of tiny random Qwen2 models (untied and
 * tied head) from our engine match the reference logits saved next to them (scripts/make-fixture-qwen2.py:
 * Hugging Face transformers when installed, else its independent PyTorch Qwen2) within 1e-4, float32,
 * also when the sequence sits left-padded in a batch.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs';
import { join } from 'node:path';
import { selectBackend } from '../../daemon/model/backend.js';
import { configFromHf, loadWeights, readHfConfig } from '../../daemon/model/model-folder.js';
import { readSafetensors } from '../../daemon/model/safetensors.js';
import { forward, lmHead } from '../../daemon/model/transformer.js';

const FIXTURES = join(process.cwd(), 'test', 'model', 'fixtures');

for (const name of ['qwen2-tiny', 'qwen2-tiny-tied']) {
  test(`${name}: logits match the reference within 1e-4`, async () => {
    await selectBackend();
    const dir = join(FIXTURES, name);
    const c = configFromHf(readHfConfig(dir));
    const params = loadWeights(c, dir);
    const ref = readSafetensors(join(dir, 'reference.safetensors'));
    const [B, T] = ref.tensors.get('input_ids')!.shape;
    const ids = Array.from(ref.tensors.get('input_ids')!.data);
    const expected = ref.tensors.get('logits')!.data as Float32Array;
    const V = c.vocabSize;

    const logits = tf.tidy(() => {
      const { hidden } = forward(c, params, tf.tensor2d(ids, [B, T], 'int32'), [0, 0], null);
      return lmHead(c, params, hidden.reshape([B * T, c.dModel]));
    });
    const got = (await logits.data()) as Float32Array;
    logits.dispose();
    let worst = 0;
    for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i] - expected[i]));
    assert.ok(worst < 1e-4, `max |ours - reference| = ${worst} (reference: ${ref.metadata.reference})`);

    // Row 1's first 8 tokens, left-padded by 4 next to a full row: same logits as the reference prefix.
    const P = 8,
      pad = 4;
    const padded = [...ids.slice(0, P + pad), ...Array(pad).fill(0), ...ids.slice(T, T + P)];
    const l2 = tf.tidy(() => {
      const { hidden } = forward(c, params, tf.tensor2d(padded, [2, P + pad], 'int32'), [0, pad], null);
      return lmHead(c, params, hidden.slice([1, pad, 0], [1, P, c.dModel]).reshape([P, c.dModel]));
    });
    const g2 = (await l2.data()) as Float32Array;
    l2.dispose();
    let worstPadded = 0;
    for (let t = 0; t < P; t++) for (let v = 0; v < V; v++) worstPadded = Math.max(worstPadded, Math.abs(g2[t * V + v] - expected[(T + t) * V + v]));
    assert.ok(worstPadded < 1e-4, `left-padded row: max difference ${worstPadded}`);
    for (const p of params.values()) p.dispose();
  });
}
