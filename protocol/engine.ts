/**
 * The policy engines' boundary: what a training loss is (data, so that every engine implements the one
 * definition: daemon/model/loss.ts for TF.js, engines/torch/agl_torch/loss.py for PyTorch), and the messages the
 * daemon and an engine process exchange (one JSON object per line over a Unix socket; the torch engine is the
 * first such process).
 *
 * GRPO family, per completion token t of sequence i with advantage A_i:
 *   r_t  = exp(logp_t - old_t)                           importanceSampling 'token'
 *        = exp(mean over i's tokens of (logp - old))     importanceSampling 'sequence' (GSPO)
 *   pg_t = max(-A r_t, -A clip(r_t, 1 - clipLow, 1 + clipHigh))
 *   kl_t = exp(ref_t - logp_t) - (ref_t - logp_t) - 1    (k3, only when beta > 0)
 *   loss = aggregate(pg_t + beta kl_t): token-mean (sum / tokens of the batch), seq-mean (mean per sequence, then
 *          over sequences), token-sum-norm (sum / (normTokens x sequences), Dr.GRPO)
 * nll: the token-mean negative log-likelihood of the completions over the whole batch (SFT).
 */
import { z } from 'zod';

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

export const LossAggregation = z.enum(['token-mean', 'seq-mean', 'token-sum-norm']);

export const TrainLossSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('nll') }).strict(),
  z
    .object({
      kind: z.literal('grpo'),
      /** The clip range around the ratio (for sequence ratios: GSPO's much tighter one). */
      clipLow: z.number().min(0),
      clipHigh: z.number().min(0),
      beta: z.number().min(0),
      aggregation: LossAggregation,
      /** token-sum-norm's constant per sequence (the generation budget per call); null otherwise. */
      normTokens: z.number().int().min(1).nullable(),
      importanceSampling: z.enum(['token', 'sequence']),
      /** One per pair given to trainStep, in the same order. */
      samples: z.array(GrpoSampleSchema),
    })
    .strict(),
]);
export type TrainLoss = z.infer<typeof TrainLossSchema>;

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
}
export function emptyLossStats(): LossStats {
  return { tokens: 0, clipped: 0, klSum: 0, entropySum: 0, ratioSum: 0, sequences: 0, lossSum: 0 };
}
/** Per-token means of the statistics the trainer reports. */
export function summarizeLossStats(s: LossStats): { clipRatio: number; kl: number; entropy: number; ratioMean: number; loss: number } {
  const n = Math.max(1, s.tokens);
  return { clipRatio: s.clipped / n, kl: s.klSum / n, entropy: s.entropySum / n, ratioMean: s.ratioSum / n, loss: s.lossSum };
}

// ---- the engine process protocol -------------------------------------------------------------------------------

/** AdamW settings every engine shares (saved in optimizer.safetensors' metadata as "config"). */
export const OptimizerSettingsSchema = z
  .object({
    lr: z.number().positive(),
    beta1: z.number().min(0).lt(1),
    beta2: z.number().min(0).lt(1),
    eps: z.number().positive(),
    weightDecay: z.number().min(0),
    gradClip: z.number().min(0),
    microBatchSize: z.number().int().min(1),
  })
  .strict();
export type OptimizerSettings = z.infer<typeof OptimizerSettingsSchema>;

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
    /** LoRA adapters added so far (describe): their update counts and sizes. */
    adapters: z.record(z.string(), z.object({ step: z.number().int(), parameters: z.number().int() })).optional(),
  }),
});
export type EngineHello = z.infer<typeof EngineHelloSchema>;

export interface EngineGenerateParams {
  prompts: number[][];
  maxTokens: number;
  temperature: number;
  topP?: number;
  topK?: number;
  stop?: string[];
  seed: number;
  /** End-of-sequence ids: generation stops after one (it is the last token returned). */
  eos: number[];
  /** Send a `tokens` event per decoding step. */
  stream: boolean;
  /** Sample with this LoRA adapter (none: the model itself, every adapter off). */
  adapter?: string;
}
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
export interface EngineTrainResult {
  loss: number;
  gradNorm: number;
  tokens: number;
  seconds: number;
  stats: LossStats;
}

/** Request methods, their parameters and results. */
export interface EngineMethods {
  generate: { params: EngineGenerateParams; result: EngineGeneration[] };
  score: { params: { pairs: { promptIds: number[]; completionIds: number[] }[]; adapter?: string }; result: number[][] };
  train_step: {
    params: { pairs: { promptIds: number[]; completionIds: number[] }[]; loss: TrainLoss; optimizer: OptimizerSettings; adapter?: string };
    result: EngineTrainResult;
  };
  save: { params: { dir: string; adapter?: string }; result: { dir: string } };
  /** A LoRA adapter on the model (which is frozen from then on): new (`lora`'s shape) or from a saved adapter folder (`init`). */
  add_adapter: { params: { name: string; init: string | null; lora: LoraSettings; optimizer: Partial<OptimizerSettings> }; result: EngineAdapterInfo };
  set_optimizer: { params: Partial<OptimizerSettings>; result: OptimizerSettings };
  describe: { params: Record<string, never>; result: EngineHello['model'] };
  shutdown: { params: Record<string, never>; result: null };
}
export type EngineMethod = keyof EngineMethods;

/** Lines an engine sends: the hello, a fatal load error, a streamed step, a result or an error. */
export type EngineMessage =
  | { event: 'ready'; data: EngineHello }
  | { event: 'fatal'; data: { message: string; type?: string } }
  | { id: number; event: 'tokens'; data: [number, number, number][] }
  | { id: number; result: unknown }
  | { id: number; error: { message: string; type?: string; fatal?: boolean } };
