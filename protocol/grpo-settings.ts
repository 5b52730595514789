/**
 * GRPO's settings, declared once (as TRL's GRPOConfig is both the config and the CLI): one table whose fields carry
 * their doc, range and default, and one zod schema made from it. From it come
 *   `training.grpo` in train.yaml   GrpoConfig: the keys given, a variant's settings filled in, resolved (GrpoSettings)
 *   `policies.<role>.grpo`          GrpoGivenSchema: the same keys, every one optional (policyGrpo puts them over the run's)
 *   `agl train --grpo-*`            grpoFlags(): one flag per key, its help the field's doc (protocol/train-options.ts)
 *   the engine's loss record        GrpoLossSettings: the keys an update's loss reads (protocol/engine.ts TrainLoss)
 * The viewer's bundle never imports this file (it holds zod): what the views show of a run's settings, they read from
 * the run's record.
 */
import { z } from 'zod';
import type { CliOption } from './cli-options.js';

/** The settings each named variant stands for; every key a variant leaves out takes its default. */
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
const VARIANT_NAMES = Object.keys(GRPO_VARIANTS) as [GrpoVariant, ...GrpoVariant[]];

/** A field of the declaration: its type and range, its default, what it means (the config's doc and the flag's help). */
interface Field<T extends z.ZodType = z.ZodType> {
  type: T;
  default: z.output<T>;
  doc: string;
}
const field = <T extends z.ZodType>(type: T, dflt: z.output<T>, doc: string): Field<T> => ({ type, default: dflt, doc });

/** Every GRPO setting: the one declaration. */
const FIELDS = {
  variant: field(z.enum(VARIANT_NAMES), 'grpo', "a paper's settings at once: grpo, dr_grpo, dapo or gspo (keys given explicitly win over the variant's)"),
  scaleRewards: field(z.enum(['group', 'batch', 'none']), 'group', "what advantages are divided by: the group's std, the batch's, or nothing"),
  epsilon: field(z.number().min(0), 0.2, 'the lower clip range of the token ratio (1 - epsilon)'),
  epsilonHigh: field(z.number().min(0), 0.3, "the upper clip range of the token ratio (1 + epsilonHigh; DAPO's clip-higher)"),
  beta: field(z.number().min(0), 0, 'the KL coefficient to the frozen reference policy; 0: no reference model at all'),
  lossAggregation: field(
    z.enum(['token-mean', 'seq-mean', 'token-sum-norm']),
    'token-mean',
    "how token losses add up: every token of the batch (token-mean), per sequence then over sequences (seq-mean), or Dr.GRPO's sum over a constant (token-sum-norm)",
  ),
  lossNormTokens: field(
    z.number().int().min(1).nullable(),
    null,
    "token-sum-norm's constant per sequence (Dr.GRPO's MAX_TOKENS); null: the run's model.maxTokens",
  ),
  skipZeroStdGroups: field(z.boolean(), false, 'leave groups whose credits are all equal out of the loss (they carry no signal)'),
  importanceSampling: field(
    z.enum(['token', 'sequence']),
    'token',
    "a ratio per token (PPO/GRPO) or GSPO's length-normalised ratio per sequence (TRL importance_sampling_level)",
  ),
  sequenceEpsilon: field(z.number().min(0), 3e-4, "GSPO's lower clip range around a sequence ratio (much tighter than the token one)"),
  sequenceEpsilonHigh: field(z.number().min(0), 4e-4, "GSPO's upper clip range around a sequence ratio"),
  dynamicSampling: field(
    z.boolean(),
    false,
    "DAPO's dynamic sampling: drop groups whose rollouts' final rewards are all equal and refill the batch with fresh tasks",
  ),
  dynamicSamplingRounds: field(z.number().int().min(0), 3, "at most this many extra rounds of fresh tasks per step (verl's max_num_gen_batches - 1)"),
  ratioBase: field(
    z.enum(['sampler', 'update']),
    'update',
    "the PPO ratio's old log-probs: the update's own forward pass before the weights change (the sampler's enter through tisCap), or the gateway's recorded ones",
  ),
  tisCap: field(
    z.number().min(1).nullable(),
    3,
    "with ratioBase update: each token's loss weighted by min(exp(update - sampler), tisCap) (TRL's vLLM correction); null: no weight",
  ),
} satisfies Record<string, Field>;
type Fields = typeof FIELDS;
export type GrpoKey = keyof Fields;
const KEYS = Object.keys(FIELDS) as GrpoKey[];

/** Every GRPO setting, each with its default (what the trainer and the loss read once resolved). */
export const GrpoSettingsSchema = z
  .object(
    Object.fromEntries(KEYS.map((k) => [k, (FIELDS[k].type as z.ZodType).default(FIELDS[k].default as never).describe(FIELDS[k].doc)])) as {
      [K in GrpoKey]: z.ZodDefault<Fields[K]['type']>;
    },
  )
  .strict();
export type GrpoSettings = z.output<typeof GrpoSettingsSchema>;

/** Settings as given (train.yaml's `grpo:`, a policy's own, the flags): any of them, or none; nothing filled in. */
export const GrpoGivenSchema = z
  .object(
    Object.fromEntries(KEYS.map((k) => [k, FIELDS[k].type.optional().describe(FIELDS[k].doc)])) as {
      [K in GrpoKey]: z.ZodOptional<Fields[K]['type']>;
    },
  )
  .strict();
export type GrpoGiven = z.output<typeof GrpoGivenSchema>;

/** `training.grpo`: the settings given, resolved (the defaults, under the variant's settings, under the keys given). */
export const GrpoConfig = GrpoGivenSchema.transform((given): GrpoSettings => resolveGrpo(given));
export type GrpoConfigInput = z.input<typeof GrpoConfig>;

/** Each setting's default. */
export const GRPO_DEFAULTS: Omit<GrpoSettings, 'variant'> = (({ variant: _, ...rest }) => rest)(GrpoSettingsSchema.parse({}));

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

/** The settings an update's loss reads, as the engine's loss record carries them (protocol/engine.ts TrainLoss). */
export const GRPO_LOSS_KEYS = [
  'epsilon',
  'epsilonHigh',
  'beta',
  'lossAggregation',
  'lossNormTokens',
  'importanceSampling',
  'sequenceEpsilon',
  'sequenceEpsilonHigh',
  'ratioBase',
  'tisCap',
] as const satisfies readonly GrpoKey[];
/** Those settings as the loss record carries them: each one required (the daemon sends them resolved; engines hold no defaults). */
export const GrpoLossSettings = z
  .object(
    Object.fromEntries(GRPO_LOSS_KEYS.map((k) => [k, (FIELDS[k].type as z.ZodType).describe(FIELDS[k].doc)])) as { [K in GrpoLossKey]: Fields[K]['type'] },
  )
  .strict();
type GrpoLossKey = (typeof GRPO_LOSS_KEYS)[number];
export type GrpoLossSettings = z.output<typeof GrpoLossSettings>;

/** `lossAggregation` -> `loss-aggregation`. */
type Kebab<S extends string> = S extends `${infer H}${infer T}` ? `${H extends Lowercase<H> ? H : `-${Lowercase<H>}`}${Kebab<T>}` : S;
const kebab = (s: string) => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
export type GrpoFlagName = `grpo-${Kebab<GrpoKey>}`;

/** What a setting's flag takes, read from its type: a number, a number or `null`, true/false, or one of its values. */
function flagOf(k: GrpoKey): CliOption & { config: `training.grpo.${GrpoKey}` } {
  const { type, default: dflt, doc } = FIELDS[k];
  const def = (type as z.ZodType)._zod.def as { type: string; innerType?: z.ZodType; entries?: Record<string, string> };
  const inner = def.type === 'nullable' ? (def.innerType!._zod.def as { type: string }) : def;
  const config = `training.grpo.${k}` as const;
  const help = `${doc} (default ${dflt === null ? 'null' : String(dflt)})`;
  if (def.type === 'enum') return { type: 'string', arg: Object.values(def.entries!).join('|'), help, config };
  if (inner.type === 'boolean') return { type: 'string', arg: 'true|false', help, config, parse: 'boolean' };
  if (def.type === 'nullable') return { type: 'string', arg: 'X|null', help, config, parse: 'nullable-number' };
  return { type: 'string', arg: 'X', help, config, parse: 'number' };
}

/** `agl train`'s --grpo-* flags, one per setting (`--grpo-epsilon-high 0.28`), each into `training.grpo.<key>`. */
export function grpoFlags(): { [K in GrpoKey as `grpo-${Kebab<K>}`]: CliOption & { type: 'string'; config: `training.grpo.${K}` } } {
  return Object.fromEntries(KEYS.map((k) => [`grpo-${kebab(k)}`, flagOf(k)])) as never;
}
