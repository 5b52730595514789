/**
 * Messages between the training dashboard webview (webview/dashboard/) and its panel in the extension
 * host (extension/panels/dashboard-panel.ts), and which metrics (metrics.ts, written by the trainer) go on
 * which chart, with the title of its value axis.
 */
import type { AgentHeadline } from './agent-headline.js';
import { JUDGE_FAILURES, METRICS, judgeFailureMetric, type JudgeFailure } from './metrics.js';
import type { MetricPoint, TrainingRun } from './store.js';
import { DaemonMessages, commandType, notificationType, requestType } from './webview-ipc.js';

export const DASHBOARD_VIEW_TYPE = 'agl.trainingDashboard';

export interface RunMetrics {
  run: TrainingRun;
  points: MetricPoint[];
}

export interface DashboardState {
  runId: string | null;
  /** Runs overlaid on the charts besides `runId`, in the order they were picked. */
  compare?: string[];
  /** EMA smoothing weight, 0 (raw) to 0.99. */
  smoothing?: number;
}

export interface DashboardChart {
  id: string;
  title: string;
  metrics: string[];
  /** Title of the value axis, with its unit. */
  yTitle: string;
  /** Drawn even when its values are constant (the reward is what a run is about). */
  pinned?: boolean;
}

/**
 * The charts, in order: one scale each (loss and gradient norm apart). A metric matching none of them
 * lands on a chart of its own; a chart whose values never change collapses into the "constant:" line.
 */
export const DASHBOARD_CHARTS: DashboardChart[] = [
  { id: 'reward', title: 'Reward', metrics: [METRICS.rewardMean, METRICS.valReward], yTitle: 'mean reward', pinned: true },
  { id: 'zero-std', title: 'Zero-variance groups', metrics: [METRICS.fracRewardZeroStd], yTitle: 'share of groups' },
  { id: 'loss', title: 'Loss', metrics: [METRICS.loss], yTitle: 'GRPO loss' },
  { id: 'grad-norm', title: 'Gradient norm', metrics: [METRICS.gradNorm], yTitle: 'L2 norm' },
  { id: 'kl', title: 'KL divergence', metrics: [METRICS.kl], yTitle: 'nats/token' },
  { id: 'clip', title: 'Clip ratio', metrics: [METRICS.clipRatio], yTitle: 'share of tokens' },
  { id: 'lr', title: 'Learning rate', metrics: [METRICS.lr], yTitle: 'learning rate' },
  { id: 'entropy', title: 'Policy entropy', metrics: [METRICS.entropy], yTitle: 'nats/token' },
  { id: 'response', title: 'Response length', metrics: [METRICS.responseLengthMean], yTitle: 'tokens' },
  // How far the sampler's log-probs are from the update's own (bfloat16 sampling, an external server): the ratio is
  // against the update's, the sampler's enter through a truncated importance weight (grpo.ratioBase, tisCap).
  { id: 'sampler-gap', title: 'Sampler vs update log-probs', metrics: [METRICS.logprobGap, METRICS.logprobGapMax], yTitle: 'nats (per token, largest)' },
  // An LLM judge's part of each step (train.yaml judge:): the groups it scored and those it left out (by why), its cost.
  {
    id: 'judge-groups',
    title: 'Judge: calls, groups scored and left out',
    metrics: [
      METRICS.judgeCalls,
      METRICS.judgeGroups,
      METRICS.judgeFailedGroups,
      ...(Object.keys(JUDGE_FAILURES) as JudgeFailure[]).map(judgeFailureMetric),
      METRICS.judgeRetestPairs,
      METRICS.judgeUnreliableGroups,
    ],
    yTitle: 'calls, groups',
  },
  // judge.retest: the judge's weight in the update and why (its scores' correlation between separate calls, the bound).
  {
    id: 'judge-reliability',
    title: 'Judge: weight, and the test-retest reliability between calls it comes from',
    metrics: [METRICS.judgeWeight, METRICS.judgeInformativeness, METRICS.judgeReliability, METRICS.judgeReliabilityLow],
    yTitle: 'weight = √(reliability at least, 95%); 0: groups left out',
  },
  { id: 'judge-noise', title: 'Judge: noise against signal', metrics: [METRICS.judgeNoise, METRICS.judgeSignal], yTitle: 'variance of scores' },
  { id: 'judge-cost', title: 'Judge: cost per step', metrics: [METRICS.judgeCost], yTitle: 'cost (at judge.priceIn / priceOut)' },
  { id: 'judge-tokens', title: 'Judge: tokens per step', metrics: [METRICS.judgeTokens], yTitle: 'tokens (prompt + completion)' },
];

export const DashboardProtocol = {
  listRuns: requestType<Record<string, never>, TrainingRun[]>('dashboard/listRuns'),
  getRunMetrics: requestType<{ runId: string }, RunMetrics>('dashboard/getRunMetrics'),
  /** The agent's headline number, as its CodeLens shows it (agent-headline.ts). */
  getHeadline: requestType<{ agent: string }, AgentHeadline>('dashboard/getHeadline'),
  /** Names a run (the user's label, kept across agl train's summary updates); '' clears it. Answers the updated run. */
  setRunLabel: requestType<{ runId: string; label: string }, TrainingRun>('dashboard/setRunLabel'),
  /** Push the new points of this run (and of the compared runs) as they land. */
  watchRun: commandType<{ runId: string; compare?: string[] }>('dashboard/watchRun'),
  /** A click on a step: open that step's GRPO groups in the trajectory viewer. */
  openGroups: commandType<{ runId: string; step: number }>('dashboard/openGroups'),
  /** "Compare evals": the compare view of eval runs (before and after this training, say), on its newest two. */
  openEvalCompare: commandType<Record<string, never>>('dashboard/openEvalCompare'),
  /** Host -> webview: points of a watched run after the last ones sent, and the run's new status/step. */
  metrics: notificationType<RunMetrics>('dashboard/metrics'),
  /** Host -> webview: a training run appeared (a dashboard waiting for one lists the runs again). */
  runAppeared: notificationType<Record<string, never>>('dashboard/runAppeared'),
  /** Host -> webview: show this run (the panel was opened for it). */
  show: notificationType<{ runId: string }>('dashboard/show'),
  ...DaemonMessages,
} as const;
