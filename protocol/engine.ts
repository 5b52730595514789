/**
 * The policy engines' boundary: what a training loss is (data, so that every engine implements the one
 * definition: daemon/model/loss.ts for TF.js, engines/torch/agl_torch/loss.py for PyTorch), and the messages the
 * daemon and an engine process exchange (one JSON object per line over a Unix socket; the torch engine is the
 * first such process).
 *
 * GRPO family, per completion token t of sequence i with advantage A_i:
 *   r_t  = exp(logp_t - old_t)                           importanceSampling 'token'
 *        = exp(mean over i's tokens of (logp - old))     importanceSampling 'sequence' (GSPO)
 *   old_t = the sampler's log-prob (ratioBase 'sampler'), or the update's own before the weights change (ratioBase
 *           'update': the update's numerics, so the ratio starts at exactly 1 whatever the sampler's precision)
 *   pg_t = max(-A r_t, -A clip(r_t, 1 - lo, 1 + hi))      (lo, hi) = (epsilon, epsilonHigh) for token ratios,
 *                                                        (sequenceEpsilon, sequenceEpsilonHigh) for sequence ones
 *   w_t  = min(exp(old_t - sampler_t), tisCap)           ratioBase 'update' with tisCap: truncated importance
 *                                                        sampling (TRL's vLLM correction, token_truncate)
 *   kl_t = exp(ref_t - logp_t) - (ref_t - logp_t) - 1    (k3, only when beta > 0)
 *   loss = aggregate(w_t pg_t + beta kl_t): token-mean (sum / tokens of the batch), seq-mean (mean per sequence,
 *          then over sequences), token-sum-norm (sum / (lossNormTokens x sequences), Dr.GRPO)
 * The loss record carries GRPO's settings under their one declaration's names (protocol/grpo-settings.ts
 * GrpoLossSettings): what train.yaml calls `epsilonHigh` the engines read as `epsilonHigh`.
 * nll: the token-mean negative log-likelihood of the completions over the whole batch (SFT).
 */
import { z } from 'zod';
import { GrpoLossSettings } from './grpo-settings.js';

export const GrpoSampleSchema = z
  .object({
    advantage: z.number(),
    /** Log-probs of the completion's tokens under the policy that sampled it (the gateway's record). */
    oldLogprobs: z.array(z.number()),
    /** Under the frozen reference policy (needed when beta > 0). */
    refLogprobs: z.array(z.number()).nullable().optional(),
  })
  .strict();
export type GrpoSample = z.infer<typeof GrpoSampleSchema>;

export const TrainLossSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('nll') }).strict(),
  // GRPO's settings the loss reads (their one declaration: protocol/grpo-settings.ts), and the samples.
  GrpoLossSettings.extend({
    kind: z.literal('grpo'),
    /** One per pair given to trainStep, in the same order. */
    samples: z.array(GrpoSampleSchema),
  }).strict(),
]);
export type TrainLoss = z.infer<typeof TrainLossSchema>;
export type GrpoTrainLoss = Extract<TrainLoss, { kind: 'grpo' }>;

/** The clip range of a GRPO loss's ratios: its token epsilons, or GSPO's much tighter sequence ones. */
export function clipRange(
  loss: Pick<GrpoTrainLoss, 'importanceSampling' | 'epsilon' | 'epsilonHigh' | 'sequenceEpsilon' | 'sequenceEpsilonHigh'>,
): [number, number] {
  return loss.importanceSampling === 'sequence' ? [loss.sequenceEpsilon, loss.sequenceEpsilonHigh] : [loss.epsilon, loss.epsilonHigh];
}

/** Running sums an engine fills in while it computes a loss (over every micro-batch, and every rank). */
export interface LossStats {
  /** Completion tokens in the loss. */
  tokens: number;
  /** Tokens whose clipped term was the larger (the clip bound). */
  clipped: number;
  klSum: number;
  entropySum: number;
  ratioSum: number;
  sequences: number;
  /** The batch loss (sum of the micro-batches' shares). */
  lossSum: number;
  /** Sum and largest |update's log-prob - sampler's log-prob| over the tokens: how far the sampler's numerics are. */
  gapSum: number;
  gapMax: number;
  /** Tokens whose truncated importance weight hit tisCap. */
  tisCapped: number;
}
export function emptyLossStats(): LossStats {
  return { tokens: 0, clipped: 0, klSum: 0, entropySum: 0, ratioSum: 0, sequences: 0, lossSum: 0, gapSum: 0, gapMax: 0, tisCapped: 0 };
}
/** Pools statistics of several updates (sums add, the largest gap is the largest). */
export function addLossStats(into: LossStats, s: LossStats): LossStats {
  for (const k of Object.keys(into) as (keyof LossStats)[]) into[k] = k === 'gapMax' ? Math.max(into[k], s[k] ?? 0) : into[k] + (s[k] ?? 0);
  return into;
}
/** Per-token means of the statistics the trainer reports. */
export function summarizeLossStats(s: LossStats): {
  clipRatio: number;
  kl: number;
  entropy: number;
  ratioMean: number;
  loss: number;
  logprobGap: number;
  logprobGapMax: number;
  tisCappedRatio: number;
} {
  const n = Math.max(1, s.tokens);
  return {
    clipRatio: s.clipped / n,
    kl: s.klSum / n,
    entropy: s.entropySum / n,
    ratioMean: s.ratioSum / n,
    loss: s.lossSum,
    logprobGap: (s.gapSum ?? 0) / n,
    logprobGapMax: s.gapMax ?? 0,
    tisCappedRatio: (s.tisCapped ?? 0) / n,
  };
}

// ---- the engine process protocol -------------------------------------------------------------------------------

/**
 * AdamW settings every engine shares. A policy's configured settings (DEFAULT_OPTIMIZER under a model folder's saved
 * ones, saved in optimizer.safetensors' metadata as "config", under those it is opened with) are what an update without
 * settings of its own uses; settings sent with an update hold for that update only (PolicyModel.trainStep). The learning
 * rate is an update's alone: a policy is opened without one and its checkpoints save none, so an update that carries
 * none is refused (updateSettings), never run at a rate nobody chose.
 */
export const OptimizerSettingsSchema = z
  .object({
    /** Absent from a policy's configured settings: it comes with each update. */
    lr: z.number().positive().max(1).optional(),
    beta1: z.number().min(0).lt(1),
    beta2: z.number().min(0).lt(1),
    eps: z.number().positive(),
    weightDecay: z.number().min(0).max(1),
    gradClip: z.number().min(0),
    /** Sequences per micro-batch (bounded memory; gradients accumulate across micro-batches). */
    microBatchSize: z.number().int().min(1),
  })
  .strict();
export type OptimizerSettings = z.infer<typeof OptimizerSettingsSchema>;

/**
 * The optimizer's defaults, declared once for both engines (the torch engine gets them from the daemon at start); no
 * learning rate: each update carries its own (the trainer's schedule, agl sft's --lr).
 */
export const DEFAULT_OPTIMIZER: Readonly<OptimizerSettings> = Object.freeze({
  beta1: 0.9,
  beta2: 0.95,
  eps: 1e-8,
  weightDecay: 0.01,
  gradClip: 1.0,
  microBatchSize: 16,
});

/**
 * A policy's configured settings: DEFAULT_OPTIMIZER under each layer in turn (a folder's saved settings, then those it
 * is opened with), checked; a value out of range is an error naming the setting.
 */
export function configuredOptimizer(...layers: (Partial<OptimizerSettings> | null | undefined)[]): OptimizerSettings {
  const merged: Record<string, unknown> = { ...DEFAULT_OPTIMIZER };
  for (const layer of layers) for (const [k, v] of Object.entries(layer ?? {})) if (v !== undefined) merged[k] = v;
  const r = OptimizerSettingsSchema.safeParse(merged);
  if (r.success) return r.data;
  throw new Error(`optimizer settings: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
}

/** The settings one update runs with: the policy's configured ones under the update's own, a learning rate among them. */
export type UpdateOptimizerSettings = OptimizerSettings & { lr: number };

/**
 * What one update runs with (both engines): `own` (the settings it carries; undefined values ignored) over the
 * policy's configured settings. Refused, naming `lr`, when neither has a learning rate.
 */
export function updateSettings(configured: OptimizerSettings, own: Partial<OptimizerSettings>): UpdateOptimizerSettings {
  const merged: OptimizerSettings = { ...configured };
  for (const [k, v] of Object.entries(own)) if (v !== undefined) Object.assign(merged, { [k]: v });
  if (merged.lr === undefined)
    throw new Error(
      'train step: lr: the update carries no learning rate, and a policy has none of its own: send it with the update (trainStep(pairs, loss, { lr }))',
    );
  return merged as UpdateOptimizerSettings;
}

/**
 * A LoRA adapter's shape (peft's LoraConfig): with `engine.lora` and `policies:`, every role policy is one adapter on
 * the one frozen base model, served and trained by naming it (the torch engine).
 */
export const LoraSettingsSchema = z
  .object({
    /** The adapter matrices' rank r. */
    rank: z.number().int().min(1).max(1024).default(8),
    /** The scale numerator: the update is (alpha / r) B A. */
    alpha: z.number().positive().default(16),
    dropout: z.number().min(0).lt(1).default(0),
    /** Module names to adapt (e.g. [q_proj, v_proj]); null: peft's default for the model's family (GPT-2: c_attn; Llama, Qwen2: q_proj, v_proj). */
    targetModules: z.array(z.string().min(1)).min(1).nullable().default(null),
  })
  .strict();
export type LoraSettings = z.infer<typeof LoraSettingsSchema>;

/** What an engine process says once its model is loaded (the first line it sends). */
export const EngineHelloSchema = z.object({
  engine: z.string(),
  pid: z.number().int(),
  /** torch's device of rank 0: `cpu`, `cuda:0`. */
  device: z.string(),
  ranks: z.number().int().min(1),
  /** torch.distributed backend when ranks > 1 (gloo on CPU, nccl on CUDA). */
  backend: z.string().nullable(),
  threads: z.number().int(),
  python: z.string(),
  torch: z.string(),
  transformers: z.string(),
  cuda: z.string().nullable(),
  cudaAvailable: z.boolean(),
  gpus: z.array(z.string()),
  model: z.object({
    name: z.string(),
    family: z.string(),
    modelType: z.string().nullable().optional(),
    parameters: z.number().int(),
    contextLength: z.number().int().min(1),
    vocabSize: z.number().int(),
    dtype: z.string(),
    optimizer: OptimizerSettingsSchema,
    step: z.number().int(),
    /** What it trains: full weights, LoRA adapters only (a frozen base), or nothing (serving). */
    trainable: z.enum(['full', 'adapters', 'none']).optional(),
    /** Float32 master weights (and moments) under lower-precision parameters. */
    masterWeights: z.boolean().optional(),
    gradientCheckpointing: z.boolean().optional(),
    /** Several ranks: DDP (`none`) or FSDP2 (`fsdp`). */
    shard: z.enum(['none', 'fsdp']).optional(),
    /** How it samples: `graphs` (the lean decoder's steps as CUDA graphs), `lean` (its own cache, eager), `eager` (transformers' forward). */
    decoder: z.string().optional(),
    /** LoRA adapters on the model (none at start): their update counts and sizes. */
    adapters: z.record(z.string(), z.object({ step: z.number().int(), parameters: z.number().int() })).optional(),
  }),
});
export type EngineHello = z.infer<typeof EngineHelloSchema>;

// Each request's parameters, declared once: the daemon's engine client sends them; the torch engine parses them into
// the typed records of engines/torch/agl_torch/messages.py, and test/engine/messages.test.ts holds the two to the same
// fields, types and required keys.

const TokenIds = z.array(z.number().int());
export const EnginePairSchema = z.object({ promptIds: TokenIds, completionIds: TokenIds }).strict();

export const EngineGenerateParamsSchema = z
  .object({
    prompts: z.array(TokenIds),
    maxTokens: z.number().int().min(1),
    temperature: z.number().min(0),
    topP: z.number().gt(0).max(1).optional(),
    topK: z.number().int().min(0).optional(),
    stop: z.array(z.string()).optional(),
    seed: z.number().int(),
    /** End-of-sequence ids: generation stops after one (it is the last token returned). */
    eos: TokenIds,
    /** Send a `tokens` event per decoding step. */
    stream: z.boolean(),
    /** Sample with this LoRA adapter (none: the model itself, every adapter off). */
    adapter: z.string().optional(),
  })
  .strict();
export type EngineGenerateParams = z.input<typeof EngineGenerateParamsSchema>;

export const EngineParamsSchemas = {
  generate: EngineGenerateParamsSchema,
  score: z.object({ pairs: z.array(EnginePairSchema), adapter: z.string().optional() }).strict(),
  train_step: z
    .object({
      pairs: z.array(EnginePairSchema).min(1),
      loss: TrainLossSchema,
      /**
       * This update's settings, all of them (the policy's configured settings under the update's own, such as its
       * scheduled learning rate): they hold for this update only. Absent: the update uses the configured settings.
       */
      optimizer: OptimizerSettingsSchema.optional(),
      adapter: z.string().optional(),
    })
    .strict(),
  save: z.object({ dir: z.string().min(1), adapter: z.string().optional() }).strict(),
  /**
   * A LoRA adapter on the model (which is frozen from then on): new (`lora`'s shape) or from a saved adapter folder
   * (`init`), with its configured optimizer settings, all of them (the daemon reads what the folder saved).
   */
  add_adapter: z.object({ name: z.string(), init: z.string().nullable(), lora: LoraSettingsSchema, optimizer: OptimizerSettingsSchema }).strict(),
  shutdown: z.object({}).strict(),
} as const;

export interface EngineAdapterInfo {
  name: string;
  /** Trainable (LoRA) parameters. */
  parameters: number;
  /** Its update count (from a saved adapter: where it left off). */
  step: number;
  rank: number;
  targetModules: string[];
  optimizer: OptimizerSettings;
}
export interface EngineGeneration {
  tokenIds: number[];
  logprobs: number[];
  finishReason: 'stop' | 'length';
}
/**
 * The most memory a policy's engine held during a train step (PolicyModel.trainStep's result): the torch engine's
 * EnginePeakMemory (`cuda` on a GPU, `rss` on CPU), or the TF.js engine's, `rss` (its tensors live in the process;
 * `tfjs` would be TF.js's own tensor bytes).
 */
export interface PeakMemory {
  bytes: number;
  kind: 'cuda' | 'rss' | 'tfjs';
}
/** What a policy's engine computes on, as a run records it (TrainingRunSummary.engine) and every view shows it. */
export interface EngineFacts {
  engine: 'tfjs' | 'torch';
  /** Where it computes: the TF.js backend (wasm, cpu, tensorflow, webgpu) or torch's device of rank 0 (cpu, cuda:0). */
  device: string;
  /** The weights' dtype. */
  dtype: string;
  /** Data-parallel ranks. */
  ranks: number;
  /** How they work together, with ranks > 1: torch.distributed's backend (gloo on CPU, nccl on CUDA), fsdp, the nodes. */
  backend?: string | null;
  /** What the run's peak memory measures (perf/peak_memory_mib), once an update reported it. */
  memory?: PeakMemory['kind'];
}
export interface EngineTrainResult {
  loss: number;
  gradNorm: number;
  tokens: number;
  seconds: number;
  stats: LossStats;
  /** The request's peak memory. */
  peakMemory?: EnginePeakMemory;
}
/** A request's peak memory: CUDA's allocator high-water mark, or the process's peak resident set on a CPU. */
export interface EnginePeakMemory {
  bytes: number;
  kind: 'cuda' | 'rss';
}

/** Request methods, their parameters and results. */
interface EngineResults {
  generate: EngineGeneration[];
  score: number[][];
  train_step: EngineTrainResult;
  save: { dir: string };
  add_adapter: EngineAdapterInfo;
  shutdown: null;
}
export type EngineMethods = { [M in keyof typeof EngineParamsSchemas]: { params: z.input<(typeof EngineParamsSchemas)[M]>; result: EngineResults[M] } };
export type EngineMethod = keyof EngineMethods;

/** Lines an engine sends: the hello, a fatal load error, a streamed step, a result or an error. */
export type EngineMessage =
  | { event: 'ready'; data: EngineHello }
  | { event: 'fatal'; data: { message: string; type?: string } }
  | { id: number; event: 'tokens'; data: [number, number, number][] }
  | { id: number; result: unknown; memory?: EnginePeakMemory }
  | { id: number; error: { message: string; type?: string; fatal?: boolean } };
