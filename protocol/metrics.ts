/**
 * Training metric names: the one table of what the trainer (daemon/algorithm/trainer.ts) writes per step
 * to the store and what the dashboard (protocol/webview-dashboard.ts charts, webview/dashboard/), the
 * extension's training progress and the README read back. Names follow verl/TRL's `group/name` style.
 * Beside it: how a person reads each name (METRIC_LABELS: label and unit; the raw key stays visible in
 * tooltips) and what `agl train` records in a run's summary when it stops (TrainingRunSummary).
 */
import type { EngineFacts } from './engine.js';

/**
 * How steps are numbered, in the store and every view (`agl train`'s lines, the editor's progress, the dashboard's
 * axis and notes, the group view, the report, `agl export`): step k is the k-th policy update, counted from 1 as
 * `agl train` prints "step k/N". The step's rollouts, transitions and metrics carry k, and so does the validation
 * after it: a validation at step k measures the policy after k updates (the checkpoint `policy-k`), so a step's
 * training reward and the held-out reward after it share one x. Step 0 is the validation before training.
 */
export const FIRST_TRAINING_STEP = 1;

export const METRICS = {
  /** Mean final reward of the step's rollouts (a failed rollout scores 0). */
  rewardMean: 'reward/mean',
  rewardStd: 'reward/std',
  /** Share of GRPO groups whose credits are all equal (no learning signal). */
  fracRewardZeroStd: 'grpo/frac_reward_zero_std',
  /** Dynamic sampling (training.grpo.dynamicSampling): extra rounds of fresh tasks the step ran, and the groups it trained on. */
  samplingRounds: 'grpo/sampling_rounds',
  groupsKept: 'grpo/groups_kept',
  kl: 'grpo/kl',
  clipRatio: 'grpo/clip_ratio',
  loss: 'grpo/loss',
  gradNorm: 'grpo/grad_norm',
  lr: 'grpo/lr',
  entropy: 'policy/entropy',
  responseLengthMean: 'response/length_mean',
  /** Rollouts the step ran (dynamic sampling's refills included). */
  rolloutCount: 'rollout/count',
  rolloutFailed: 'rollout/failed',
  rolloutTransitions: 'rollout/transitions',
  /** LLM calls the gateway recorded in the step's rollouts (trained or not): 0 = the agent calls its model elsewhere. */
  llmCalls: 'rollout/llm_calls',
  /** Of those, the calls sampled greedily or nearly (span-reading.ts sampledGreedily): a task's samples alike. */
  greedyCalls: 'rollout/greedy_calls',
  tokensPerS: 'perf/tokens_per_s',
  rolloutS: 'perf/rollout_s',
  stepS: 'perf/step_s',
  /** Mean final reward on the validation tasks, at each validation. */
  valReward: 'val/reward',
  /** The validation tasks that mean is over (a failed rollout counts, as 0). */
  valTasks: 'val/tasks',
  /** The engine's peak memory in the step's update (MiB; its kind: TrainingRunSummary.engine.memory). */
  peakMemoryMiB: 'perf/peak_memory_mib',
  /** Completion tokens the step's update trained on (calls with a nonzero advantage, every policy): 0 = no update. */
  trainedTokens: 'grpo/trained_tokens',
  /** Mean and largest |update's log-prob - sampler's log-prob| per trained token: how far the sampler's numerics are. */
  logprobGap: 'sampling/logprob_gap',
  logprobGapMax: 'sampling/logprob_gap_max',
  /** Share of trained tokens whose truncated importance weight hit grpo.tisCap. */
  tisCapped: 'sampling/tis_capped',
  /**
   * A prompt optimization's curve (`agl optimize`, a run of kind 'optimize'), its step being the rollouts spent so far:
   * a candidate's mean val score when it was scored on all of val, and the best val score so far at that point.
   */
  optimizeVal: 'optimize/val',
  optimizeBestVal: 'optimize/best_val',
  /**
   * An LLM judge's part of a step (train.yaml `judge:`): its calls (every try counted once per call), their tokens
   * (prompt and completion, every try), their cost (with judge.priceIn and priceOut), the groups it scored, and the groups
   * it could not score (left out of the update, by why: judge/failed_<kind>, JUDGE_FAILURES).
   */
  judgeCalls: 'judge/calls',
  judgeTokens: 'judge/tokens',
  judgeCost: 'judge/cost',
  judgeGroups: 'judge/groups',
  judgeFailedGroups: 'judge/failed_groups',
  /**
   * The judge's weight in the step's update and why (judge.retest; daemon/judge/reliability.ts): the weight the judged
   * groups' advantages were multiplied by (0: left out, judge/unreliable_groups), the test-retest reliability it comes
   * from (the within-group correlation of the scores two separate calls gave the same trajectories), the reliability's
   * lower 95% bound (weight = its square root), the informativeness (the reliability's square root), the noise variance
   * (mean d²/2 over those pairs), the signal (the spread of its scores within groups), all smoothed over steps, and the
   * step's pairs.
   */
  judgeWeight: 'judge/weight',
  judgeReliability: 'judge/reliability',
  judgeReliabilityLow: 'judge/reliability_low',
  judgeInformativeness: 'judge/informativeness',
  judgeNoise: 'judge/noise',
  judgeSignal: 'judge/signal',
  judgeRetestPairs: 'judge/retest_pairs',
  judgeUnreliableGroups: 'judge/unreliable_groups',
  /**
   * The judge's divergence monitor (daemon/algorithm/judge-divergence.ts): the step's mean trusted reward (a person's
   * label where a rollout has one, else the agent's own: what the judge cannot game), and 1 at a step where the judge's
   * reward rose while it (or the held-out reward) fell over the window.
   */
  judgeTrustedReward: 'judge/trusted_reward',
  judgeDivergence: 'judge/divergence',
} as const;

/** Below this weight a step's notes and `agl train`'s progress say the judge's noise scaled the update. */
export const RELIABILITY_SAID_BELOW = 0.95;

/** Why a judge could not score a group, in the words a step's note says it (protocol/training-health.ts): one, several. */
export const JUDGE_FAILURES = {
  malformed: ['unreadable answer', 'unreadable answers'],
  partial: ['answer missing a trajectory', 'answers missing a trajectory'],
  error: ['request that failed with a 429, a 5xx or a broken connection', 'requests that failed with a 429, a 5xx or a broken connection'],
  timeout: ['timeout', 'timeouts'],
} as const;
export type JudgeFailure = keyof typeof JUDGE_FAILURES;
/** The metric counting a step's groups the judge could not score for this reason. */
export function judgeFailureMetric(kind: JudgeFailure): string {
  return `judge/failed_${kind}`;
}
/** The reason of a `judge/failed_<kind>` metric, or null. */
export function parseJudgeFailureMetric(name: string): JudgeFailure | null {
  const m = /^judge\/failed_([a-z]+)$/.exec(name);
  return m && m[1]! in JUDGE_FAILURES ? (m[1] as JudgeFailure) : null;
}

/**
 * One policy per role: each trained policy's own curves, `policy/<name>/<metric>` with metric one of reward (the mean
 * credit of its calls), transitions, loss, kl, clip_ratio, grad_norm, lr, updates.
 */
export const POLICY_METRICS = ['reward', 'transitions', 'loss', 'kl', 'clip_ratio', 'grad_norm', 'lr', 'updates'] as const;
export type PolicyMetricName = (typeof POLICY_METRICS)[number];
export function policyMetric(policy: string, metric: PolicyMetricName | string): string {
  return `policy/${policy}/${metric}`;
}
/** The policy and metric of a `policy/<name>/<metric>` name, or null. */
export function parsePolicyMetric(name: string): { policy: string; metric: string } | null {
  const m = /^policy\/(.+)\/([a-z_]+)$/.exec(name);
  return m ? { policy: m[1]!, metric: m[2]! } : null;
}

/**
 * Each role's (agent name's) share of a step, `role/<name>/<metric>`, for every role that made an LLM call, trained or
 * not: calls (its LLM calls in the step's rollouts), reward (the mean final reward of the rollouts it took part in),
 * credit (the mean credit of its trained calls; absent for a role not trained) and token_share (its share of the
 * step's trained tokens, grpo/trained_tokens; 0 for a role not trained).
 */
export const ROLE_METRICS = ['calls', 'reward', 'credit', 'token_share'] as const;
export type RoleMetricName = (typeof ROLE_METRICS)[number];
export function roleMetric(role: string, metric: RoleMetricName): string {
  return `role/${role}/${metric}`;
}
/** The role and metric of a `role/<name>/<metric>` name, or null. */
export function parseRoleMetric(name: string): { role: string; metric: string } | null {
  const m = /^role\/(.+)\/([a-z_]+)$/.exec(name);
  return m ? { role: m[1]!, metric: m[2]! } : null;
}

export type MetricName = (typeof METRICS)[keyof typeof METRICS];

/** How a metric is shown: a readable label and the unit of its values ('' for plain numbers such as rewards). */
export interface MetricLabel {
  label: string;
  unit: string;
}

export const METRIC_LABELS: Record<MetricName, MetricLabel> = {
  [METRICS.rewardMean]: { label: 'training reward', unit: '' },
  [METRICS.rewardStd]: { label: 'training reward std', unit: '' },
  [METRICS.fracRewardZeroStd]: { label: 'zero-variance groups', unit: 'share of groups' },
  [METRICS.samplingRounds]: { label: 'dynamic sampling rounds', unit: 'rounds' },
  [METRICS.groupsKept]: { label: 'groups kept', unit: 'groups' },
  [METRICS.kl]: { label: 'KL to reference', unit: 'nats/token' },
  [METRICS.clipRatio]: { label: 'clip ratio', unit: 'share of tokens' },
  [METRICS.loss]: { label: 'loss', unit: '' },
  [METRICS.gradNorm]: { label: 'gradient norm', unit: 'L2 norm' },
  [METRICS.lr]: { label: 'learning rate', unit: '' },
  [METRICS.entropy]: { label: 'policy entropy', unit: 'nats/token' },
  [METRICS.responseLengthMean]: { label: 'response length', unit: 'tokens' },
  [METRICS.rolloutCount]: { label: 'rollouts', unit: 'rollouts' },
  [METRICS.rolloutFailed]: { label: 'failed rollouts', unit: 'rollouts' },
  // A transition is a call trained on (its credit and tokens in the update), not every call the step made.
  [METRICS.rolloutTransitions]: { label: 'transitions (calls trained on)', unit: 'trained calls' },
  [METRICS.llmCalls]: { label: 'LLM calls recorded', unit: 'LLM calls' },
  [METRICS.greedyCalls]: { label: 'greedily sampled calls', unit: 'LLM calls' },
  [METRICS.tokensPerS]: { label: 'training throughput', unit: 'tokens/s' },
  [METRICS.rolloutS]: { label: 'rollout time', unit: 'seconds' },
  [METRICS.stepS]: { label: 'step time', unit: 'seconds' },
  [METRICS.valReward]: { label: 'held-out reward', unit: '' },
  [METRICS.valTasks]: { label: 'held-out tasks', unit: 'tasks' },
  [METRICS.peakMemoryMiB]: { label: 'peak memory', unit: 'MiB' },
  [METRICS.trainedTokens]: { label: 'trained tokens', unit: 'tokens' },
  [METRICS.logprobGap]: { label: 'sampler vs update log-prob gap', unit: 'nats/token' },
  [METRICS.logprobGapMax]: { label: 'largest sampler vs update log-prob gap', unit: 'nats' },
  [METRICS.tisCapped]: { label: 'importance weights at the cap', unit: 'share of tokens' },
  [METRICS.optimizeVal]: { label: "candidate's val score", unit: '' },
  [METRICS.optimizeBestVal]: { label: 'best val score so far', unit: '' },
  [METRICS.judgeCalls]: { label: 'judge calls', unit: 'calls' },
  [METRICS.judgeTokens]: { label: 'judge tokens', unit: 'tokens' },
  [METRICS.judgeCost]: { label: 'judge cost', unit: 'per step' },
  [METRICS.judgeGroups]: { label: 'groups the judge scored', unit: 'groups' },
  [METRICS.judgeFailedGroups]: { label: 'groups the judge could not score', unit: 'groups' },
  [METRICS.judgeWeight]: { label: "judge's weight in the update", unit: '0-1' },
  [METRICS.judgeReliability]: { label: "judge's reliability (test-retest between calls)", unit: 'correlation' },
  [METRICS.judgeReliabilityLow]: { label: "judge's reliability, lower 95% bound", unit: 'correlation' },
  [METRICS.judgeInformativeness]: { label: "judge's informativeness (√ reliability)", unit: '0-1' },
  [METRICS.judgeNoise]: { label: "judge's noise (retest pairs' variance)", unit: 'variance of scores' },
  [METRICS.judgeSignal]: { label: "judge's spread within groups", unit: 'variance of scores' },
  [METRICS.judgeRetestPairs]: { label: 'judge retest pairs (separate calls)', unit: 'pairs' },
  [METRICS.judgeUnreliableGroups]: { label: 'groups left out: judge too unreliable', unit: 'groups' },
  [METRICS.judgeTrustedReward]: { label: "trusted reward (labels, else the agent's own) beside the judge's", unit: '' },
  [METRICS.judgeDivergence]: { label: "judge's reward diverging from the trusted one", unit: '1 = diverging' },
};

/** How a policy's and a role's own metrics read (after its name). */
const POLICY_LABELS: Record<string, MetricLabel> = {
  reward: { label: 'reward of its calls (mean credit)', unit: '' },
  transitions: { label: 'calls trained on', unit: 'trained calls' },
  loss: { label: 'loss', unit: '' },
  kl: { label: 'KL to reference', unit: 'nats/token' },
  clip_ratio: { label: 'clip ratio', unit: 'share of tokens' },
  grad_norm: { label: 'gradient norm', unit: 'L2 norm' },
  lr: { label: 'learning rate', unit: '' },
  updates: { label: 'updates', unit: 'updates' },
};
const ROLE_LABELS: Record<string, MetricLabel> = {
  calls: { label: 'calls', unit: 'LLM calls' },
  reward: { label: 'reward of its rollouts', unit: '' },
  credit: { label: 'mean credit of its calls', unit: '' },
  token_share: { label: 'share of trained tokens', unit: 'share of tokens' },
};

/** A metric's label; a policy's or a role's reads "policy writer loss", "role checker calls"; a name nothing knows is shown as it is. */
export function metricLabel(name: string): MetricLabel {
  const known = (METRIC_LABELS as Record<string, MetricLabel | undefined>)[name];
  if (known) return known;
  const policy = parsePolicyMetric(name);
  if (policy) {
    const l = POLICY_LABELS[policy.metric] ?? { label: policy.metric, unit: '' };
    return { label: `policy ${policy.policy} ${l.label}`, unit: l.unit };
  }
  const role = parseRoleMetric(name);
  if (role) {
    const l = ROLE_LABELS[role.metric] ?? { label: role.metric, unit: '' };
    return { label: `role ${role.role} ${l.label}`, unit: l.unit };
  }
  const failure = parseJudgeFailureMetric(name);
  if (failure) return { label: `groups the judge could not score: ${JUDGE_FAILURES[failure][1]}`, unit: 'groups' };
  return { label: name, unit: '' };
}

/** What a policy or role metric (`reward`, `loss`, `token_share`, ...) reads as, without the policy's or role's name. */
export function ownMetricLabel(kind: 'policy' | 'role', metric: string): MetricLabel {
  return (kind === 'policy' ? POLICY_LABELS : ROLE_LABELS)[metric] ?? { label: metric, unit: '' };
}

/**
 * Why a run stopped: it ran every planned step (`completed`; `max-steps` when training.maxSteps cut the
 * plan that the epochs made), ran out of training.maxMinutes, was stopped by the judge's divergence monitor
 * (`judge-divergence`: training.stopOnDivergence), was cancelled (Ctrl-C, Stop) or failed.
 */
export const STOP_REASONS = ['completed', 'max-steps', 'max-minutes', 'judge-divergence', 'cancelled', 'failed'] as const;
export type StopReason = (typeof STOP_REASONS)[number];

/** A peak memory (MiB) in words, with what it measures: "312 MiB (process RSS)", "21.4 GiB (CUDA)". */
export function describePeakMemory(mib: number, kind?: EngineFacts['memory'] | null): string {
  const size = mib >= 1024 ? `${(mib / 1024).toFixed(1)} GiB` : `${Math.round(mib)} MiB`;
  const what = kind === 'cuda' ? 'CUDA' : kind === 'rss' ? 'process RSS' : kind === 'tfjs' ? 'TF.js tensors' : null;
  return what ? `${size} (${what})` : size;
}

/** What a run was measured on, in a few words: "tfjs · wasm · float32 · 1 rank", "torch · cuda:0 · bfloat16 · 4 ranks (nccl)". */
export function describeEngine(f: EngineFacts): string {
  return `${f.engine} · ${f.device} · ${f.dtype} · ${f.ranks} rank${f.ranks === 1 ? '' : 's'}${f.ranks > 1 && f.backend ? ` (${f.backend})` : ''}`;
}

/** The judge's weight at a step and why (judge.retest, daemon/judge/reliability.ts), for a progress line. */
export interface JudgeWeightSaid {
  /** What the judged groups' advantages were multiplied by (0: left out). */
  weight: number;
  /** The informativeness (null without pairs that spread) and its lower 95% bound (the weight, unless at most the floor). */
  informativeness: number | null;
  bound: number;
  pairs: number;
  floor: number;
  leftOut: number;
}

/**
 * A step's judge in a few words: "16 calls · 41.2k tokens · $0.0123" (and the groups it could not score, when any; its
 * weight when it scaled the update: "judge weight 0.62 (informativeness 0.71, at least 0.62 at 95%, from 40 pairs
 * between calls)", or "judge weight 0 (...): 12 judged groups left out").
 */
export function describeJudgeStep(j: { calls: number; tokens: number; cost: number | null; reliability?: JudgeWeightSaid }, failedGroups = 0): string {
  const tokens = j.tokens >= 1000 ? `${(j.tokens / 1000).toFixed(1)}k` : String(j.tokens);
  const cost = j.cost === null ? '' : ` · $${j.cost < 0.01 ? j.cost.toFixed(4) : j.cost.toFixed(2)}`;
  const failed = failedGroups ? ` · ${failedGroups} group${failedGroups === 1 ? '' : 's'} left out` : '';
  return `${j.calls} call${j.calls === 1 ? '' : 's'} · ${tokens} tokens${cost}${failed}${describeWeight(j.reliability)}`;
}

/** The judge's weight when it bit (below RELIABILITY_SAID_BELOW), for a progress line; '' otherwise. */
function describeWeight(w: JudgeWeightSaid | undefined): string {
  if (!w || w.weight >= RELIABILITY_SAID_BELOW) return '';
  const pairs = `${Math.round(w.pairs)} pair${Math.round(w.pairs) === 1 ? '' : 's'} between calls`;
  const why =
    w.informativeness === null
      ? `no pairs between calls that spread yet`
      : `informativeness ${w.informativeness.toFixed(2)}, at least ${w.bound.toFixed(2)} at 95%, from ${pairs}`;
  const out = w.leftOut > 0 ? `: ${w.leftOut} judged group${w.leftOut === 1 ? '' : 's'} left out` : '';
  const floor = w.leftOut > 0 && w.bound > 0 ? `, at most judge.minReliability ${w.floor}` : '';
  return ` · judge weight ${w.weight.toFixed(2)} (${why}${floor})${out}`;
}

/** A held-out reward with the tasks it is over: "0.50 of 8 tasks" (the tasks unknown in runs recorded before they were). */
export function describeHeldOut(reward: number, tasks: number | null | undefined, digits = 2): string {
  return tasks ? `${reward.toFixed(digits)} of ${tasks} task${tasks === 1 ? '' : 's'}` : reward.toFixed(digits);
}

/** What `agl train` keeps in TrainingRun.summary (all optional: older runs and other writers may lack fields). */
export interface TrainingRunSummary {
  stopReason?: StopReason;
  /** The error of a failed run. */
  error?: string;
  /** Steps the epochs alone would have made (differs from totalSteps when maxSteps cut them). */
  epochSteps?: number;
  /** Training time, resumes included (the wall clock between createdAt and updatedAt counts pauses too). */
  elapsedMs?: number;
  /** The best held-out reward so far, the step it was measured at, and where its weights are kept. */
  best?: { step: number; reward: number; path: string | null };
  valBefore?: number | null;
  valAfter?: number | null;
  minutes?: number;
  report?: string;
  /** The user's name for the run (set from the dashboard; `agl train` never drops it: protocol/lightning-store.ts TrainingRunPatch). */
  label?: string;
  /** The task files the run trained and validated on, absolute (what Train This Agent offers first for the agent next time). */
  data?: { train: string; val: string };
  /** How many tasks: in the training file, and validated on each time (training.valSize of the validation file). */
  tasks?: { train: number; val: number };
  /** What the run was measured on (its policy's engine, device, dtype, ranks; what its peak memory measures). */
  engine?: EngineFacts;
  /** Why the run makes fewer steps than training.maxSteps asked, in one sentence (absent when it makes them all). */
  fewerSteps?: string;
  /**
   * Each trained policy with the settings it trains by, resolved (protocol/policy-set.ts: a role policy's own over the
   * run's), for readers without the resolution rules (the dashboard's header).
   */
  policies?: { name: string; roles: string[] | null; learningRate: number; variant: string; scaleRewards: string; beta: number }[];
}
