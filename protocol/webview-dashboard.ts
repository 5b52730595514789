/**
 * Messages between the training dashboard webview (webview/dashboard/) and its panel in the extension
 * host (extension/panels/dashboard-panel.ts), and which metrics (names written by daemon/algorithm/trainer.ts)
 * go on which chart.
 */
import type { MetricPoint, TrainingRun } from './store.js';
import { commandType, notificationType, requestType } from './webview-ipc.js';

export const DASHBOARD_VIEW_TYPE = 'agl.trainingDashboard';

export interface RunMetrics { run: TrainingRun; points: MetricPoint[] }

export interface DashboardState { runId: string | null }

/** The charts, in order. A metric matching none of them lands on "Other". */
export const DASHBOARD_CHARTS: { id: string; title: string; metrics: string[]; unit?: string }[] = [
  { id: 'reward', title: 'Reward', metrics: ['reward/mean', 'val/reward'] },
  { id: 'kl', title: 'KL divergence', metrics: ['grpo/kl'] },
  { id: 'clip', title: 'Clip ratio', metrics: ['grpo/clip_ratio'] },
  { id: 'zero-std', title: 'Zero-variance groups', metrics: ['grpo/frac_reward_zero_std'] },
  { id: 'loss', title: 'Loss and gradient norm', metrics: ['grpo/loss', 'grpo/grad_norm'] },
  { id: 'response', title: 'Response length (tokens)', metrics: ['response/length_mean'] },
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
