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
import { z } from 'zod';
import type { GrpoSample, TrainLoss } from '../../protocol/engine.js';
import { GrpoStats, nllLossFn, tfLossFn } from '../model/loss.js';
import { STD_EPS, advantageDivisor, isZeroVariance, meanOf, stdUnbiased } from '../../protocol/grpo-advantage.js';

/** The settings each named variant stands for; every key a variant leaves out takes GRPO_DEFAULTS. */
export const GRPO_VARIANTS = {
  /** DeepSeekMath's GRPO as verl/TRL run it (with DAPO's token-mean and clip-higher, this project's long-time default). */
  grpo: {},
  /** Liu et al. 2025, "Understanding R1-Zero-like training": no std scaling, a constant-normalised token sum. */
  dr_grpo: { scaleRewards: 'none', lossAggregation: 'token-sum-norm' },
  /** Yu et al. 2025: clip-higher (0.2 / 0.28), token-level loss, dynamic sampling of groups with reward spread. */
  dapo: { epsilon: 0.2, epsilonHigh: 0.28, lossAggregation: 'token-mean', dynamicSampling: true },
  /** Zheng et al. 2025 (Qwen): sequence-level importance ratio and clipping, sequence-mean loss. */
  gspo: { importanceSampling: 'sequence', lossAggregation: 'seq-mean' },
} as const;
export type GrpoVariant = keyof typeof GRPO_VARIANTS;

const GRPO_DEFAULTS = {
  scaleRewards: 'group', epsilon: 0.2, epsilonHigh: 0.3, beta: 0, lossAggregation: 'token-mean', skipZeroStdGroups: false,
  importanceSampling: 'token', sequenceEpsilon: 3e-4, sequenceEpsilonHigh: 4e-4, lossNormTokens: null,
  dynamicSampling: false, dynamicSamplingRounds: 3,
} as const;

const GrpoInput = z.object({
  variant: z.enum(Object.keys(GRPO_VARIANTS) as [GrpoVariant, ...GrpoVariant[]]).optional(),
  scaleRewards: z.enum(['group', 'batch', 'none']).optional(),
  epsilon: z.number().min(0).optional(),
  epsilonHigh: z.number().min(0).optional(),
  /** KL coefficient to the frozen reference policy; 0 = no reference model at all. */
  beta: z.number().min(0).optional(),
  lossAggregation: z.enum(['token-mean', 'seq-mean', 'token-sum-norm']).optional(),
  /** token-sum-norm's constant per sequence (Dr.GRPO's MAX_TOKENS); null = the trainer's model.maxTokens. */
  lossNormTokens: z.number().int().min(1).nullable().optional(),
  skipZeroStdGroups: z.boolean().optional(),
  /** 'token': a ratio per token (PPO/GRPO); 'sequence': GSPO's length-normalised ratio per sequence (TRL importance_sampling_level). */
  importanceSampling: z.enum(['token', 'sequence']).optional(),
  /** GSPO's clip range around a sequence ratio: much tighter than the token one (the paper: 3e-4 / 4e-4). */
  sequenceEpsilon: z.number().min(0).optional(),
  sequenceEpsilonHigh: z.number().min(0).optional(),
  /** DAPO dynamic sampling: drop groups whose rollouts' final rewards are all equal and refill the batch with fresh tasks. */
  dynamicSampling: z.boolean().optional(),
  /** At most this many extra rounds of fresh tasks per step (verl's max_num_gen_batches - 1). */
  dynamicSamplingRounds: z.number().int().min(0).optional(),
}).strict();

export const GrpoConfig = GrpoInput.transform((given) => {
  const variant = given.variant ?? 'grpo';
  const explicit = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
  return { ...GRPO_DEFAULTS, ...GRPO_VARIANTS[variant], ...explicit, variant } as {
    variant: GrpoVariant; scaleRewards: 'group' | 'batch' | 'none'; epsilon: number; epsilonHigh: number; beta: number;
    lossAggregation: 'token-mean' | 'seq-mean' | 'token-sum-norm'; lossNormTokens: number | null; skipZeroStdGroups: boolean;
    importanceSampling: 'token' | 'sequence'; sequenceEpsilon: number; sequenceEpsilonHigh: number;
    dynamicSampling: boolean; dynamicSamplingRounds: number;
  };
});
export type GrpoConfig = z.output<typeof GrpoConfig>;
export type GrpoConfigInput = z.input<typeof GrpoConfig>;

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
  items.forEach((it, i) => { const g = byGroup.get(it.groupId); if (g) g.push(i); else byGroup.set(it.groupId, [i]); });
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
 * (protocol/engine.ts): the variant's settings resolved into the clip range, aggregation and ratio level.
 */
export function grpoLoss(samples: GrpoSample[], config: GrpoConfigInput): TrainLoss {
  const cfg = GrpoConfig.parse(config);
  if (cfg.lossAggregation === 'token-sum-norm' && cfg.lossNormTokens === null) throw new Error('lossAggregation token-sum-norm needs lossNormTokens (the trainer passes model.maxTokens)');
  if (cfg.beta > 0 && samples.some((s) => !s.refLogprobs)) throw new Error('GRPO with beta > 0 needs reference log-probs for every sequence');
  const [clipLow, clipHigh] = cfg.importanceSampling === 'sequence' ? [cfg.sequenceEpsilon, cfg.sequenceEpsilonHigh] : [cfg.epsilon, cfg.epsilonHigh];
  return {
    kind: 'grpo', clipLow, clipHigh, beta: cfg.beta, aggregation: cfg.lossAggregation, normTokens: cfg.lossNormTokens,
    importanceSampling: cfg.importanceSampling, samples,
  };
}

/** The TF.js loss callback of `grpoLoss(samples, config)` (daemon/model/loss.ts), filling `stats`. */
export function grpoLossFn(samples: GrpoSample[], config: GrpoConfigInput, stats: GrpoStats = new GrpoStats()) {
  return tfLossFn(grpoLoss(samples, config), stats);
}

export { GrpoStats, nllLossFn };
