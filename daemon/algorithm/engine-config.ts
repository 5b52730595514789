/**
 * The `engine` section of the training config (train.yaml, and the flags of agl train / sft / serve): which engine
 * holds, samples and trains the policy. Kept apart from config.ts so that the daemon can read it without loading
 * the training code (and TF.js).
 */
import { z } from 'zod';

/** Which engine holds, samples and trains the policy (policy-contract.ts); the daemon's side is the same for both. */
/**
 * Sampling from another server (a vLLM on GPUs, or another `agl serve --model`): the gateway forwards the agents'
 * calls there and records the token ids and log-probs it returns; after each update the engine's weights are saved
 * where that server can read them and it is told to load them.
 */
export const SamplerSection = z.object({
  /** OpenAI-compatible base URL (ending in /v1) of a server that returns token ids (vLLM: return_token_ids). */
  url: z.string().url(),
  /** The model name it serves the policy under. */
  model: z.string().min(1),
  /** Environment variable with its API key (sent as a bearer token); allowed for this run's gateway. */
  apiKeyEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).nullable().default(null),
  /** How each update reaches it; null: it keeps the weights it started with (a frozen sampler). */
  push: z.object({
    /** A folder both can read: each update is saved as <dir>/step-<n> (the last two are kept). */
    dir: z.string().min(1),
    /** POSTed after each save, with `body`'s {dir} and {step} filled in (JSON-escaped). */
    url: z.string().url(),
    /** agl serve: {"dir": "{dir}"} (the default). vLLM LoRA: {"lora_name": "policy", "lora_path": "{dir}", "load_inplace": true}. */
    body: z.string().default('{"dir": "{dir}"}'),
    /** Environment variable with a bearer token for `url` (agl serve: its token file's content). */
    tokenEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).nullable().default(null),
  }).strict().nullable().default(null),
}).strict();
export type SamplerConfig = z.infer<typeof SamplerSection>;

export const EngineSection = z.object({
  /** `tfjs`: in this process (the built-in models, a laptop); `torch`: PyTorch + transformers in a child process (real models, GPUs, ranks). */
  kind: z.enum(['tfjs', 'torch']).default('tfjs'),
  /** torch: data-parallel ranks (torchrun + DDP: gloo on CPU, NCCL on CUDA). */
  procs: z.number().int().min(1).max(1024).default(1),
  /** torch: `cpu`, `cuda` (rank r on GPU r) or `auto` (CUDA when torch sees a GPU). */
  device: z.enum(['cpu', 'cuda', 'auto']).default('cpu'),
  /** torch: the weights' dtype (AdamW moments stay float32). */
  dtype: z.enum(['float32', 'bfloat16', 'float16']).default('float32'),
  /** torch: transformers' attention implementation. */
  attention: z.enum(['sdpa', 'eager']).default('sdpa'),
  /** torch: the Python to run (default: AGL_PYTHON, else the venv of `agl engine install torch`, else python3). */
  python: z.string().nullable().default(null),
  /** torch: threads per rank (0: torch's default; torchrun sets 1 per rank). */
  threads: z.number().int().min(0).default(0),
  /** Sample from another server instead of the engine (either engine): see SamplerSection. */
  sampler: SamplerSection.nullable().default(null),
}).strict();

export type EngineConfig = z.infer<typeof EngineSection>;

/** openPolicy's engine options for a config's engine section. */
export function engineOptions(e: EngineConfig, o: { dataDir?: string; log?: (line: string) => void } = {}) {
  return {
    engine: e.kind,
    torch: { procs: e.procs, device: e.device, dtype: e.dtype, attn: e.attention, python: e.python, threads: e.threads, dataDir: o.dataDir, log: o.log },
  };
}

