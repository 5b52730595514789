/**
 * The Test Explorer's eval datasets without VS Code (unit-tested in test/extension/eval-datasets.test.ts): the datasets
 * the workspace names (`*.eval.jsonl` files, and the setting agentLightning.evalDatasets: a path, or { data, agent }),
 * a dataset's tasks as test items (a task's label from its id and question; a bad row as the words `agl eval` refuses
 * it with: protocol/eval.ts readEvalLines), which agent runs a dataset (the one the setting names, else the agents
 * beside the file: the nearest folder upward holding any, the rule Train This Agent's picks use to leave out tests and
 * fixtures), `agl eval --json`'s outcome read back, and a task's history over the agent versions its past eval runs
 * measured ("passed on warmup, fails on run-abc step 40").
 */
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { EvalRunInfo } from '../protocol/eval-compare.js';
import type { EvalSummary, EvalTaskResult } from '../protocol/eval.js';
import { readEvalLines } from '../protocol/eval.js';
import type { AgentInfo } from '../protocol/lsp.js';
import { agentFile, isFixturePath, samePath, workspaceRelative } from './agent-choice.js';

/** A dataset the workspace names, and the agent it names (the setting's `agent`), if any. */
export interface NamedDataset {
  file: string;
  agent: string | null;
}

/** The setting's entries as datasets (paths relative to the first workspace folder); a malformed entry is skipped with why. */
export function datasetsFromSetting(entries: unknown, folder: string | null): { datasets: NamedDataset[]; problems: string[] } {
  const datasets: NamedDataset[] = [];
  const problems: string[] = [];
  const at = (p: string) => (isAbsolute(p) || !folder ? resolve(p) : join(folder, p));
  for (const [i, e] of (Array.isArray(entries) ? entries : []).entries()) {
    if (typeof e === 'string' && e.trim()) datasets.push({ file: at(e.trim()), agent: null });
    else if (e && typeof e === 'object' && typeof (e as { data?: unknown }).data === 'string') {
      const agent = (e as { agent?: unknown }).agent;
      datasets.push({ file: at((e as { data: string }).data), agent: typeof agent === 'string' && agent ? agent : null });
    } else problems.push(`agentLightning.evalDatasets[${i}]: give a path, or { "data": path, "agent": "file.ts#export" }`);
  }
  return { datasets, problems };
}

/** One line of a dataset as the Test Explorer shows it: a task (its id, its label) or a bad row (the error `agl eval` gives). */
export type DatasetItem = { kind: 'task'; id: string; line: number; label: string } | { kind: 'bad'; line: number; error: string };

const oneLine = (s: string, max = 70) => {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

/** A task's readable text: its input's question (or prompt, or the input when it is text). */
function questionOf(input: unknown): string | null {
  if (typeof input === 'string') return input;
  if (!input || typeof input !== 'object') return null;
  for (const key of ['question', 'prompt', 'query', 'task', 'text'])
    if (typeof (input as Record<string, unknown>)[key] === 'string') return (input as Record<string, string>)[key]!;
  return null;
}

/** The dataset's lines as items; `file` names the bad rows as `agl eval` does (`file:line: field '...': ...`). */
export function datasetItems(file: string, text: string): DatasetItem[] {
  return readEvalLines(text).map((r) => {
    if ('error' in r) return { kind: 'bad', line: r.line, error: `${file}:${r.line}: ${r.error}` };
    const q = questionOf(r.row.input);
    return { kind: 'task', id: r.id, line: r.line, label: q ? `${r.id}: ${oneLine(q)}` : r.id };
  });
}

/**
 * The agents that may run `file`: in the nearest folder upward from it (up to its workspace folder) that holds any
 * agent outside tests and fixtures; none when no folder does.
 */
export function agentsBeside(file: string, agents: readonly AgentInfo[], folders: readonly string[]): AgentInfo[] {
  const root = folders.filter((f) => workspaceRelative(file, [f]) !== null).sort((a, b) => b.length - a.length)[0];
  if (!root) return [];
  const byDir = new Map<string, AgentInfo[]>();
  for (const a of agents) {
    const f = agentFile(a);
    const rel = f === null ? null : workspaceRelative(f, [root]);
    if (f === null || rel === null || isFixturePath(rel)) continue;
    const list = byDir.get(dirname(f)) ?? [];
    if (!list.some((x) => x.id === a.id)) list.push(a);
    byDir.set(dirname(f), list);
  }
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const found = [...byDir].find(([d]) => samePath(d, dir))?.[1];
    if (found?.length) return found;
    const up = relative(root, dir);
    if (up === '' || up.startsWith(`..${sep}`) || up === '..' || dirname(dir) === dir) return [];
  }
}

/** What `agl eval --json` printed (its last line that is an outcome object), or null. */
export function readEvalOutcome(stdout: readonly string[]): { runId: string; summary: EvalSummary } | null {
  for (const line of [...stdout].reverse()) {
    if (!line.startsWith('{"runId"')) continue;
    try {
      const o = JSON.parse(line) as EvalSummary & { runId: string };
      if (Array.isArray(o.tasks)) return { runId: o.runId, summary: o };
    } catch {
      /* not the outcome */
    }
  }
  return null;
}

/** One past result of a task: the run, the agent version it measured, and how the task did. */
export interface TaskHistoryEntry {
  run: EvalRunInfo;
  result: EvalTaskResult;
}

const verdict = (t: EvalTaskResult) => (t.passed ? 'passed' : t.errored ? 'errored' : 'fails');

/**
 * A task's results over agent versions in words, one per version (its latest run), the three versions measured last,
 * the newest last: "passed on warmup, fails on run-abc step 40"; null with no past result.
 */
export function historyWords(entries: readonly TaskHistoryEntry[]): string | null {
  const latest = new Map<string, TaskHistoryEntry>();
  for (const e of [...entries].sort((a, b) => a.run.createdAt - b.run.createdAt)) {
    latest.delete(e.run.version); // re-inserted last: versions in the order they were last measured
    latest.set(e.run.version, e);
  }
  const shown = [...latest.values()].slice(-3);
  if (!shown.length) return null;
  const words = shown.map((e) => `${verdict(e.result)} on ${e.run.version}`);
  return words.join(', ');
}

/**
 * `agl eval`'s arguments for a Test Explorer run of a dataset: every task when the run covers them all (the suite, or
 * each of its items), else --task for each chosen one (a run of one item runs that task only).
 */
export function evalArgs(agent: string, file: string, chosen: readonly string[], all: number, model: readonly string[]): string[] {
  const only = chosen.length < all ? chosen.flatMap((id) => ['--task', id]) : [];
  return ['eval', agent, '--data', file, '--json', ...only, ...model];
}
