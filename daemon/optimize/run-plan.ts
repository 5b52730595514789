/**
 * What an optimization starts from (the first phase of optimize-run.ts): a fresh run's settings from the flags, checked
 * before anything starts (each error names its flag), or a resumed run's settings from its record; and the tasks,
 * which a resumed run must find unchanged.
 */
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { OPTIMIZE_ALGORITHMS, OPTIMIZE_COMMAND, OptimizeConfig, type OptimizeFlags } from '../../protocol/optimize-options.js';
import { PromptName } from '../../protocol/prompts.js';
import { configOverrides } from '../../protocol/train-options.js';
import { judgeSettingsFrom } from '../algorithm/config.js';
import { loadTasks } from '../algorithm/run-plan.js';
import type { Task } from '../algorithm/rollouts.js';
import { runnableAgentSpec, storedAgentId } from '../runner/agent-ref.js';
import { readMetaPrompts } from './meta.js';

export interface OptimizePlan {
  /** Set for a resumed run. */
  runId: string | null;
  config: OptimizeConfig;
  train: Task[];
  val: Task[];
  test: Task[];
}

/** A digest of the tasks (ids and inputs, in order): a resumed run that reads other tasks cannot replay its search. */
function tasksDigest(sets: Task[][]): string {
  return createHash('sha256')
    .update(JSON.stringify(sets.map((s) => s.map((t) => [t.id, t.input]))))
    .digest('hex')
    .slice(0, 16);
}

function readTasks(c: Pick<OptimizeConfig, 'data'>): { train: Task[]; val: Task[]; test: Task[] } {
  const train = loadTasks(c.data.train, 'train'),
    val = loadTasks(c.data.val, 'val');
  const test = c.data.test ? loadTasks(c.data.test, 'test') : [];
  if (!train.length || !val.length) throw new Error('--train and --val need at least one task each');
  if (c.data.test && !test.length) throw new Error(`--test ${c.data.test}: no tasks`);
  return { train, val, test };
}

const integer = (flag: string, v: string | undefined, min: number): number => {
  const n = Number(v);
  if (v === undefined || !Number.isInteger(n) || n < min) throw new Error(`--${flag} ${v ?? ''}: give an integer of at least ${min}`);
  return n;
};
const number = (flag: string, v: string | undefined): number | null => {
  if (v === undefined) return null;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${flag} ${v}: give a number of at least 0`);
  return n;
};

/** A fresh run's settings from its flags; throws naming the flag at fault. */
export function planFromFlags(agent: string, f: OptimizeFlags): OptimizePlan {
  const names = f.prompt ?? [];
  if (!names.length) throw new Error('--prompt NAME is required: the name the agent reads the prompt by, llm.prompt(NAME, ...)');
  for (const n of names)
    if (!PromptName.safeParse(n).success || n === 'llm') throw new Error(`--prompt ${n}: a prompt name is 1-64 letters, digits, _, - or . (and not "llm")`);
  if (new Set(names).size !== names.length) throw new Error('--prompt: each name once');
  if (!f.train || !f.val) throw new Error('--train FILE and --val FILE are required');
  const algorithm = f.algorithm ?? 'gepa';
  if (!(OPTIMIZE_ALGORITHMS as readonly string[]).includes(algorithm)) throw new Error(`--algorithm ${algorithm}: one of ${OPTIMIZE_ALGORITHMS.join(', ')}`);
  if (!f['optimizer-url'] || !f['optimizer-model'])
    throw new Error("--optimizer-url URL and --optimizer-model M are required: the optimizer's OpenAI-compatible server and model");
  if (Boolean(f.upstream) !== Boolean(f['upstream-model'])) throw new Error('--upstream URL and --upstream-model M go together');
  if (f.upstream && f.model) throw new Error("--upstream and --model both name the agent's model: give one");
  const data = { train: resolve(f.train), val: resolve(f.val), test: f.test ? resolve(f.test) : null, digest: '' };
  const tasks = readTasks({ data });
  data.digest = tasksDigest([tasks.train, tasks.val, tasks.test]);
  const config = OptimizeConfig.parse({
    agent: storedAgentId(agent),
    agentSpec: runnableAgentSpecOr(agent),
    prompts: names,
    data,
    budget: integer('budget', f.budget, 1),
    algorithm,
    seed: integer('seed', f.seed ?? '0', 0),
    minibatch: integer('minibatch', f.minibatch ?? (algorithm === 'beam' ? '4' : '3'), 1),
    merge: f.merge === true,
    beam: {
      width: integer('beam-width', f['beam-width'] ?? '4', 1),
      branch: integer('beam-branch', f['beam-branch'] ?? '4', 1),
      rounds: integer('beam-rounds', f['beam-rounds'] ?? '3', 1),
      valBatch: integer('val-batch', f['val-batch'] ?? '16', 1),
    },
    maxPromptChars: integer('max-prompt-chars', f['max-prompt-chars'] ?? '8000', 1),
    llm: {
      upstream: f.upstream ? { url: f.upstream, model: f['upstream-model']!, keyEnv: f['upstream-key-env'] ?? 'OPENAI_API_KEY' } : null,
      model: f.model ?? null,
    },
    optimizer: {
      url: f['optimizer-url'],
      model: f['optimizer-model'],
      keyEnv: f['optimizer-key-env'] ?? 'OPENAI_API_KEY',
      priceIn: number('optimizer-price-in', f['optimizer-price-in']),
      priceOut: number('optimizer-price-out', f['optimizer-price-out']),
      timeoutSeconds: integer('optimizer-timeout', f['optimizer-timeout'] ?? '180', 1),
      retries: integer('optimizer-retries', f['optimizer-retries'] ?? '4', 0),
    },
    meta: readMetaPrompts({ reflect: f['meta-reflect'], critique: f['meta-critique'], edit: f['meta-edit'], merge: f['meta-merge'] }),
    workers: integer('workers', f.workers ?? '4', 0),
    rolloutTimeoutSeconds: integer('rollout-timeout', f['rollout-timeout'] ?? '120', 1),
    // The LLM judge as the reward: the same settings as train.yaml's judge: (--config's section under the --judge-* flags).
    judge: judgeSettingsFrom(null, f.config, configOverrides(OPTIMIZE_COMMAND.options, f).judge as Record<string, unknown> | undefined),
  });
  const least = leastBudget(tasks);
  if (config.budget < least)
    throw new Error(
      `--budget ${config.budget} is too small: the seed alone takes ${least} rollouts (one to read its prompts, ${tasks.val.length} val` +
        `${tasks.test.length ? `, the test set twice: ${2 * tasks.test.length}` : ''}) before a first candidate; give at least ${least + 2 * config.minibatch + tasks.val.length}`,
    );
  return { runId: null, config, ...tasks };
}

/** The rollouts a run spends before its search: the probe reading the seed, the seed on val, the reserve for test. */
export function leastBudget(t: { val: Task[]; test: Task[] }): number {
  return 1 + t.val.length + 2 * t.test.length;
}

/** The agent as the runner runs it, or as given when it is no reference the runner reads (agl eval's too). */
export function runnableAgentSpecOr(agent: string): string {
  try {
    return runnableAgentSpec(agent);
  } catch {
    return agent; // not a reference the runner understands: its error comes with the first rollout
  }
}

/**
 * A resumed run's settings from its record. Where its servers are may be given again (a server that moved); the
 * rest is the run's. Its tasks must be the ones it began with.
 */
export async function planResume(store: LightningStore, runId: string, f: OptimizeFlags): Promise<OptimizePlan> {
  const run = await store.getTrainingRun(runId);
  if (!run) throw new Error(`--resume ${runId}: no such run in this store`);
  if (run.kind !== 'optimize') throw new Error(`--resume ${runId}: that run is a ${run.kind} run (agl train --resume continues it)`);
  const parsed = OptimizeConfig.safeParse(run.config);
  if (!parsed.success) throw new Error(`--resume ${runId}: its stored settings do not read (${parsed.error.issues[0]?.message}): start a new run`);
  const config = parsed.data;
  if (f.upstream && config.llm.upstream) config.llm.upstream.url = f.upstream;
  if (f['optimizer-url']) config.optimizer.url = f['optimizer-url'];
  if (f.workers !== undefined) config.workers = integer('workers', f.workers, 0);
  const tasks = readTasks(config);
  if (tasksDigest([tasks.train, tasks.val, tasks.test]) !== config.data.digest)
    throw new Error(
      `--resume ${runId}: the task files (${[config.data.train, config.data.val, config.data.test].filter(Boolean).join(', ')}) changed since the run began: its search cannot be replayed; start a new run`,
    );
  return { runId, config, ...tasks };
}
