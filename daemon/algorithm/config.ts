/**
 * Training settings: one schema for `agl train` flags and the `--config train.yaml` file, whose sections
 * are `model` (which policy), `training` (GRPO, credit, schedule), `runtime` (workers, timeouts, where
 * checkpoints go) and `engine` (TF.js here, or PyTorch in a child process with its ranks and device). Flags override the file; the file overrides the defaults. Unknown keys are errors that
 * name the key, so a typo never silently trains with a default.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { CreditConfig } from './credit.js';
import { GrpoConfig } from './grpo.js';
import { EngineSection } from './engine-config.js';

export { EngineSection, engineOptions, type EngineConfig, type SamplerConfig } from './engine-config.js';

export const ModelSection = z.object({
  /** `builtin:0.8m`, `builtin:5m`, a Hugging Face model folder, or a checkpoint folder of ours. */
  name: z.string().default('builtin:0.8m'),
  /** Start from these weights (an `agl sft` or `agl train` checkpoint folder) instead of `name`'s. */
  init: z.string().nullable().default(null),
  temperature: z.number().min(0).max(5).default(1),
  topP: z.number().gt(0).max(1).optional(),
  maxTokens: z.number().int().min(1).default(32),
  /** Sampling for validation rollouts (0 = greedy). */
  valTemperature: z.number().min(0).max(5).default(0),
}).strict();

export const TrainingSection = z.object({
  learningRate: z.number().positive().default(1e-4),
  /** Linear learning-rate warm-up over the first steps: a fresh Adam state's first updates are full-size in every weight. */
  warmupSteps: z.number().int().min(0).default(0),
  /** Tasks per step; each task is rolled out `groupSize` times. */
  batchSize: z.number().int().min(1).default(16),
  groupSize: z.number().int().min(1).default(8),
  epochs: z.number().positive().default(1),
  /** Hard cap on steps (0 = epochs decide). */
  maxSteps: z.number().int().min(0).default(0),
  /** Stop after this many minutes of training (0 = no limit); a final validation still runs. */
  maxMinutes: z.number().min(0).default(0),
  /** Validate every K steps (0 = only at the start and the end). */
  valEvery: z.number().int().min(0).default(5),
  /** Validation tasks used (0 = all). */
  valSize: z.number().int().min(0).default(0),
  checkpointEvery: z.number().int().min(1).default(1),
  /** Agent names to train (selective optimization), a regular expression; null = all. */
  agentMatch: z.string().nullable().default(null),
  grpo: GrpoConfig.default(GrpoConfig.parse({})),
  credit: CreditConfig.default(CreditConfig.parse({})),
  /** AIR on/off: when false, `credit.air` rules are ignored. */
  air: z.boolean().default(true),
  seed: z.number().int().default(1),
}).strict();

export const RuntimeSection = z.object({
  workers: z.number().int().min(1).default(8),
  /** Seconds one rollout may run before it counts as failed (timeout). */
  rolloutTimeoutSeconds: z.number().positive().default(120),
  /** Where checkpoints go; default `<data dir>/runs/<run id>`. */
  checkpointDir: z.string().nullable().default(null),
  /** Model backend (`auto`, `wasm`, `cpu`, ...). */
  backend: z.string().default('auto'),
}).strict();

export const TrainConfig = z.object({
  model: ModelSection.default(ModelSection.parse({})),
  training: TrainingSection.default(TrainingSection.parse({})),
  runtime: RuntimeSection.default(RuntimeSection.parse({})),
  engine: EngineSection.default(EngineSection.parse({})),
}).strict();
export type TrainConfig = z.infer<typeof TrainConfig>;
export type TrainConfigInput = z.input<typeof TrainConfig>;
/** Deep merge of plain objects (arrays and scalars replace). */
export function deepMerge<T>(base: T, over: unknown): T {
  if (over === undefined) return base;
  if (typeof base !== 'object' || base === null || Array.isArray(base) || typeof over !== 'object' || over === null || Array.isArray(over)) return over as T;
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [k, v] of Object.entries(over)) out[k] = deepMerge(out[k], v);
  return out as T;
}

/** Parses a config with a readable error: `training.grpo.epsilon: expected number`. */
export function parseTrainConfig(input: unknown, where = 'config'): TrainConfig {
  const r = TrainConfig.safeParse(input ?? {});
  if (r.success) return r.data;
  const lines = r.error.issues.map((i) => `  ${i.path.join('.') || '(root)'}: ${i.message}`);
  throw new Error(`invalid training ${where}:\n${lines.join('\n')}`);
}

export function readConfigFile(path: string): unknown {
  let text: string;
  try { text = readFileSync(path, 'utf8'); } catch (e) { throw new Error(`cannot read the config file ${path}: ${(e as Error).message}`); }
  try { return parseYaml(text) ?? {}; } catch (e) { throw new Error(`the config file ${path} is not valid YAML: ${(e as Error).message}`); }
}

/** Defaults <- file <- overrides (from flags). */
export function resolveTrainConfig(file: string | null, overrides: TrainConfigInput = {}): TrainConfig {
  const fromFile = file ? readConfigFile(file) : {};
  return parseTrainConfig(deepMerge(deepMerge({}, fromFile), overrides), file ?? 'config');
}
