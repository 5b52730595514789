/**
 * An agent's eval and optimization results as its CodeLens gives them, each on its own lens beside the headline
 * (protocol/agent-headline.ts, which counts only the agent's own and its training runs' rollouts): the newest eval of
 * each dataset ("eval calc.eval 0.94 (Dec 7)": its model's grade on that dataset), and each optimized prompt's best
 * candidate with whether it was promoted ("prompt system: best val 1.00, not promoted"). Pure: read from the runs'
 * records (protocol/eval.ts EvalSummary, prompts.ts OptimizationSummary) and the agent's promoted prompts.
 */
import { candidateLabel, datasetName, runModel, type PurposeConfig } from './run-purpose.js';
import type { TrainingRun } from './store.js';

/** What the words read of an optimization (protocol/lsp.ts PromptOptimization, which imports this file's types). */
interface OptimizationFacts {
  runId: string;
  status: TrainingRun['status'];
  best: number | null;
  seed: number | null;
  rollouts: number;
  budget: number;
}

/** The newest finished eval of one dataset. */
export interface EvalResult {
  runId: string;
  dataset: string;
  model: string;
  /** Mean score over its tasks, and how many tasks. */
  mean: number;
  tasks: number;
  createdAt: number;
}

/** A prompt promoted for the agent: its name and where it came from (null: a text the user gave). */
export interface PromotedFrom {
  name: string;
  runId: string | null;
  candidateId: string | null;
}

/** Eval lenses at most (newest datasets first). */
export const EVAL_LINES = 2;

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** The newest succeeded eval of each dataset, newest first, from the agent's runs of kind 'eval'. */
export function evalResults(evals: readonly TrainingRun[]): EvalResult[] {
  const seen = new Map<string, EvalResult>();
  for (const run of [...evals].sort((a, b) => b.createdAt - a.createdAt)) {
    const config = run.config as PurposeConfig;
    const mean = num(run.summary.mean);
    const file = config.data?.file;
    if (run.status !== 'succeeded' || mean === null || typeof file !== 'string') continue;
    const dataset = datasetName(file);
    const tasks = Array.isArray(run.summary.tasks) ? run.summary.tasks.length : 0;
    if (!seen.has(dataset)) seen.set(dataset, { runId: run.id, dataset, model: runModel(config), mean, tasks, createdAt: run.createdAt });
  }
  return [...seen.values()].slice(0, EVAL_LINES);
}

/** "Dec 7": a run's day, as the lens shows it. */
export const runDay = (t: number): string => new Date(t).toLocaleDateString('en-US', { month: 'short', day: 'numeric' });

/** An eval's lens words and tooltip. */
export function describeEvalResult(e: EvalResult): { text: string; tooltip: string } {
  return {
    text: `eval ${e.dataset} ${e.mean.toFixed(2)} (${runDay(e.createdAt)})`,
    tooltip:
      `Eval run ${e.runId} (${runDay(e.createdAt)}): mean score ${e.mean.toFixed(2)} of ${e.model} on ${e.tasks} task${e.tasks === 1 ? '' : 's'} of ${e.dataset}. ` +
      "An eval grades the agent with that model; it is not a training reward, and its rollouts are not in the headline's count.",
  };
}

/** Whether the optimization's candidate is the promoted text of the prompt: "promoted #2", "not promoted", or another's. */
function promotion(name: string, o: OptimizationFacts, promoted: readonly PromotedFrom[]): { words: string; tooltip: string } {
  const p = promoted.find((x) => x.name === name);
  if (!p)
    return {
      words: 'not promoted',
      tooltip: `the agent still reads its seed text of "${name}" (promote: agl optimize promote ${o.runId}, or Apply in the view)`,
    };
  if (p.runId === o.runId && p.candidateId)
    return {
      words: `promoted ${candidateLabel(p.candidateId)}`,
      tooltip: `its candidate ${candidateLabel(p.candidateId)} is promoted: the agent reads it instead of the seed`,
    };
  const from = p.runId ? `optimization ${p.runId}` : 'a text given by hand';
  return { words: 'another text promoted', tooltip: `the agent reads a text promoted from ${from}, not this run's` };
}

/** A prompt optimization's lens words and tooltip: its best val score, or its progress, and whether it was promoted. */
export function describeOptimizationResult(name: string, o: OptimizationFacts, promoted: readonly PromotedFrom[]): { text: string; tooltip: string } {
  const where = `Optimization ${o.runId} of prompt "${name}"`;
  if (o.status === 'running')
    return { text: `prompt ${name}: optimizing ${o.rollouts}/${o.budget}`, tooltip: `${where} is running: ${o.rollouts} of ${o.budget} rollouts spent.` };
  const p = promotion(name, o, promoted);
  if (o.best === null)
    return { text: `prompt ${name}: ${o.status}, not scored`, tooltip: `${where} ${o.status} before a candidate was scored on val; ${p.tooltip}.` };
  return {
    text: `prompt ${name}: best val ${o.best.toFixed(2)}, ${p.words}`,
    tooltip:
      `${where}: its best candidate's mean val score ${o.best.toFixed(2)}${o.seed !== null ? ` (the seed's ${o.seed.toFixed(2)})` : ''}; ${p.tooltip}. ` +
      "Its candidates' scores are not the agent's reward, and their rollouts are not in the headline's count.",
  };
}
