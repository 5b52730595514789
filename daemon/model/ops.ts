/**
 * Differentiable ops with gradients that every backend can run fast (daemon/model/README.md, "Backends"):
 * - matmul: tf.matMul's gradient uses transposed operands, which the wasm backend runs 10-20x slower than
 *   plain ones, so the gradient here transposes explicitly and multiplies plainly.
 * - embed: tf.gather's gradient needs UnsortedSegmentSum, which wasm lacks; ours scatters with ScatterNd.
 * - stopGradient: TF.js has none; an identity whose gradient is zero.
 */
import * as tf from '@tensorflow/tfjs';

function swapLast(rank: number): number[] {
  const perm = [...Array(rank).keys()];
  [perm[rank - 2], perm[rank - 1]] = [perm[rank - 1], perm[rank - 2]];
  return perm;
}

/** a @ b for rank-2..4 tensors of equal rank (no broadcasting), with a transpose-free gradient. */
type AnyGradFunc = Parameters<typeof tf.customGrad>[0];

export const matmul = tf.customGrad(((a: tf.Tensor, b: tf.Tensor, save: tf.GradSaveFunc) => {
  save([a, b]);
  return {
    value: tf.matMul(a as tf.Tensor3D, b as tf.Tensor3D),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sa, sb] = saved;
      const perm = swapLast(sa.rank);
      return [tf.matMul(dy as tf.Tensor3D, tf.transpose(sb, perm) as tf.Tensor3D), tf.matMul(tf.transpose(sa, perm) as tf.Tensor3D, dy as tf.Tensor3D)];
    },
  };
}) as unknown as AnyGradFunc) as unknown as (a: tf.Tensor, b: tf.Tensor) => tf.Tensor;

/** x [..., in] @ w [in, out] (+ bias): flattens to one plain 2-D matmul. */
export function linear(x: tf.Tensor, w: tf.Tensor, bias?: tf.Tensor): tf.Tensor {
  const inDim = x.shape[x.rank - 1]!;
  const lead = x.shape.slice(0, -1);
  let y = matmul(x.reshape([-1, inDim]), w);
  if (bias) y = y.add(bias);
  return y.reshape([...lead, w.shape[1]!]);
}

/** Rows of `table` [V, d] picked by int32 `ids` (any shape) -> [...ids.shape, d]. */
export function embed(table: tf.Tensor, ids: tf.Tensor): tf.Tensor {
  const flat = ids.reshape([-1]) as tf.Tensor1D;
  const pick = tf.customGrad(((t: tf.Tensor, idx: tf.Tensor, save: tf.GradSaveFunc) => {
    save([idx]);
    return {
      value: tf.gather(t, idx as tf.Tensor1D),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => [tf.scatterND(saved[0].reshape([-1, 1]), dy, t.shape), tf.zerosLike(saved[0])],
    };
  }) as unknown as AnyGradFunc) as unknown as (t: tf.Tensor, idx: tf.Tensor) => tf.Tensor;
  return pick(table, flat).reshape([...ids.shape, table.shape[1]!]);
}

/** Identity in the forward pass, zero gradient. */
export const stopGradient = tf.customGrad(((x: tf.Tensor, save: tf.GradSaveFunc) => {
  save([]);
  return { value: x.clone(), gradFunc: (dy: tf.Tensor) => tf.zerosLike(dy) };
}) as unknown as AnyGradFunc) as unknown as (x: tf.Tensor) => tf.Tensor;

/** GPT-2's tanh approximation of GELU; x^3 as x*x*x because pow is slow on wasm. */
export function gelu(x: tf.Tensor): tf.Tensor {
  // 0.5 * (1 + tanh(z)) == sigmoid(2z): one fewer op, and wasm's sigmoid is faster than its tanh.
  const z2 = x.add(x.square().mul(x).mul(0.044715)).mul(2 * Math.sqrt(2 / Math.PI));
  return x.mul(tf.sigmoid(z2));
}

export function silu(x: tf.Tensor): tf.Tensor {
  return x.mul(tf.sigmoid(x));
}

export function layerNorm(x: tf.Tensor, w: tf.Tensor, b: tf.Tensor, eps: number): tf.Tensor {
  const mean = x.mean(-1, true);
  const c = x.sub(mean);
  const variance = c.square().mean(-1, true);
  return c
    .mul(tf.rsqrt(variance.add(eps)))
    .mul(w)
    .add(b);
}

export function rmsNorm(x: tf.Tensor, w: tf.Tensor, eps: number): tf.Tensor {
  return x.mul(tf.rsqrt(x.square().mean(-1, true).add(eps))).mul(w);
}
