/**
 * Reading training settings: the `--config train.yaml` file under the flags' overrides, parsed with the one schema
 * (protocol/train-config.ts: sections model, training, runtime, engine). Flags override the file; the file
 * overrides the defaults. Unknown keys are errors that name the key, so a typo never silently trains with a default.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { JudgeSection, type JudgeSettings } from '../../protocol/judge-settings.js';
import { DataSection, TrainConfig, type TrainConfigInput } from '../../protocol/train-config.js';

export { engineOptions } from './engine-config.js';
export {
  EngineSection,
  ModelSection,
  RuntimeSection,
  SamplerSection,
  TrainConfig,
  TrainingSection,
  type EngineConfig,
  type SamplerConfig,
  type TrainConfigInput,
} from '../../protocol/train-config.js';

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
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`cannot read the config file ${path}: ${(e as Error).message}`, { cause: e });
  }
  try {
    return parseYaml(text) ?? {};
  } catch (e) {
    throw new Error(`the config file ${path} is not valid YAML: ${(e as Error).message}`, { cause: e });
  }
}

/** Defaults <- file <- overrides (from flags). */
export function resolveTrainConfig(file: string | null, overrides: TrainConfigInput = {}): TrainConfig {
  const fromFile = file ? readConfigFile(file) : {};
  return parseTrainConfig(deepMerge(deepMerge({}, fromFile), overrides), file ?? 'config');
}

/**
 * A judge's settings from where they can be given, each over the one before: `base` (a run's recorded judge:), the
 * `configFile`'s judge: section (its rubric file found from the config file's folder), the --judge-* flags (`given`,
 * from configOverrides; a rubric file from the working directory). Null when none of them names a judge.
 */
export function judgeSettingsFrom(
  base: JudgeSettings | null,
  configFile: string | undefined,
  given: Record<string, unknown> | undefined,
): JudgeSettings | null {
  let from: unknown = base;
  if (configFile) {
    const fromFile = resolveTrainConfig(configFile).judge;
    if (fromFile && typeof fromFile.rubric === 'object' && !isAbsolute(fromFile.rubric.file))
      fromFile.rubric = { file: resolve(dirname(configFile), fromFile.rubric.file) };
    from = fromFile ?? from;
  }
  const flags = given ? { ...given } : undefined;
  if (flags && typeof flags.rubric === 'object' && flags.rubric) flags.rubric = { file: resolve((flags.rubric as { file: string }).file) };
  if (!from && !flags) return null;
  const r = JudgeSection.safeParse(deepMerge(from ?? {}, flags ?? {}));
  if (!r.success) throw new Error(`invalid judge settings: ${r.error.issues.map((i) => `judge.${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return r.data;
}

/** The task files a config file names (its `data:` section), resolved from the file's folder; a missing one is undefined. */
export function configData(file: string): { train?: string; val?: string } {
  const raw = readConfigFile(file) as { data?: unknown };
  const r = DataSection.safeParse(raw?.data ?? {});
  if (!r.success) throw new Error(`invalid training config ${file}: data: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  const at = (p: string | null) => (p === null ? undefined : resolve(dirname(file), p));
  return { train: at(r.data.train), val: at(r.data.val) };
}
