/**
 * The optimization view's data and messages: a prompt optimization (`agl optimize`, a run of kind 'optimize') as the
 * editor shows it, assembled by the daemon in one request (GET /v1/agl/views/optimization?runId=,
 * daemon/store/views-optimize.ts optimizationView) from the run, its candidates (protocol/prompts.ts), its optimizer
 * calls and its rollouts. A candidate's score on a val task is the final reward (protocol/span-reading.ts) of its
 * rollout of that task (metadata candidate + taskId + split 'val'); a rollout that ended without one (it failed, timed
 * out) scores 0, with its error as the feedback. The view follows the run live on the daemon's event stream
 * (protocol/events.ts changedOptimizationIds, changedRolloutIds) and re-reads the whole view.
 */
import type { PromotedPrompt, PromptCandidate } from './prompts.js';
import type { TrainingRun } from './store.js';
import { DaemonMessages, commandType, notificationType, requestType } from './webview-ipc.js';

export const OPTIMIZE_VIEW_TYPE = 'agl.optimizationView';

/** One candidate's result on one val task. */
export interface CandidateTaskScore {
  /** The rollout's final reward; 0 when it ended without one. */
  score: number;
  /** What the grader said (the reward's `agl.reward.feedback`), else the rollout's error; null when neither says anything. */
  feedback: string | null;
  /** The rollout it was read from (click-through to the trajectory viewer). */
  rolloutId: string;
}

/** A candidate as the view shows it: its record, and what its rollouts scored. */
export interface OptimizationCandidate extends PromptCandidate {
  /** Its score on each val task that has an ended rollout of it, by task id (the first rollout of a task that ended). */
  val: Record<string, CandidateTaskScore>;
  /** The mean over every val task (valTasks), once it is scored on all of them; null before. */
  valMean: number | null;
  /** Its rollouts of any split (minibatches, val, test). */
  rollouts: number;
}

/** Where the best val score rose: after `rollouts` rollouts of the run, `candidateId` had the best mean, `best`. */
export interface CurvePoint {
  rollouts: number;
  best: number;
  candidateId: string;
}

export interface OptimizationView {
  run: TrainingRun;
  /** Every candidate by ordinal (the seed first). */
  candidates: OptimizationCandidate[];
  /** The val set: the task ids of the run's val rollouts, in the order they were first rolled out. */
  valTasks: string[];
  /** Ids of the per-task Pareto front among the candidates scored on every val task (protocol/pareto.ts), by ordinal. */
  front: string[];
  /** Best val mean so far against rollouts used: a point where it rose (the first candidate scored on all of val, then each better one). */
  curve: CurvePoint[];
  /** The run's rollouts so far (minibatches, val, test: all count against the budget). */
  rolloutsUsed: number;
  /** The optimizer's calls: how many, their tokens, their cost (null when no call was priced). */
  calls: { count: number; tokens: { prompt: number; completion: number }; cost: number | null };
  /** The texts promoted now for the run's agent, of the run's prompts (from this run or not): the view names the next step. */
  promoted: PromotedPrompt[];
}

/** What the panel keeps (setState): the run shown and the candidate selected in it. */
export interface OptimizeState {
  runId: string | null;
  /** The candidate whose diff and reflection are shown (null: the best). */
  candidateId?: string | null;
}

/**
 * The webview (webview/optimize/) and its panel (extension/panels/optimize-panel.ts). The panel tells the webview when
 * the shown run moved (its record, candidates, optimizer calls, or a rollout of its agent: the daemon's events,
 * throttled), and the webview reads the whole view again; Apply is the editor's (extension/optimize-apply.ts).
 */
export const OptimizeProtocol = {
  /** The optimizations in the store (runs of kind 'optimize'), newest first. */
  listRuns: requestType<Record<string, never>, TrainingRun[]>('optimize/listRuns'),
  /** The whole view of one optimization, read again whenever the run moves. */
  getView: requestType<{ runId: string }, OptimizationView>('optimize/getView'),
  /** Tell the webview (`changed`) when this run moves, while the panel is visible. */
  watchRun: commandType<{ runId: string; agent: string }>('optimize/watchRun'),
  /** A candidate's rollouts (all splits), listed in the trajectory viewer filtered by it. */
  openRollouts: commandType<{ runId: string; candidateId: string }>('optimize/openRollouts'),
  /** One rollout (a cell of the grid) in the trajectory viewer. */
  openRollout: commandType<{ rolloutId: string }>('optimize/openRollout'),
  /** Apply a candidate: a file seed's text in VS Code's diff editor, a string seed promoted; asked first. */
  apply: commandType<{ runId: string; candidateId: string }>('optimize/apply'),
  /** Host -> webview: the watched run moved; read the view again. */
  changed: notificationType<{ runId: string }>('optimize/changed'),
  /** Host -> webview: an optimization appeared (a view waiting for one lists the runs again). */
  runAppeared: notificationType<Record<string, never>>('optimize/runAppeared'),
  /** Host -> webview: show this run (the panel was opened for it), and this candidate in it. */
  show: notificationType<{ runId: string; candidateId?: string }>('optimize/show'),
  ...DaemonMessages,
} as const;
