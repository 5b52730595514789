/**
 * What "Train This Agent" offers and the `agl train` command line a choice becomes. No VS Code API here
 * (unit-tested in test/extension/train-choices.test.ts). Sensible defaults come from the agent's own
 * folder: a `train.yaml` next to the agent is offered as a budget ("the agent's settings"), and model
 * folders next to it (e.g. a sample's shipped SFT warm-up) are offered before the built-in models.
 */
import { trainCommandLine, type TrainFlags } from '../protocol/train-options.js';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** A training budget: steps, tasks per step, validation tasks (0 = all) and how often to validate (0 = before and after only). */
export interface Budget {
  id: string;
  label: string;
  detail: string;
  maxSteps: number;
  batchSize: number;
  valSize: number;
  valEvery: number;
}
export const BUDGETS: Budget[] = [
  {
    id: 'smoke',
    label: 'Smoke test',
    detail: '2 steps of 2 tasks, 8 validation tasks: checks that everything runs',
    maxSteps: 2,
    batchSize: 2,
    valSize: 8,
    valEvery: 0,
  },
  { id: 'short', label: 'Short', detail: '10 steps of 8 tasks, 32 validation tasks every 5 steps', maxSteps: 10, batchSize: 8, valSize: 32, valEvery: 5 },
  {
    id: 'standard',
    label: 'Standard',
    detail: '1 epoch of the training data, 16 tasks per step, all validation tasks every 5 steps',
    maxSteps: 0,
    batchSize: 16,
    valSize: 0,
    valEvery: 5,
  },
];

/** The budget that runs the agent's own train.yaml unchanged. */
export const AGENT_CONFIG_BUDGET = 'agent-config';

/** `config`: the agent's train.yaml when budget is AGENT_CONFIG_BUDGET. */
export interface TrainChoice {
  train: string;
  val: string;
  budget: string;
  model: string;
  config?: string;
}

/** The preset budget of a choice (the smoke test when unknown). */
export function budgetOf(choice: TrainChoice): Budget {
  return BUDGETS.find((b) => b.id === choice.budget) ?? BUDGETS[0]!;
}

/**
 * The `agl train` arguments for a choice: the agent's own train.yaml (`choice.config`) unchanged, or a preset
 * budget whose `configFile` holds what has no flag (training.valSize), written
 * by writeBudgetConfig; flags override it.
 */
export function trainArgs(agent: string, choice: TrainChoice, settings: { groupSize: number; storeUrl: string }, configFile: string | null): string[] {
  const config = choice.config ?? configFile;
  const flags: TrainFlags = { train: choice.train, val: choice.val, model: choice.model, ...(config ? { config } : {}) };
  if (!choice.config) {
    // A preset budget; the agent's own settings stay unchanged (group size, batch, budget and validation included).
    const budget = budgetOf(choice);
    Object.assign(flags, { 'group-size': String(settings.groupSize), 'batch-size': String(budget.batchSize), 'val-every': String(budget.valEvery) });
    if (budget.maxSteps > 0) flags['max-steps'] = String(budget.maxSteps);
  }
  // `agl train` opens the store itself: the daemon's SQLite file in the data dir (AGL_DATA_DIR), or this URL.
  if (settings.storeUrl) flags.store = settings.storeUrl;
  // The command line comes from agl train's one option table (protocol/train-options.ts): a flag it lacks does not compile.
  return trainCommandLine(agent, flags);
}

/** `train.yaml` (or `.yml`) in the agent's folder, or null. */
export function agentTrainConfig(agentFile: string): string | null {
  for (const name of ['train.yaml', 'train.yml']) {
    const f = join(dirname(agentFile), name);
    if (existsSync(f)) return f;
  }
  return null;
}

/** Model folders (config.json + *.safetensors) in the agent's folder, up to two levels down, sorted. */
export function nearbyCheckpoints(agentFile: string): string[] {
  const out: string[] = [];
  const visit = (dir: string, depth: number) => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    const names = new Set(entries.map((e) => e.name));
    if (names.has('config.json') && entries.some((e) => /\.safetensors(\.index\.json)?$/.test(e.name))) {
      out.push(dir);
      return;
    }
    if (depth === 0) return;
    for (const e of entries) if (e.isDirectory() && !e.name.startsWith('.') && e.name !== 'node_modules') visit(join(dir, e.name), depth - 1);
  };
  visit(dirname(agentFile), 2);
  return out.sort();
}
