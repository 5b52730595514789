/**
 * The GRPO advantage formula, defined once: the trainer (daemon/algorithm/grpo.ts) computes advantages
 * with it, and the trajectory viewer's group view uses it to show which numbers a stored advantage came
 * from. A group is every transition (LLM call) of the n rollouts of one task, so the group's mean and std
 * are over the calls' credits, not over the rollouts' rewards: a rollout with two calls counts twice.
 *   scaleRewards 'group'  A = (credit - group mean) / (group std + eps)     (GRPO, DeepSeekMath)
 *   scaleRewards 'batch'  A = (credit - group mean) / (batch std + eps)     (the whole step's calls)
 *   scaleRewards 'none'   A =  credit - group mean                          (Dr.GRPO)
 * std is the unbiased sample standard deviation (as verl and TRL), 0 for fewer than two values.
 */

export type ScaleRewards = 'group' | 'batch' | 'none';

/** Added to the std before dividing, so a zero-variance group gives 0 and not NaN. */
export const STD_EPS = 1e-6;

export function meanOf(xs: readonly number[]): number {
  return xs.length ? xs.reduce((a, x) => a + x, 0) / xs.length : 0;
}

/** Unbiased standard deviation (0 for fewer than 2 values). */
export function stdUnbiased(xs: readonly number[]): number {
  if (xs.length < 2) return 0;
  const m = meanOf(xs);
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1));
}

/** What the advantage of a group's call is divided by. */
export function advantageDivisor(scale: ScaleRewards, groupStd: number, batchStd: number): number {
  return scale === 'group' ? groupStd + STD_EPS : scale === 'batch' ? batchStd + STD_EPS : 1;
}

/** Whether every credit of a group is the same: the group carries no signal. */
export function isZeroVariance(credits: readonly number[]): boolean {
  return credits.every((c) => c === credits[0]);
}
