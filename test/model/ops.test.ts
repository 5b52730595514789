/**
 * The wasm-friendly ops and kernels compute the same values and gradients as the plain definitions:
 * custom-gradient matmul vs tf.matMul's own gradient, ScatterNd embedding gradient vs one-hot matmul,
 * our batched BatchMatMul and Slice kernels vs per-item products and plain JS indexing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs';
import { selectBackend } from '../../daemon/model/backend.js';
import { embed, gelu, matmul } from '../../daemon/model/ops.js';

function close(a: tf.Tensor, b: tf.Tensor, tol = 1e-4): void {
  const x = a.dataSync(),
    y = b.dataSync();
  assert.deepEqual(a.shape, b.shape);
  let worst = 0;
  for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(x[i] - y[i]));
  assert.ok(worst < tol, `max difference ${worst}`);
}

test('matmul: custom gradient equals tf.matMul gradient (2-D and batched)', async () => {
  await selectBackend();
  for (const [sa, sb] of [
    [
      [5, 7],
      [7, 3],
    ],
    [
      [4, 6, 5],
      [4, 5, 3],
    ],
    [
      [2, 3, 6, 5],
      [2, 3, 5, 4],
    ],
  ]) {
    const a = tf.randomNormal(sa, 0, 1, 'float32', 1),
      b = tf.randomNormal(sb, 0, 1, 'float32', 2);
    const ours = tf.grads((x: tf.Tensor, y: tf.Tensor) => matmul(x, y).square().sum())([a, b]);
    const ref = tf.grads((x: tf.Tensor, y: tf.Tensor) =>
      tf
        .matMul(x as tf.Tensor3D, y as tf.Tensor3D)
        .square()
        .sum(),
    )([a, b]);
    close(matmul(a, b), tf.matMul(a as tf.Tensor3D, b as tf.Tensor3D));
    close(ours[0], ref[0], 1e-3);
    close(ours[1], ref[1], 1e-3);
  }
});

test('embed: gather with a ScatterNd gradient equals the one-hot matmul gradient (repeated ids summed)', async () => {
  await selectBackend();
  const table = tf.randomNormal([10, 4], 0, 1, 'float32', 3);
  const ids = tf.tensor2d(
    [
      [1, 3, 3],
      [0, 9, 1],
    ],
    [2, 3],
    'int32',
  );
  const g = tf.grad((t: tf.Tensor) =>
    embed(t, ids)
      .mul(tf.range(0, 24).reshape([2, 3, 4]))
      .sum(),
  )(table);
  const ref = tf.grad((t: tf.Tensor) =>
    tf
      .oneHot(ids.reshape([-1]) as tf.Tensor1D, 10)
      .matMul(t as tf.Tensor2D)
      .reshape([2, 3, 4])
      .mul(tf.range(0, 24).reshape([2, 3, 4]))
      .sum(),
  )(table);
  close(g, ref);
});

test('batched BatchMatMul and Slice kernels agree with per-item products and JS indexing', async () => {
  await selectBackend();
  const a = tf.randomNormal([6, 9, 33], 0, 1, 'float32', 4),
    b = tf.randomNormal([6, 33, 17], 0, 1, 'float32', 5);
  const perItem = tf.stack(tf.unstack(a).map((x, i) => tf.matMul(x as tf.Tensor2D, tf.unstack(b)[i] as tf.Tensor2D)));
  close(tf.matMul(a, b), perItem);
  const x = tf.tensor3d(
    Array.from({ length: 60 }, (_, i) => i),
    [3, 4, 5],
  );
  assert.deepEqual(
    Array.from(x.slice([1, 0, 0], [1, 4, 5]).dataSync()),
    Array.from({ length: 20 }, (_, i) => 20 + i),
  );
  assert.deepEqual(Array.from(x.slice([0, 1, 2], [2, 2, 2]).dataSync()), [7, 8, 12, 13, 27, 28, 32, 33]);
});

test('gelu is the tanh approximation', async () => {
  await selectBackend();
  const x = tf.tensor1d([-3, -1, -0.1, 0, 0.5, 2, 4]);
  const ref = x.mul(tf.tanh(x.add(x.pow(3).mul(0.044715)).mul(Math.sqrt(2 / Math.PI))).add(1)).mul(0.5);
  close(gelu(x), ref, 1e-6);
});
