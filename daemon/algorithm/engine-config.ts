/**
 * The `engine` section of the training config (train.yaml, and the flags of agl train / sft / serve): which engine
 * holds, samples and trains the policy. Kept apart from config.ts so that the daemon can read it without loading
 * the training code (and TF.js).
 */
import { z } from 'zod';

/** Which engine holds, samples and trains the policy (policy-contract.ts); the daemon's side is the same for both. */
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
}).strict();

export type EngineConfig = z.infer<typeof EngineSection>;

/** openPolicy's engine options for a config's engine section. */
export function engineOptions(e: EngineConfig, o: { dataDir?: string; log?: (line: string) => void } = {}) {
  return {
    engine: e.kind,
    torch: { procs: e.procs, device: e.device, dtype: e.dtype, attn: e.attention, python: e.python, threads: e.threads, dataDir: o.dataDir, log: o.log },
  };
}

