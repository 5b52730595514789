/**
 * What "Train This Agent" offers and the `agl train` command line a choice becomes. No VS Code API here
 * (unit-tested in test/extension/train-choices.test.ts). Sensible defaults come from the agent's own
 * folder: a `train.yaml` next to the agent (else the one the README beside it trains the agent with, as calc-py's
 * names the calc sample's) is offered as a budget ("the agent's settings") and its `data:` first, and model
 * folders next to it (e.g. a sample's shipped SFT warm-up) are offered before the built-in models.
 * A task file is preselected only when it is the agent's (dataOptions): never a file that merely sorts first.
 */
import { trainCommandLine, type TrainFlags } from '../protocol/train-options.js';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { TrainingRunSummary } from '../protocol/metrics.js';
import type { TrainingRun } from '../protocol/store.js';
import { DataSection, TrainingSection } from '../protocol/train-config.js';
import { judgeTrainFlags, type JudgeChoice } from './judge-choices.js';

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

/** `config`: the agent's train.yaml when budget is AGENT_CONFIG_BUDGET; `judge`: an LLM judge as the reward (judge-choices.ts). */
export interface TrainChoice {
  train: string;
  val: string;
  budget: string;
  model: string;
  config?: string;
  judge?: JudgeChoice;
}

/** The preset budget of a choice (the smoke test when unknown). */
export function budgetOf(choice: TrainChoice): Budget {
  return BUDGETS.find((b) => b.id === choice.budget) ?? BUDGETS[0]!;
}

/**
 * The `agl train` arguments for a choice: the agent's own train.yaml (`choice.config`) unchanged, or a preset
 * budget whose `configFile` holds what has no flag (training.valSize), written
 * by writeBudgetConfig; flags override it. A judge's --judge-* flags (judgeTrainFlags: `env` says whether its key is set).
 */
export function trainArgs(
  agent: string,
  choice: TrainChoice,
  settings: { groupSize: number; storeUrl: string },
  configFile: string | null,
  env: NodeJS.ProcessEnv = process.env,
): string[] {
  const config = choice.config ?? configFile;
  const flags: TrainFlags = { train: choice.train, val: choice.val, model: choice.model, ...(config ? { config } : {}) };
  if (!choice.config) {
    // A preset budget; the agent's own settings stay unchanged (group size, batch, budget and validation included).
    const budget = budgetOf(choice);
    Object.assign(flags, { 'group-size': String(settings.groupSize), 'batch-size': String(budget.batchSize), 'val-every': String(budget.valEvery) });
    if (budget.maxSteps > 0) flags['max-steps'] = String(budget.maxSteps);
  }
  if (choice.judge) Object.assign(flags, judgeTrainFlags(choice.judge, env));
  // `agl train` opens the store itself: the daemon's SQLite file in the data dir (AGL_DATA_DIR), or this URL.
  if (settings.storeUrl) flags.store = settings.storeUrl;
  // The command line comes from agl train's one option table (protocol/train-options.ts): a flag it lacks does not compile.
  return trainCommandLine(agent, flags);
}

/**
 * The agent's train.yaml: `train.yaml` (or `.yml`) in its folder; else the `--config` of the `agl train` command line
 * the README beside it gives for this very agent file (a Python agent that trains on another sample's data and
 * settings, as calc-py's README names samples/calc/train.yaml); or null.
 */
export function agentTrainConfig(agentFile: string): string | null {
  for (const name of ['train.yaml', 'train.yml']) {
    const f = join(dirname(agentFile), name);
    if (existsSync(f)) return f;
  }
  return readmeTrainConfig(agentFile);
}

/**
 * The `--config` of an `agl train <agent file>...` command in the README.md beside the agent (a command continued
 * over lines with `\` is one). Its paths are written from the project's root, which this file does not know: the
 * first folder from the README's up where the file exists is the one.
 */
export function readmeTrainConfig(agentFile: string): string | null {
  const readme = join(dirname(agentFile), 'README.md');
  if (!existsSync(readme)) return null;
  const text = readFileSync(readme, 'utf8').replace(/\\\r?\n/g, ' ');
  const name = basename(agentFile);
  for (const line of text.split(/\r?\n/)) {
    const command = /\bagl train\s+(\S+)(.*)$/.exec(line);
    if (!command || basename(command[1]!.replace(/[:#][\w$]+$/, '')) !== name) continue;
    const config = /--config[=\s]+(\S+)/.exec(command[2]!)?.[1];
    if (!config) continue;
    for (let dir = dirname(readme); ; dir = dirname(dir)) {
      const found = resolve(dir, config);
      if (existsSync(found)) return found;
      if (dirname(dir) === dir) break;
    }
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

/** Task files (absolute paths): training tasks, held-out validation tasks, and (an optimization's) test tasks. */
export interface TaskFiles {
  train?: string;
  val?: string;
  test?: string;
}

/**
 * The task files a train.yaml names in its `data:` section, resolved from the file's folder: what `agl train` reads
 * from it (daemon/algorithm/config.ts configData, which the extension's project cannot import). An unreadable
 * or invalid file is an error naming it.
 */
export function configTaskFiles(configFile: string): TaskFiles {
  const r = DataSection.safeParse(readDataSection(readFileSync(configFile, 'utf8')));
  if (!r.success) throw new Error(`${configFile}: data: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  const at = (p: string | null) => (p === null ? undefined : resolve(dirname(configFile), p));
  return { train: at(r.data.train), val: at(r.data.val) };
}

/** A YAML scalar as written: quotes removed, a trailing comment dropped. */
function yamlScalar(text: string): string {
  const t = text.trim();
  const quoted = /^(['"])(.*?)\1\s*(#.*)?$/.exec(t);
  if (quoted) return quoted[2]!;
  return t.replace(/\s+#.*$/, '').trim();
}

/**
 * A top-level mapping of a train.yaml (`data:`, `training:`), its scalar keys, read without a YAML library (the
 * extension's floor imports no packages but VS Code's): the block form (`data:` then indented `train: ...` lines;
 * deeper mappings such as `training.grpo` are skipped) or the flow form (`data: { train: ..., val: ... }`).
 */
export function readYamlSection(yaml: string, section: string): Record<string, string> {
  const lines = yaml.split(/\r?\n/);
  const head = new RegExp(`^${section}\\s*:`);
  const at = lines.findIndex((l) => head.test(l));
  if (at < 0) return {};
  const out: Record<string, string> = {};
  const rest = lines[at]!.replace(head, '')
    .replace(/\s+#.*$/, '')
    .trim();
  const flow = /^\{(.*)\}$/.exec(rest);
  if (flow) {
    for (const part of flow[1]!.split(',')) {
      const m = /^\s*([\w-]+)\s*:\s*(.*)$/.exec(part);
      if (m) out[m[1]!] = yamlScalar(m[2]!);
    }
    return out;
  }
  let indent: number | null = null;
  for (const line of lines.slice(at + 1)) {
    if (/^\s*(#.*)?$/.test(line)) continue;
    const m = /^(\s+)([\w-]+)\s*:\s*(.*)$/.exec(line);
    if (!m) break; // back at the top level
    indent ??= m[1]!.length;
    if (m[1]!.length === indent && yamlScalar(m[3]!) !== '') out[m[2]!] = yamlScalar(m[3]!);
  }
  return out;
}

/** The `data:` mapping of a train.yaml (what DataSection parses; anything else under it is kept, for it to name). */
export function readDataSection(yaml: string): Record<string, string> {
  return readYamlSection(yaml, 'data');
}

/**
 * What a train.yaml trains with, for the budget pick (its own group size, not the setting's): "group size 8 · 12 tasks
 * per step · 1 epoch · at most 6 min". Its `training:` keys, the schema's defaults for the others.
 */
export function configBudgetDetail(configFile: string): string {
  const given = readYamlSection(readFileSync(configFile, 'utf8'), 'training');
  const defaults = TrainingSection.parse({});
  const num = (key: 'groupSize' | 'batchSize' | 'epochs' | 'maxSteps' | 'maxMinutes') => {
    const v = Number(given[key]);
    return given[key] !== undefined && Number.isFinite(v) ? v : defaults[key];
  };
  const epochs = num('epochs');
  return [
    `group size ${num('groupSize')}`,
    `${num('batchSize')} tasks per step`,
    num('maxSteps') > 0 ? `at most ${num('maxSteps')} steps` : `${epochs} epoch${epochs === 1 ? '' : 's'}`,
    ...(num('maxMinutes') > 0 ? [`at most ${num('maxMinutes')} min`] : []),
  ].join(' · ');
}

/** The task files of the newest of the agent's runs that recorded them (summary.data, written by `agl train`). */
export function lastRunTaskFiles(runs: readonly TrainingRun[]): TaskFiles {
  for (const run of [...runs].sort((a, b) => b.createdAt - a.createdAt)) {
    const data = (run.summary as TrainingRunSummary).data;
    if (data && typeof data.train === 'string' && typeof data.val === 'string') return { train: data.train, val: data.val };
  }
  return {};
}

/** SFT demonstrations (`demos.jsonl`, `demos-copy.jsonl`, `sft_demonstrations.jsonl`: what `agl sft` learns from), not tasks. */
export function isDemonstrations(file: string): boolean {
  return /(^|[-_.])(demos|demonstrations)([-_.]|$)/i.test(basename(file).replace(/\.jsonl$/i, ''));
}

/**
 * Documents an agent searches (`corpus.jsonl`, `documents.jsonl`, `docs-v2.jsonl`, `passages.jsonl`: e.g. the rag
 * sample's), not tasks: never offered as a task file.
 */
export function isCorpus(file: string): boolean {
  return /(^|[-_.])(corpus|corpora|documents|docs|passages)([-_.]|$)/i.test(basename(file).replace(/\.jsonl$/i, ''));
}

/** samples/calc/data/train.jsonl -> samples/calc/data/val.jsonl (or test.jsonl) when that exists. */
export function siblingTaskFile(train: string, role: 'val' | 'test', exists: (path: string) => boolean = existsSync): string | undefined {
  const candidate = train.replace(/train(\.[^/\\]*)?\.jsonl$/, `${role}$1.jsonl`);
  return candidate !== train && exists(candidate) ? candidate : undefined;
}

/** Where a task file known to be the agent's comes from, in the order they win. */
export type DataOrigin = 'remembered' | 'config' | 'run' | 'optimization';
const ORIGIN_WORDS: Record<DataOrigin, string> = {
  remembered: 'last used',
  config: "the agent's train.yaml",
  run: 'its last training run',
  optimization: 'its last optimization',
};
const DEMOS_WORDS = 'SFT demonstrations (agl sft), not tasks';

export interface DataOption {
  path: string;
  description: string;
}

/** A data quick pick: `owned` (the agent's files, the first preselected), then `others`, never preselected. */
export interface DataOptions {
  owned: DataOption[];
  others: DataOption[];
}

/**
 * The files a task-file pick (training, validation, an optimization's test) offers. Only the agent's own are listed
 * first, where the pick highlights them: the user's last choice for this agent, the `data:` of its train.yaml, the files
 * of its last training run or optimization (`sources`, in that order). Every other JSONL file of the workspace follows (those in the
 * agent's folder first), never first: with none of the agent's own, nothing is preselected, as a file that only
 * sorts first (another sample's data, calc's demos.jsonl) is a guess that two Enters turn into a wrong run.
 * Demonstrations are never preselected, whatever their origin. For `val` and `test`, the sources whose training file is
 * the one just chosen (`train`) come first, so a train.yaml's pair stays a pair; the file next to it
 * (`train.jsonl` -> `val.jsonl`, `test.jsonl`) is offered first among the others.
 */
export function dataOptions(
  role: keyof TaskFiles,
  input: {
    agentFile: string;
    sources: readonly { origin: DataOrigin; files: TaskFiles }[];
    workspaceFiles: readonly string[];
    train?: string;
    exists?: (path: string) => boolean;
  },
): DataOptions {
  const exists = input.exists ?? existsSync;
  const reasons = new Map<string, string[]>();
  const note = (path: string, why: string) => {
    const list = reasons.get(path) ?? [];
    if (!list.includes(why)) list.push(why);
    reasons.set(path, list);
  };
  const pairsFirst = (s: { files: TaskFiles }) => Number(role !== 'train' && input.train !== undefined && s.files.train === input.train);
  const sources = [...input.sources].sort((a, b) => pairsFirst(b) - pairsFirst(a));
  const owned: string[] = [];
  for (const { origin, files } of sources) {
    const path = files[role];
    if (!path || !exists(path)) continue; // a moved file, or a run recorded on another machine
    note(path, ORIGIN_WORDS[origin]);
    if (!isDemonstrations(path) && !owned.includes(path)) owned.push(path);
  }
  const sibling = role !== 'train' && input.train ? siblingTaskFile(input.train, role, exists) : undefined;
  if (sibling) note(sibling, 'next to the training data');
  const all = new Set([...reasons.keys(), ...input.workspaceFiles]);
  for (const path of all) if (isDemonstrations(path)) note(path, DEMOS_WORDS);
  const folder = input.agentFile ? dirname(input.agentFile) : null;
  const inFolder = (path: string) => {
    if (folder === null) return 0;
    const rel = relative(folder, path);
    return Number(rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
  };
  const others = [...all]
    .filter((p) => !owned.includes(p))
    .sort(
      (a, b) =>
        Number(b === sibling) - Number(a === sibling) ||
        inFolder(b) - inFolder(a) ||
        Number(isDemonstrations(a)) - Number(isDemonstrations(b)) ||
        a.localeCompare(b),
    );
  const option = (path: string): DataOption => ({ path, description: (reasons.get(path) ?? []).join(' · ') });
  return { owned: owned.map(option), others: others.map(option) };
}
