/**
 * GRPO on transitions. A group is every transition from the n rollouts of one task (groupId = task id).
 * Advantages: credit minus the group's mean, scaled per `scaleRewards`:
 *   'group' divide by the group's std (unbiased, as verl/TRL), 'batch' by the whole batch's std, 'none' not at all.
 * Loss per completion token t (ratio r = exp(logp - oldLogp)):
 *   pg_t = max(-A r, -A clip(r, 1 - epsilon, 1 + epsilonHigh))   (clipped surrogate, DAPO's asymmetric clip)
 *   kl_t = exp(ref - logp) - (ref - logp) - 1                      (k3 estimator, only when beta > 0)
 *   loss = aggregate(pg_t + beta kl_t)  token-mean: over every token of the batch; seq-mean: mean per sequence, then over sequences
 * Groups whose credits are all equal carry no signal: counted (fracRewardZeroStd) and optionally skipped.
 */
import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import type { LossInputs } from '../model/api.js';

export const GrpoConfig = z.object({
  scaleRewards: z.enum(['group', 'batch', 'none']).default('group'),
  epsilon: z.number().min(0).default(0.2),
  epsilonHigh: z.number().min(0).default(0.3),
  /** KL coefficient to the frozen reference policy; 0 = no reference model at all. */
  beta: z.number().min(0).default(0),
  lossAggregation: z.enum(['token-mean', 'seq-mean']).default('token-mean'),
  skipZeroStdGroups: z.boolean().default(false),
});
export type GrpoConfig = z.infer<typeof GrpoConfig>;

export const STD_EPS = 1e-6;

function mean(xs: number[]): number { return xs.reduce((a, x) => a + x, 0) / xs.length; }
/** Unbiased standard deviation (0 for fewer than 2 values). */
export function stdUnbiased(xs: number[]): number {
  if (xs.length < 2) return 0;
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1));
}

export interface AdvantageResult {
  advantages: number[];
  /** Index of the items kept for the loss (all unless zero-std groups are skipped). */
  keep: boolean[];
  groups: number;
  fracRewardZeroStd: number;
}

/** Advantages for items given as (groupId, credit), in input order. */
export function computeAdvantages(items: { groupId: string; credit: number }[], config: Partial<GrpoConfig> = {}): AdvantageResult {
  const cfg = GrpoConfig.parse(config);
  const byGroup = new Map<string, number[]>();
  items.forEach((it, i) => { const g = byGroup.get(it.groupId); if (g) g.push(i); else byGroup.set(it.groupId, [i]); });
  const batchStd = stdUnbiased(items.map((it) => it.credit));
  const advantages = new Array<number>(items.length).fill(0);
  const keep = new Array<boolean>(items.length).fill(true);
  let zeroStd = 0;
  for (const idx of byGroup.values()) {
    const credits = idx.map((i) => items[i].credit);
    const m = mean(credits);
    const s = stdUnbiased(credits);
    const isZero = credits.every((c) => c === credits[0]);
    if (isZero) zeroStd++;
    const scale = cfg.scaleRewards === 'group' ? s + STD_EPS : cfg.scaleRewards === 'batch' ? batchStd + STD_EPS : 1;
    for (const i of idx) {
      advantages[i] = (items[i].credit - m) / scale;
      if (isZero && cfg.skipZeroStdGroups) keep[i] = false;
    }
  }
  return { advantages, keep, groups: byGroup.size, fracRewardZeroStd: byGroup.size ? zeroStd / byGroup.size : 0 };
}

/** One training sequence of the batch, with what the loss needs beyond the current log-probs. */
export interface GrpoSample { advantage: number; oldLogprobs: number[]; refLogprobs?: number[] | null }

/** Running sums the loss function fills in while the engine walks the micro-batches. */
export class GrpoStats {
  tokens = 0; clipped = 0; klSum = 0; entropySum = 0; ratioSum = 0; lossSum = 0; sequences = 0;
  summary(): { clipRatio: number; kl: number; entropy: number; ratioMean: number; loss: number } {
    const n = Math.max(1, this.tokens);
    return { clipRatio: this.clipped / n, kl: this.klSum / n, entropy: this.entropySum / n, ratioMean: this.ratioSum / n, loss: this.lossSum };
  }
}

function padRows(rows: number[][], width: number): number[][] {
  return rows.map((r) => { const out = r.slice(0, width); while (out.length < width) out.push(0); return out; });
}

/**
 * The loss callback for PolicyModel.trainStep. `samples[i]` belongs to the i-th pair given to trainStep.
 * Returns each micro-batch's share of the batch loss so that the summed gradients are those of the batch loss.
 */
export function grpoLossFn(samples: GrpoSample[], config: Partial<GrpoConfig>, stats: GrpoStats = new GrpoStats()) {
  const cfg = GrpoConfig.parse(config);
  const totalTokens = samples.reduce((a, s) => a + s.oldLogprobs.length, 0);
  const totalSeqs = samples.length;
  return (inputs: LossInputs): tf.Scalar => {
    const [B, T] = inputs.logprobs.shape;
    const mb = inputs.indices.map((i) => samples[i]);
    const old = tf.tensor2d(padRows(mb.map((s) => s.oldLogprobs), T), [B, T]);
    const adv = tf.tensor2d(mb.map((s) => [s.advantage]), [B, 1]);
    const logp = inputs.logprobs;
    const mask = inputs.mask;
    const ratio = tf.exp(tf.sub(logp, old));
    const clippedRatio = tf.clipByValue(ratio, 1 - cfg.epsilon, 1 + cfg.epsilonHigh);
    const pg1 = tf.neg(tf.mul(adv, ratio));
    const pg2 = tf.neg(tf.mul(adv, clippedRatio));
    let perToken: tf.Tensor2D = tf.maximum(pg1, pg2);
    let kl: tf.Tensor2D | null = null;
    if (cfg.beta > 0) {
      if (mb.some((s) => !s.refLogprobs)) throw new Error('GRPO with beta > 0 needs reference log-probs for every sequence');
      const ref = tf.tensor2d(padRows(mb.map((s) => s.refLogprobs as number[]), T), [B, T]);
      const d = tf.sub(ref, logp);
      kl = tf.sub(tf.sub(tf.exp(d), d), 1) as tf.Tensor2D;
      perToken = tf.add(perToken, tf.mul(cfg.beta, kl));
    }
    const masked = tf.mul(perToken, mask);
    let loss: tf.Scalar;
    if (cfg.lossAggregation === 'token-mean') {
      loss = tf.div(tf.sum(masked), Math.max(1, totalTokens));
    } else {
      const perSeq = tf.div(tf.sum(masked, 1), tf.maximum(tf.sum(mask, 1), 1));
      loss = tf.div(tf.sum(perSeq), Math.max(1, totalSeqs));
    }
    // Statistics: read values now (the tensors are disposed with the engine's scope).
    const maskV = mask.dataSync();
    const pg1V = pg1.dataSync(), pg2V = pg2.dataSync(), ratioV = ratio.dataSync(), entV = inputs.entropy.dataSync();
    const klV = kl ? kl.dataSync() : null;
    for (let k = 0; k < maskV.length; k++) {
      if (maskV[k] === 0) continue;
      stats.tokens++;
      if (pg2V[k] > pg1V[k]) stats.clipped++;
      stats.ratioSum += ratioV[k];
      stats.entropySum += entV[k];
      if (klV) stats.klSum += klV[k];
    }
    stats.sequences += B;
    stats.lossSum += loss.dataSync()[0];
    return loss;
  };
}

/** Negative log-likelihood loss (SFT), token-mean over the whole batch. */
export function nllLossFn(totalTokens: number) {
  return (inputs: LossInputs): tf.Scalar => tf.div(tf.neg(tf.sum(tf.mul(inputs.logprobs, inputs.mask))), Math.max(1, totalTokens));
}
