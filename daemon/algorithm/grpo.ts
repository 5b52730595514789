/**
 * GRPO on transitions. A group is every transition from the n rollouts of one task (groupId = task id).
 * Advantages: credit minus the group's mean, scaled per `scaleRewards`:
 *   'group' divide by the group's std (unbiased, as verl/TRL), 'batch' by the whole batch's std, 'none' not at all.
 * Loss per completion token t of sequence i (advantage A_i):
 *   importanceSampling 'token' (GRPO, DAPO):  r_t = exp(logp_t - old_t), clipped to [1 - epsilon, 1 + epsilonHigh]
 *   importanceSampling 'sequence' (GSPO):     r_t = s_i = exp(mean over i's tokens of (logp - old)), the same for
 *                                             every token of i, clipped to [1 - sequenceEpsilon, 1 + sequenceEpsilonHigh]
 *   pg_t = max(-A r_t, -A clip(r_t))                                 (clipped surrogate; asymmetric clip = DAPO's clip-higher)
 *   kl_t = exp(ref - logp) - (ref - logp) - 1                      (k3 estimator, only when beta > 0)
 *   loss = aggregate(pg_t + beta kl_t)
 *     token-mean      sum over every token of the batch / tokens of the batch         (DAPO; TRL 'dapo'/'bnpo')
 *     seq-mean        mean per sequence, then mean over sequences                      (GRPO paper; TRL 'grpo')
 *     token-sum-norm  sum over every token / (lossNormTokens x sequences)              (Dr.GRPO; TRL 'dr_grpo')
 * Groups whose credits are all equal carry no signal: counted (fracRewardZeroStd) and optionally skipped.
 * `variant` names a paper's settings (GRPO_VARIANTS); keys given explicitly win over the variant's.
 */
import { GrpoConfig, type GrpoConfigInput } from '../../protocol/train-config.js';
import { GRPO_LOSS_KEYS, type GrpoLossSettings } from '../../protocol/grpo-settings.js';
import type { GrpoSample, TrainLoss } from '../../protocol/engine.js';
import { GrpoStats, nllLossFn, tfLossFn } from '../model/loss.js';
import { STD_EPS, advantageDivisor, isZeroVariance, meanOf, stdUnbiased } from '../../protocol/grpo-advantage.js';

/** The schema (variants, defaults) is protocol/train-config.ts's, with the rest of the training config. */
export { GRPO_VARIANTS, GrpoConfig, type GrpoConfigInput, type GrpoVariant } from '../../protocol/train-config.js';

/** The formula's pieces live in protocol/grpo-advantage.ts, shared with the viewer that shows them. */
export { STD_EPS, stdUnbiased };

export interface AdvantageResult {
  advantages: number[];
  /** Index of the items kept for the loss (all unless zero-std groups are skipped). */
  keep: boolean[];
  groups: number;
  fracRewardZeroStd: number;
}

/** Advantages for items given as (groupId, credit), in input order. */
export function computeAdvantages(items: { groupId: string; credit: number }[], config: GrpoConfigInput = {}): AdvantageResult {
  const cfg = GrpoConfig.parse(config);
  const byGroup = new Map<string, number[]>();
  items.forEach((it, i) => {
    const g = byGroup.get(it.groupId);
    if (g) g.push(i);
    else byGroup.set(it.groupId, [i]);
  });
  const batchStd = stdUnbiased(items.map((it) => it.credit));
  const advantages = new Array<number>(items.length).fill(0);
  const keep = new Array<boolean>(items.length).fill(true);
  let zeroStd = 0;
  for (const idx of byGroup.values()) {
    const credits = idx.map((i) => items[i].credit);
    const m = meanOf(credits);
    const isZero = isZeroVariance(credits);
    if (isZero) zeroStd++;
    const scale = advantageDivisor(cfg.scaleRewards, stdUnbiased(credits), batchStd);
    for (const i of idx) {
      advantages[i] = (items[i].credit - m) / scale;
      if (isZero && cfg.skipZeroStdGroups) keep[i] = false;
    }
  }
  return { advantages, keep, groups: byGroup.size, fracRewardZeroStd: byGroup.size ? zeroStd / byGroup.size : 0 };
}

/** One training sequence of the batch, with what the loss needs beyond the current log-probs. */
export type { GrpoSample };

/**
 * The GRPO loss of `samples` (one per pair given to trainStep) under `config`, as data every engine implements
 * (protocol/engine.ts): the settings the loss reads, under GRPO's one declaration's names (GRPO_LOSS_KEYS), resolved
 * from the variant; the truncated importance weight only with ratioBase 'update'.
 */
export function grpoLoss(samples: GrpoSample[], config: GrpoConfigInput): TrainLoss {
  const cfg = GrpoConfig.parse(config);
  if (cfg.lossAggregation === 'token-sum-norm' && cfg.lossNormTokens === null)
    throw new Error('lossAggregation token-sum-norm needs lossNormTokens (the trainer passes model.maxTokens)');
  if (cfg.beta > 0 && samples.some((s) => !s.refLogprobs)) throw new Error('GRPO with beta > 0 needs reference log-probs for every sequence');
  const settings = Object.fromEntries(GRPO_LOSS_KEYS.map((k) => [k, cfg[k]])) as GrpoLossSettings;
  return { kind: 'grpo', ...settings, tisCap: cfg.ratioBase === 'update' ? cfg.tisCap : null, samples };
}

/** The TF.js loss callback of `grpoLoss(samples, config)` (daemon/model/loss.ts), filling `stats`. */
export function grpoLossFn(samples: GrpoSample[], config: GrpoConfigInput, stats: GrpoStats = new GrpoStats()) {
  return tfLossFn(grpoLoss(samples, config), stats);
}

export { GrpoStats, nllLossFn };
