/**
 * The engine flags `agl train`, `agl sft` and `agl serve` share (one table: help text, parseArgs options, and the
 * config's `engine` section they fill in).
 */
import { EngineSection, type EngineConfig } from '../algorithm/engine-config.js';

export const ENGINE_HELP = `  --engine E          tfjs (default: in this process) or torch (PyTorch + transformers in a child process)
  --procs N           torch: data-parallel ranks (torchrun + DDP; gloo on CPU, NCCL on CUDA), default 1
  --device D          torch: cpu (default), cuda (rank r on GPU r) or auto
  --dtype T           torch: float32 (default), bfloat16 or float16 weights
  --python P          torch: the Python to run (default: AGL_PYTHON, else the venv of agl engine install torch)
`;

export const ENGINE_OPTIONS = {
  engine: { type: 'string' }, procs: { type: 'string' }, device: { type: 'string' }, dtype: { type: 'string' }, python: { type: 'string' },
} as const;

export interface EngineFlags { engine?: string; procs?: string; device?: string; dtype?: string; python?: string }

/** The `engine` settings the flags give (only those given; a config file or defaults fill in the rest). */
export function engineOverrides(f: EngineFlags): Partial<EngineConfig> {
  let procs: number | undefined;
  if (f.procs !== undefined) {
    procs = Number(f.procs);
    if (!Number.isInteger(procs) || procs < 1) throw new Error(`--procs must be a whole number >= 1, got '${f.procs}'`);
  }
  const given = Object.fromEntries(Object.entries({ kind: f.engine, procs, device: f.device, dtype: f.dtype, python: f.python }).filter(([, v]) => v !== undefined));
  // Checked here so that a bad value names its flag: --engine must be tfjs or torch, ...
  const r = EngineSection.partial().safeParse(given);
  if (!r.success) {
    const i = r.error.issues[0]!;
    const flag = { kind: 'engine' }[String(i.path[0])] ?? String(i.path[0]);
    throw new Error(`--${flag}: ${i.message}`);
  }
  return given as Partial<EngineConfig>;
}

/** A full engine section: the flags over the defaults. */
export function engineFromFlags(f: EngineFlags): EngineConfig {
  return EngineSection.parse(engineOverrides(f));
}
