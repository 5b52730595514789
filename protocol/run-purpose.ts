/**
 * What a run that trains nothing did with its rollouts, in its own words: an evaluation (`agl eval`, kind 'eval') runs
 * the agent with one model on the rows of one dataset and grades it; a prompt optimization (`agl optimize`, kind
 * 'optimize') runs the agent with its candidates' prompt texts and scores them. Neither trains a call, so the viewer
 * says what their rollouts are instead of training's rule ("trains every call") or its reasons ("no token ids").
 * Pure; reads the runs' recorded configs (protocol/eval.ts EvalConfig, optimize-options.ts OptimizeConfig) through
 * their plain shape (no zod here: the webview bundle imports it).
 */
/** The parts of an eval's or an optimization's recorded config the words read. */
export interface PurposeConfig {
  llm?: { upstream?: { model?: string } | null; model?: string | null };
  /** An eval's dataset file; an optimization's task files. */
  data?: { file?: string; train?: string; val?: string };
  /** An optimization's prompts and its search. */
  prompts?: unknown;
  algorithm?: string;
}

/** A file path's last part: `/w/calc/calc.eval.jsonl` -> `calc.eval.jsonl`. */
export const fileName = (path: string): string => path.split(/[\\/]/).pop() || path;

/** A dataset's name, its file's without the extension: `calc.eval.jsonl` -> `calc.eval`. */
export const datasetName = (path: string): string => fileName(path).replace(/\.(jsonl|json|csv|ya?ml)$/i, '');

/** The model the run's agent calls answered with: its upstream model, else its local policy, else the daemon's. */
export function runModel(config: PurposeConfig | null): string {
  return config?.llm?.upstream?.model ?? config?.llm?.model ?? "the daemon's policy";
}

/** A candidate's ordinal in its run ("#2") from its id (`pc-RUN-2`, protocol/prompts.ts candidateId), else the id. */
export function candidateLabel(candidateId: string): string {
  const ordinal = /-(\d+)$/.exec(candidateId)?.[1];
  return ordinal !== undefined && candidateId.startsWith('pc-') ? `#${ordinal}` : candidateId;
}

/** What an eval or an optimization ran, read from its recorded config once (the views carry this, not the config). */
export interface RunWork {
  kind: 'eval' | 'optimize';
  /** The model the agent's calls were answered with. */
  model: string;
  /** An eval's dataset (its file's name without the extension); null for an optimization. */
  dataset: string | null;
  /** An optimization's prompts and its search algorithm; empty and null for an eval. */
  prompts: string[];
  algorithm: string | null;
}

/** The work of a run of kind 'eval' or 'optimize', from its recorded config. */
export function runWork(kind: 'eval' | 'optimize', config: PurposeConfig | null): RunWork {
  const file = config?.data?.file;
  const prompts = Array.isArray(config?.prompts) ? config.prompts.filter((p): p is string => typeof p === 'string') : [];
  return {
    kind,
    model: runModel(config),
    dataset: kind === 'eval' && file ? datasetName(file) : null,
    prompts: kind === 'optimize' ? prompts : [],
    algorithm: kind === 'optimize' && typeof config?.algorithm === 'string' ? config.algorithm : null,
  };
}

/** The run's work in one sentence after its id ("run eval-1 evaluates ..."). */
export function runPurpose(work: RunWork): string {
  if (work.kind === 'eval') return `evaluates ${work.model}${work.dataset ? ` on ${work.dataset}` : ''}: an eval grades the agent and trains nothing`;
  const prompts = work.prompts.map((p) => `"${p}"`);
  const what = prompts.length ? `prompt${prompts.length === 1 ? '' : 's'} ${prompts.join(', ')}` : 'prompts';
  return (
    `optimizes ${what}${work.algorithm ? ` (${work.algorithm})` : ''}, running the agent with ${work.model} on each candidate's texts: ` +
    'it changes prompts and trains no weights'
  );
}

/** The rollout's place in its run, as its metadata (protocol/store.ts RolloutMetadata) records it. */
export interface RolloutPlace {
  taskId?: string;
  sample?: number;
  candidate?: string;
  split?: string;
}

/** Why a call of an eval's or an optimization's rollout was not trained: what the rollout was, in one sentence. */
export function untrainedBecause(runId: string, work: RunWork, place: RolloutPlace): string {
  const row = place.taskId !== undefined ? ` row ${place.taskId}` : '';
  if (work.kind === 'eval') {
    const sample = place.sample ? ` (sample ${place.sample + 1})` : '';
    return `Not trained: an eval rollout of run ${runId}, ${work.model} on ${work.dataset ?? 'its dataset'}${row}${sample}; an eval grades the agent and trains nothing.`;
  }
  const candidate = place.candidate ? `candidate ${candidateLabel(place.candidate)}'s` : 'a';
  const split = place.split ? ` on its ${place.split} split${row ? `,${row}` : ''}` : row;
  return `Not trained: ${candidate} rollout in optimization ${runId}${split}; an optimization scores prompt texts and trains no weights.`;
}
