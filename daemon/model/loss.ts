/**
 * The training losses of protocol/engine.ts (`TrainLoss`, data) as TF.js loss callbacks for `trainStep`. The
 * PyTorch engine implements the same definition (engines/torch/agl_torch/loss.py); test/engine checks the two
 * give the same loss and the same update on the same weights and batch.
 * A callback gets one micro-batch and returns its share of the batch loss, so the gradients summed across
 * micro-batches are the batch loss's; it fills running statistics (`GrpoStats`) as it goes.
 */
import * as tf from '@tensorflow/tfjs';
import { clipRange, emptyLossStats, summarizeLossStats, type LossStats, type TrainLoss } from '../../protocol/engine.js';

/** What a TF.js loss callback gets, for one micro-batch of B sequences, T completion positions. */
export interface LossInputs {
  /** [B, T] log-prob of each completion token under the current weights (differentiable). */
  logprobs: tf.Tensor2D;
  /** [B, T] 1 for real completion tokens, 0 for padding. */
  mask: tf.Tensor2D;
  /** [B, T] entropy of the next-token distribution at each completion position (not differentiated). */
  entropy: tf.Tensor2D;
  /** Indices of these B sequences in the batch given to trainStep. */
  indices: number[];
}

/** Running sums a loss fills in while the engine walks the micro-batches (protocol/engine.ts LossStats). */
export class GrpoStats implements LossStats {
  tokens = 0;
  clipped = 0;
  klSum = 0;
  entropySum = 0;
  ratioSum = 0;
  lossSum = 0;
  sequences = 0;
  gapSum = 0;
  gapMax = 0;
  tisCapped = 0;
  summary(): ReturnType<typeof summarizeLossStats> {
    return summarizeLossStats(this);
  }
  toJSON(): LossStats {
    return { ...emptyLossStats(), ...Object.fromEntries(Object.entries(this)) } as LossStats;
  }
}

function padRows(rows: number[][], width: number): number[][] {
  return rows.map((r) => {
    const out = r.slice(0, width);
    while (out.length < width) out.push(0);
    return out;
  });
}

/** Per-token log-ratio logp - old, or GSPO's per-sequence mean of it broadcast to every token ([B, T]). */
function logRatio(logp: tf.Tensor2D, old: tf.Tensor2D, mask: tf.Tensor2D, level: 'token' | 'sequence'): tf.Tensor2D {
  const d = tf.sub(logp, old) as tf.Tensor2D;
  if (level === 'token') return d;
  const perSeq = tf.div(tf.sum(tf.mul(d, mask), 1, true), tf.maximum(tf.sum(mask, 1, true), 1));
  return tf.mul(perSeq, tf.onesLike(d)) as tf.Tensor2D;
}

/** Negative log-likelihood loss (SFT), token-mean over the whole batch of `totalTokens` completion tokens. */
export function nllLossFn(totalTokens: number, stats?: GrpoStats) {
  return (inputs: LossInputs): tf.Scalar => {
    const loss = tf.div(tf.neg(tf.sum(tf.mul(inputs.logprobs, inputs.mask))), Math.max(1, totalTokens)) as tf.Scalar;
    if (stats) {
      stats.tokens += tf.sum(inputs.mask).dataSync()[0];
      stats.sequences += inputs.indices.length;
      stats.lossSum += loss.dataSync()[0];
    }
    return loss;
  };
}

type GrpoLoss = Extract<TrainLoss, { kind: 'grpo' }>;

/** The per-token terms of the GRPO loss for one micro-batch, kept for the statistics. */
interface GrpoTerms {
  /** [B, T] the loss at each position (clipped policy gradient, truncated importance weight, KL), before the mask. */
  perToken: tf.Tensor2D;
  pg1: tf.Tensor;
  pg2: tf.Tensor;
  ratio: tf.Tensor;
  kl: tf.Tensor2D | null;
  /** The update's own log-probs (a constant) and the sampler's. */
  current: tf.Tensor2D;
  sampler: tf.Tensor2D;
  /** The importance weights current/sampler before their cap, when the loss truncates them. */
  tisRaw: Float32Array | null;
}

function grpoTerms(loss: GrpoLoss, inputs: LossInputs): GrpoTerms {
  const [B, T] = inputs.logprobs.shape;
  const mb = inputs.indices.map((i) => loss.samples[i]);
  const old = tf.tensor2d(
    padRows(
      mb.map((s) => s.oldLogprobs),
      T,
    ),
    [B, T],
  );
  const adv = tf.tensor2d(
    mb.map((s) => [s.advantage]),
    [B, 1],
  );
  const logp = inputs.logprobs;
  // ratioBase 'update': the update's own log-probs before the weights change, as a constant (no gradient).
  const current = tf.tensor2d(logp.dataSync() as Float32Array, [B, T]);
  const sampler = old;
  const base = loss.ratioBase === 'update' ? current : sampler;
  const ratio = tf.exp(logRatio(logp, base, inputs.mask, loss.importanceSampling));
  const [lo, hi] = clipRange(loss);
  const clippedRatio = tf.clipByValue(ratio, 1 - lo, 1 + hi);
  const pg1 = tf.neg(tf.mul(adv, ratio));
  const pg2 = tf.neg(tf.mul(adv, clippedRatio));
  let perToken: tf.Tensor2D = tf.maximum(pg1, pg2);
  let tisRaw: Float32Array | null = null;
  if (loss.ratioBase === 'update' && loss.tisCap != null) {
    const w = tf.exp(tf.sub(current, sampler));
    tisRaw = w.dataSync() as Float32Array;
    perToken = tf.mul(perToken, tf.minimum(w, loss.tisCap));
  }
  let kl: tf.Tensor2D | null = null;
  if (loss.beta > 0) {
    if (mb.some((s) => !s.refLogprobs)) throw new Error('GRPO with beta > 0 needs reference log-probs for every sequence');
    const ref = tf.tensor2d(
      padRows(
        mb.map((s) => s.refLogprobs as number[]),
        T,
      ),
      [B, T],
    );
    const d = tf.sub(ref, logp);
    kl = tf.sub(tf.sub(tf.exp(d), d), 1) as tf.Tensor2D;
    perToken = tf.add(perToken, tf.mul(loss.beta, kl));
  }
  return { perToken, pg1, pg2, ratio, kl, current, sampler, tisRaw };
}

/** The micro-batch's share of the batch loss, by the loss's aggregation over `totalTokens` tokens of `totalSeqs` sequences. */
function aggregate(loss: GrpoLoss, masked: tf.Tensor2D, mask: tf.Tensor2D, totalTokens: number, totalSeqs: number): tf.Scalar {
  if (loss.lossAggregation === 'token-mean') return tf.div(tf.sum(masked), Math.max(1, totalTokens));
  if (loss.lossAggregation === 'token-sum-norm') return tf.div(tf.sum(masked), Math.max(1, totalSeqs) * (loss.lossNormTokens as number));
  const perSeq = tf.div(tf.sum(masked, 1), tf.maximum(tf.sum(mask, 1), 1));
  return tf.div(tf.sum(perSeq), Math.max(1, totalSeqs));
}

/** Adds the micro-batch's terms to the running statistics: values are read now (the tensors are disposed with the engine's scope). */
function addStats(stats: GrpoStats, loss: GrpoLoss, inputs: LossInputs, terms: GrpoTerms, value: tf.Scalar): void {
  const maskV = inputs.mask.dataSync();
  const pg1V = terms.pg1.dataSync(),
    pg2V = terms.pg2.dataSync(),
    ratioV = terms.ratio.dataSync(),
    entV = inputs.entropy.dataSync();
  const klV = terms.kl ? terms.kl.dataSync() : null;
  const curV = terms.current.dataSync(),
    samplerV = terms.sampler.dataSync();
  const tisRaw = terms.tisRaw;
  for (let k = 0; k < maskV.length; k++) {
    if (maskV[k] === 0) continue;
    stats.tokens++;
    if (pg2V[k] > pg1V[k]) stats.clipped++;
    stats.ratioSum += ratioV[k];
    stats.entropySum += entV[k];
    if (klV) stats.klSum += klV[k];
    const gap = Math.abs(curV[k] - samplerV[k]);
    stats.gapSum += gap;
    stats.gapMax = Math.max(stats.gapMax, gap);
    if (tisRaw && tisRaw[k] > (loss.tisCap as number)) stats.tisCapped++;
  }
  stats.sequences += inputs.logprobs.shape[0];
  stats.lossSum += value.dataSync()[0];
}

/**
 * The loss callback of `loss` for a batch whose pairs have `completionLengths` tokens each (nll counts them;
 * GRPO counts its samples' old log-probs, one per completion token).
 */
export function tfLossFn(loss: TrainLoss, stats: GrpoStats = new GrpoStats(), completionLengths: number[] = []): (inputs: LossInputs) => tf.Scalar {
  if (loss.kind === 'nll')
    return nllLossFn(
      completionLengths.reduce((a, n) => a + n, 0),
      stats,
    );
  if (loss.lossAggregation === 'token-sum-norm' && !loss.lossNormTokens)
    throw new Error('lossAggregation token-sum-norm needs lossNormTokens (the trainer passes model.maxTokens)');
  const totalTokens = loss.samples.reduce((a, s) => a + s.oldLogprobs.length, 0);
  const totalSeqs = loss.samples.length;
  return (inputs: LossInputs): tf.Scalar => {
    const terms = grpoTerms(loss, inputs);
    const value = aggregate(loss, tf.mul(terms.perToken, inputs.mask), inputs.mask, totalTokens, totalSeqs);
    addStats(stats, loss, inputs, terms, value);
    return value;
  };
}
