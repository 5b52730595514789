/** GRPO advantages and the clipped-surrogate / KL loss against hand-computed values. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs';
import { computeAdvantages, grpoLossFn, GrpoStats, nllLossFn } from '../../daemon/algorithm/grpo.js';

const near = (a: number, b: number, tol = 1e-5) => assert.ok(Math.abs(a - b) < tol, `${a} != ${b}`);

test('advantages: group-normalised with the unbiased std; zero-std groups counted and optionally skipped', () => {
  const items = [
    { groupId: 'A', credit: 1 },
    { groupId: 'A', credit: 0 },
    { groupId: 'A', credit: 0 },
    { groupId: 'A', credit: 1 },
    { groupId: 'B', credit: 1 },
    { groupId: 'B', credit: 1 },
  ];
  // Group A: mean 0.5, unbiased std sqrt(1/3) = 0.57735 -> +-0.866025
  const g = computeAdvantages(items, { scaleRewards: 'group' });
  [0.866025, -0.866025, -0.866025, 0.866025, 0, 0].forEach((x, i) => near(g.advantages[i], x));
  assert.equal(g.groups, 2);
  assert.equal(g.fracRewardZeroStd, 0.5);
  assert.deepEqual(g.keep, [true, true, true, true, true, true]);
  assert.deepEqual(computeAdvantages(items, { skipZeroStdGroups: true }).keep, [true, true, true, true, false, false]);
  // none: centred only
  assert.deepEqual(computeAdvantages(items, { scaleRewards: 'none' }).advantages, [0.5, -0.5, -0.5, 0.5, 0, 0]);
  // batch: divide by the std of all six credits: mean 2/3, var = (4*(1/9) + 2*(4/9)) / 5 = 12/45
  const bs = Math.sqrt(12 / 45);
  const b = computeAdvantages(items, { scaleRewards: 'batch' });
  near(b.advantages[0], 0.5 / bs);
  near(b.advantages[4], 0);
});

function lossInputs(logp: number[][], mask: number[][], entropy: number[][], indices: number[]) {
  return { logprobs: tf.tensor2d(logp), mask: tf.tensor2d(mask), entropy: tf.tensor2d(entropy), indices };
}

test('clipped surrogate, token-mean, asymmetric clip; clip ratio and entropy statistics', () => {
  // Seq 0: A=+1, ratios e^0.5=1.6487 (clipped at 1.3) and e^0=1. Seq 1: A=-1, ratio e^-0.5=0.6065 (clipped at 0.8), padding.
  const samples = [
    { advantage: 1, oldLogprobs: [-1, -1] },
    { advantage: -1, oldLogprobs: [-1] },
  ];
  const stats = new GrpoStats();
  const fn = grpoLossFn(samples, { epsilon: 0.2, epsilonHigh: 0.3, ratioBase: 'sampler' }, stats);
  const loss = fn(
    lossInputs(
      [
        [-0.5, -1],
        [-1.5, 0],
      ],
      [
        [1, 1],
        [1, 0],
      ],
      [
        [1, 2],
        [3, 9],
      ],
      [0, 1],
    ),
  );
  // per-token: max(-1.6487, -1.3) = -1.3 ; max(-1, -1) = -1 ; max(0.6065, 0.8) = 0.8 -> sum -1.5 / 3 tokens
  near(loss.dataSync()[0], -1.5 / 3);
  const s = stats.summary();
  near(s.clipRatio, 2 / 3);
  near(s.entropy, 2);
});

test('seq-mean aggregation and the k3 KL term; micro-batches sum to the batch loss', () => {
  const samples = [
    { advantage: 0, oldLogprobs: [-1, -1], refLogprobs: [-2, -1] },
    { advantage: 0, oldLogprobs: [-1], refLogprobs: [-1] },
  ];
  const k3 = (d: number) => Math.exp(d) - d - 1; // d = ref - logp
  const beta = 0.5;
  const fn = grpoLossFn(samples, { beta, lossAggregation: 'seq-mean' });
  // micro-batch 0 = seq 0, micro-batch 1 = seq 1 (as the engine calls it)
  const l0 = fn(lossInputs([[-1, -1]], [[1, 1]], [[0, 0]], [0])).dataSync()[0];
  const l1 = fn(lossInputs([[-1.5]], [[1]], [[0]], [1])).dataSync()[0];
  const seq0 = (beta * (k3(-1) + k3(0))) / 2,
    seq1 = beta * k3(0.5);
  near(l0 + l1, (seq0 + seq1) / 2);
});

test('the surrogate gradient pushes logprobs up for positive advantage and down for negative', () => {
  const samples = [
    { advantage: 2, oldLogprobs: [-1] },
    { advantage: -1, oldLogprobs: [-1] },
  ];
  const fn = grpoLossFn(samples, {});
  const mask = tf.tensor2d([[1], [1]]),
    entropy = tf.zeros([2, 1]) as tf.Tensor2D;
  const g = tf.grad((v: tf.Tensor) => fn({ logprobs: v as tf.Tensor2D, mask, entropy, indices: [0, 1] }))(tf.tensor2d([[-1], [-1]]));
  // d/dlogp of -A * exp(logp - old) / 2 at ratio 1 = -A / 2
  const gv = g.dataSync();
  near(gv[0], -1);
  near(gv[1], 0.5);
});

test('SFT loss is the token-mean negative log-likelihood', () => {
  const l = nllLossFn(3)(
    lossInputs(
      [
        [-1, -2],
        [-3, -7],
      ],
      [
        [1, 1],
        [1, 0],
      ],
      [
        [0, 0],
        [0, 0],
      ],
      [0, 1],
    ),
  );
  near(l.dataSync()[0], 2);
});

test("the ratio against the update's own log-probs: 1 at the start, the sampler's in a truncated importance weight", () => {
  // The update computes [-1, -2, -3] and [-0.5, -0.5]; the sampler (other numerics) recorded these: the weights
  // exp(update - sampler) are 1, e^2 (capped at 3), 1/2, and 1, 1.
  const samples = [
    { advantage: 1, oldLogprobs: [-1, -4, -3 + Math.log(2)] },
    { advantage: -0.5, oldLogprobs: [-0.5, -0.5] },
  ];
  const stats = new GrpoStats();
  const fn = grpoLossFn(samples, { ratioBase: 'update', tisCap: 3 }, stats);
  const mask = tf.tensor2d([
      [1, 1, 1],
      [1, 1, 0],
    ]),
    entropy = tf.zeros([2, 3]) as tf.Tensor2D;
  const g = tf.grad((v: tf.Tensor) => fn({ logprobs: v as tf.Tensor2D, mask, entropy, indices: [0, 1] }))(
    tf.tensor2d([
      [-1, -2, -3],
      [-0.5, -0.5, 0],
    ]),
  );
  [-1 / 5, -3 / 5, -0.5 / 5, 0.5 / 5, 0.5 / 5, 0].forEach((want, i) => near(g.dataSync()[i], want));
  const s = stats.summary();
  near(s.clipRatio, 0);
  near(s.ratioMean, 1);
  near(s.tisCappedRatio, 1 / 5);
  near(s.logprobGapMax, 2);
  near(s.logprobGap, (2 + Math.log(2)) / 5);
});
