/**
 * Two evaluations side by side, as the editor shows them (the compare view, Test Explorer's "passed on ..., fails on
 * ..."): an eval run's record (a TrainingRun of kind 'eval', protocol/eval.ts EvalConfig and EvalSummary) read as the
 * agent version it measured (the model or checkpoint, the upstream model, the pinned prompt versions), and two of them
 * compared task by task with the paired test `agl eval --baseline` prints (protocol/eval-stats.ts compareTasks), so
 * the view and the command say the same wins, losses, ties and p-value.
 */
import type { EvalConfig, EvalSummary, EvalTaskResult } from './eval.js';
import { compareTasks, difference, type Comparison } from './eval-stats.js';
import type { TrainingRun } from './store.js';

/** The extension's id (package.json publisher.name), the authority of the URIs VS Code hands it. */
export const EXTENSION_ID = 'agent-lightning.agent-lightning-vscode';

/** The URI that opens the compare view on `runId` against `baseRunId` (printed by `agl eval --baseline`). */
export function compareUri(baseRunId: string, runId: string, scheme = 'vscode'): string {
  return `${scheme}://${EXTENSION_ID}/compare?base=${encodeURIComponent(baseRunId)}&run=${encodeURIComponent(runId)}`;
}

/** An eval run as the editor lists it. */
export interface EvalRunInfo {
  id: string;
  agent: string;
  status: TrainingRun['status'];
  createdAt: number;
  /** The dataset file it ran (absolute, as recorded). */
  data: string;
  /** The agent version it measured, in words: "warmup", "run-abc step 40", "gpt-4o-mini", plus pinned prompts. */
  version: string;
  mean: number | null;
  passAtK: number | null;
  tasks: number;
}

/** One task of two runs: each side's result (null where that run has no such task) and how it moved. */
export interface EvalCompareRow {
  id: string;
  /** after > before: a fix (a win); after < before: a regression (a loss); same: a tie; only: in one run alone. */
  change: 'fix' | 'regression' | 'same' | 'only';
  base: EvalTaskResult | null;
  run: EvalTaskResult | null;
}

/** What the compare view shows: the two runs, the comparison's numbers, the rows in the dataset's order. */
export interface EvalCompareView {
  base: EvalRunInfo;
  run: EvalRunInfo;
  comparison: Comparison;
  rows: EvalCompareRow[];
}

/** The run's checkpoint as "run-abc step 40" when it is one `agl train` wrote (<dir>/runs/<run>/policy-<step>). */
function checkpointWords(model: string): string {
  const m = /([^/\\]+)[/\\]policy-(\d+)[/\\]?$/.exec(model);
  if (m) return `${m[1]} step ${m[2]}`;
  const parts = model.split(/[/\\]/).filter(Boolean);
  return parts.at(-1) ?? model;
}

/** The agent version an eval run measured, in words (see EvalRunInfo.version). */
export function evalVersion(config: Partial<EvalConfig>): string {
  const up = config.llm?.upstream;
  const model = up ? up.model : config.llm?.model ? checkpointWords(config.llm.model) : 'the served policy';
  const prompts = Object.entries(config.prompts ?? {}).map(([name, v]) => `${name}=${v}`);
  return prompts.length ? `${model} (${prompts.join(', ')})` : model;
}

/** The summary of a finished eval run, or null (running, failed, cancelled, or not an eval run). */
export function evalSummaryOf(run: TrainingRun): EvalSummary | null {
  if (run.kind !== 'eval' || run.status !== 'succeeded') return null;
  const s = run.summary as Partial<EvalSummary>;
  return Array.isArray(s.tasks) && typeof s.mean === 'number' ? (s as EvalSummary) : null;
}

export function evalRunInfo(run: TrainingRun): EvalRunInfo {
  const config = run.config as Partial<EvalConfig>;
  const s = evalSummaryOf(run);
  return {
    id: run.id,
    agent: run.agent,
    status: run.status,
    createdAt: run.createdAt,
    data: config.data?.file ?? '',
    version: evalVersion(config),
    mean: s?.mean ?? null,
    passAtK: s?.passAtK ?? null,
    tasks: s?.tasks.length ?? 0,
  };
}

/** `run` against `base`, task by task; throws naming the run that did not finish. */
export function compareEvalRuns(base: TrainingRun, run: TrainingRun): EvalCompareView {
  const [b, r] = [evalSummaryOf(base), evalSummaryOf(run)];
  for (const [x, s] of [
    [base, b],
    [run, r],
  ] as const)
    if (!s) throw new Error(`run ${x.id} is not a finished eval run (${x.kind}, ${x.status}): nothing to compare`);
  const before = new Map(b!.tasks.map((t) => [t.id, t]));
  const after = new Map(r!.tasks.map((t) => [t.id, t]));
  const comparison = compareTasks(base.id, new Map(b!.tasks.map((t) => [t.id, t.mean])), new Map(r!.tasks.map((t) => [t.id, t.mean])));
  const ids = [...after.keys(), ...[...before.keys()].filter((id) => !after.has(id))];
  const rows = ids.map((id): EvalCompareRow => {
    const [x, y] = [before.get(id) ?? null, after.get(id) ?? null];
    const moved = x && y ? difference(x.mean, y.mean) : null;
    const change = moved === null ? 'only' : moved > 0 ? 'fix' : moved < 0 ? 'regression' : 'same';
    return { id, change, base: x, run: y };
  });
  return { base: evalRunInfo(base), run: evalRunInfo(run), comparison, rows };
}
