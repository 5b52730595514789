/**
 * GRPO settings as plain data: the named variants, the defaults, and how given settings resolve (a variant fills in
 * its paper's settings, keys given explicitly win). train-config.ts validates `training.grpo` and `policies.<role>.grpo`
 * with zod and resolves them here; the policy set (policy-set.ts) resolves each policy's own settings here too. No zod
 * here, so that everything reading a policy set (the viewer's bundle too) can.
 */

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

/** Every GRPO setting, resolved (what the trainer and the loss read). */
export interface GrpoSettings {
  variant: GrpoVariant;
  scaleRewards: 'group' | 'batch' | 'none';
  epsilon: number;
  epsilonHigh: number;
  beta: number;
  lossAggregation: 'token-mean' | 'seq-mean' | 'token-sum-norm';
  lossNormTokens: number | null;
  skipZeroStdGroups: boolean;
  importanceSampling: 'token' | 'sequence';
  sequenceEpsilon: number;
  sequenceEpsilonHigh: number;
  dynamicSampling: boolean;
  dynamicSamplingRounds: number;
  /**
   * The PPO ratio's old log-probs: 'update', the update's own forward pass before the weights change (the update's
   * numerics; the sampler's enter through the truncated importance weight tisCap), or 'sampler', the gateway's.
   */
  ratioBase: 'sampler' | 'update';
  /** With ratioBase 'update': each token's loss weighted by min(exp(update - sampler), tisCap); null: no weight. */
  tisCap: number | null;
}
/** Settings as given (train.yaml's `grpo:` after validation): any of them, or none. */
export type GrpoGiven = { [K in keyof GrpoSettings]?: GrpoSettings[K] | undefined };

export const GRPO_DEFAULTS: Omit<GrpoSettings, 'variant'> = {
  scaleRewards: 'group',
  epsilon: 0.2,
  epsilonHigh: 0.3,
  beta: 0,
  lossAggregation: 'token-mean',
  skipZeroStdGroups: false,
  importanceSampling: 'token',
  sequenceEpsilon: 3e-4,
  sequenceEpsilonHigh: 4e-4,
  lossNormTokens: null,
  dynamicSampling: false,
  dynamicSamplingRounds: 3,
  ratioBase: 'update',
  tisCap: 3,
};

/** The keys of `given` that are set. */
function setKeys(given: GrpoGiven): GrpoGiven {
  return Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
}

/** Given settings resolved: the defaults, under the variant's settings, under the keys given explicitly. */
export function resolveGrpo(given: GrpoGiven): GrpoSettings {
  const variant = given.variant ?? 'grpo';
  return { ...GRPO_DEFAULTS, ...GRPO_VARIANTS[variant], ...setKeys(given), variant } as GrpoSettings;
}

/**
 * A policy's own settings (`policies.<role>.grpo`) over the run's (`training.grpo`, already resolved). A policy naming a
 * variant takes that variant's settings in place of the run's variant's; what the run set apart from its own variant
 * (a KL beta, a clip range) carries over; the policy's own keys win. Without keys of its own a policy has the run's.
 */
export function policyGrpo(run: GrpoSettings, own: GrpoGiven): GrpoSettings {
  const runVariant: Record<string, unknown> = { ...GRPO_DEFAULTS, ...GRPO_VARIANTS[run.variant] };
  const runOwn = Object.fromEntries(Object.entries(run).filter(([k, v]) => k !== 'variant' && v !== runVariant[k]));
  return resolveGrpo({ ...runOwn, variant: own.variant ?? run.variant, ...setKeys(own) });
}
