/**
 * Training metric names: the one table of what the trainer (daemon/algorithm/trainer.ts) writes per step
 * to the store and what the dashboard (protocol/webview-dashboard.ts charts, webview/dashboard/), the
 * extension's training progress and the README read back. Names follow verl/TRL's `group/name` style.
 */
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
  rolloutFailed: 'rollout/failed',
  rolloutTransitions: 'rollout/transitions',
  tokensPerS: 'perf/tokens_per_s',
  rolloutS: 'perf/rollout_s',
  stepS: 'perf/step_s',
  /** Mean final reward on the validation tasks, at each validation. */
  valReward: 'val/reward',
} as const;

export type MetricName = (typeof METRICS)[keyof typeof METRICS];
