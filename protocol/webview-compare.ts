/**
 * The compare view's messages (webview/compare/, its panel extension/panels/compare-panel.ts): two eval runs side by
 * side (protocol/eval-compare.ts EvalCompareView, assembled by the panel from the runs' records), per task both answers
 * and both rewards, filtered to the regressions, the fixes or all, the wins, losses, ties and the paired test on top.
 */
import type { EvalCompareView, EvalRunInfo } from './eval-compare.js';
import { DaemonMessages, commandType, notificationType, requestType } from './webview-ipc.js';

export const COMPARE_VIEW_TYPE = 'agl.evalCompare';

/** Which rows the table shows. */
export const COMPARE_FILTERS = ['regressions', 'fixes', 'all'] as const;
export type CompareFilter = (typeof COMPARE_FILTERS)[number];

/** What the panel keeps (setState): the two runs shown and the filter. */
export interface CompareState {
  baseRunId: string | null;
  runId: string | null;
  filter: CompareFilter;
}

export const CompareProtocol = {
  /** The eval runs in the store, newest first (finished or not: a run that did not finish says so). */
  listRuns: requestType<Record<string, never>, EvalRunInfo[]>('compare/listRuns'),
  /** `runId` against `baseRunId`, task by task. */
  getCompare: requestType<{ baseRunId: string; runId: string }, EvalCompareView>('compare/getCompare'),
  /** A task's rollout in the trajectory viewer. */
  openRollout: commandType<{ rolloutId: string }>('compare/openRollout'),
  /** Host -> webview: show these two runs (the panel was opened for them). */
  show: notificationType<{ baseRunId: string; runId: string }>('compare/show'),
  /** Host -> webview: an eval run appeared or ended (the run pickers list them again). */
  runsChanged: notificationType<Record<string, never>>('compare/runsChanged'),
  ...DaemonMessages,
} as const;
