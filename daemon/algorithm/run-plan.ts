/**
 * What a training run starts from: its plan (a checkpoint to resume, or a fresh config from the file and the flags;
 * the task files) and its policy set opened on its engine (from the checkpoint when resuming, else from each
 * policy's starting weights). The first phase of a run (training-run.ts).
 */
import { appendFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { policySet } from '../../protocol/policy-set.js';
import { TorchAdapterModel } from '../model/torch-engine.js';
import { readCheckpoint } from './checkpoint.js';
import { engineOptions, resolveTrainConfig, type TrainConfig, type TrainConfigInput } from './config.js';
import { type OpenPolicySet, openPolicySet } from './open-policy-set.js';
import type { Task } from './rollouts.js';
import { readJsonlLines } from './sft-trainer.js';

/** What a run resumes from, or starts with: the checkpoint (if any), the config and the tasks. */
export interface RunPlan {
  ckpt: ReturnType<typeof readCheckpoint>;
  resumeDir: string | null;
  config: TrainConfig;
  train: Task[];
  val: Task[];
}

/** The tasks of a JSONL file (`what`: train or val, which names its flag in errors and its tasks without an id). */
export function loadTasks(path: string, what: string): Task[] {
  if (!existsSync(path)) throw new Error(`--${what} ${path}: no such file`);
  // A task's default id counts tasks (blank lines skipped); an error names the line an editor shows.
  return readJsonlLines<Record<string, unknown>>(path).map(({ line, value: input }, i) => {
    if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new Error(`${path}:${line}: a task must be a JSON object`);
    return { id: typeof input.id === 'string' || typeof input.id === 'number' ? String(input.id) : `${what}-${i + 1}`, input };
  });
}

/**
 * Resume (a run id, whose checkpoint dir the store knows, or a checkpoint folder) or a fresh config (`configFile`
 * under the flags' `overrides`); the tasks.
 */
export async function planRun(
  store: LightningStore,
  o: { resume?: string; configFile?: string; overrides: TrainConfigInput; train: string; val: string },
): Promise<RunPlan> {
  let resumeDir: string | null = null;
  if (o.resume) {
    const byRun = await store.getTrainingRun(o.resume);
    resumeDir = byRun?.checkpointDir ?? resolve(o.resume);
    if (!existsSync(join(resumeDir, 'state.json'))) throw new Error(`--resume ${o.resume}: no checkpoint found (looked in ${resumeDir})`);
  }
  const ckpt = resumeDir ? readCheckpoint(resumeDir) : null;
  const config: TrainConfig = ckpt ? resolveTrainConfig(null, ckpt.config as TrainConfigInput) : resolveTrainConfig(o.configFile ?? null, o.overrides);
  // A resumed run keeps its engine unless the flags name one (e.g. resuming a tfjs run on torch, or on more ranks).
  if (ckpt) config.engine = resolveTrainConfig(null, { ...(ckpt.config as TrainConfigInput), engine: { ...config.engine, ...o.overrides.engine } }).engine;
  if (!ckpt) resolveRubricFile(config, o.configFile ?? null, o.overrides);
  const train = loadTasks(o.train, 'train'),
    val = loadTasks(o.val, 'val');
  if (train.length === 0 || val.length === 0) throw new Error('--train and --val need at least one task each');
  return { ckpt, resumeDir, config, train, val };
}

/**
 * A judge's rubric file as an absolute path, so the recorded config (and a resumed run's) finds it from anywhere: one
 * given by --judge-rubric is relative to the working directory, one in train.yaml to the config file's folder.
 */
export function resolveRubricFile(config: TrainConfig, configFile: string | null, overrides: TrainConfigInput): void {
  const rubric = config.judge?.rubric;
  if (!config.judge || !rubric || typeof rubric === 'string' || isAbsolute(rubric.file)) return;
  const fromFlag = typeof overrides.judge?.rubric === 'object' || !configFile;
  config.judge.rubric = { file: fromFlag ? resolve(rubric.file) : resolve(dirname(configFile), rubric.file) };
}

/**
 * The run's policy set (protocol/policy-set.ts) on its engine: from the checkpoint when resuming (its policies must
 * serve the roles the config gives them), else from each policy's starting weights.
 */
export function openRunPolicies(
  { ckpt, resumeDir, config }: RunPlan,
  dataDir: string,
  engineLog: ((line: string) => void) | undefined,
): Promise<OpenPolicySet> {
  const engine = engineOptions(config.engine, { dataDir, log: engineLog });
  return openPolicySet(policySet(config), {
    open: { backend: config.runtime.backend, seed: config.training.seed, ...engine },
    resume: ckpt && resumeDir ? { ckpt, dir: resumeDir } : null,
  });
}

/** How each LoRA adapter of the set starts: fresh (the base's outputs), or continuing a saved adapter from its update count. */
export function adapterStarts(set: OpenPolicySet): string {
  return set.trained
    .map((p) => {
      const info = p.model instanceof TorchAdapterModel ? p.model.info : null;
      return `${p.name} (${info ? `${info.parameters} parameters, ${info.step ? `continuing from update ${info.step}` : 'fresh'}` : p.model.backend})`;
    })
    .join('; ');
}

/** The torch engine's own output (transformers' and torch's messages) goes to a log file, not over the progress bar. */
export function openEngineLog(dataDir: string): { path: string; write: (line: string) => void } {
  const dir = join(dataDir, 'logs');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `engine-${new Date().toISOString().replace(/[:.]/g, '-')}.log`);
  return {
    path,
    write: (line: string) => {
      try {
        appendFileSync(path, `${line}\n`);
      } catch {
        /* a full disk must not stop training */
      }
    },
  };
}
