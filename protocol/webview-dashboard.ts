/**
 * Messages between the training dashboard webview (webview/dashboard/) and its panel in the extension
 * host (extension/panels/dashboard-panel.ts), and which metrics (metrics.ts, written by the trainer) go on
 * which chart.
 */
import { METRICS } from './metrics.js';
import type { MetricPoint, TrainingRun } from './store.js';
import { commandType, notificationType, requestType } from './webview-ipc.js';

export const DASHBOARD_VIEW_TYPE = 'agl.trainingDashboard';

export interface RunMetrics { run: TrainingRun; points: MetricPoint[] }

export interface DashboardState { runId: string | null }

/** The charts, in order. A metric matching none of them lands on "Other". */
export const DASHBOARD_CHARTS: { id: string; title: string; metrics: string[]; unit?: string }[] = [
  { id: 'reward', title: 'Reward', metrics: [METRICS.rewardMean, METRICS.valReward] },
  { id: 'kl', title: 'KL divergence', metrics: [METRICS.kl] },
  { id: 'clip', title: 'Clip ratio', metrics: [METRICS.clipRatio] },
  { id: 'zero-std', title: 'Zero-variance groups', metrics: [METRICS.fracRewardZeroStd] },
  { id: 'loss', title: 'Loss and gradient norm', metrics: [METRICS.loss, METRICS.gradNorm] },
  { id: 'response', title: 'Response length (tokens)', metrics: [METRICS.responseLengthMean] },
];

export const DashboardProtocol = {
  listRuns: requestType<Record<string, never>, TrainingRun[]>('dashboard/listRuns'),
  getRunMetrics: requestType<{ runId: string }, RunMetrics>('dashboard/getRunMetrics'),
  /** Poll this run and push its new points while it is running. */
  watchRun: commandType<{ runId: string }>('dashboard/watchRun'),
  /** A click on a step: open that step's GRPO groups in the trajectory viewer. */
  openGroups: commandType<{ runId: string; step: number }>('dashboard/openGroups'),
  /** Host -> webview: points after the last ones sent, and the run's new status/step. */
  metrics: notificationType<RunMetrics>('dashboard/metrics'),
  /** Host -> webview: show this run (the panel was opened for it). */
  show: notificationType<{ runId: string }>('dashboard/show'),
} as const;
