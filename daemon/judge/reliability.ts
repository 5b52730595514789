/**
 * How far a judge agrees with itself (test-retest reliability), and how much its scores may be trusted for an update.
 * With judge.retest, the judge is shown one trajectory twice: in group mode each call holds one of the group's
 * trajectories at two places (judge.ts), in single mode one rollout per step is scored by a second call. A consistent
 * judge gives both copies the same score; the difference d of a pair measures its noise: for a score = truth + noise
 * with noise variance s², E[d²] = 2s², so the noise variance is the mean of d²/2 over the pairs. The signal is the spread
 * of its scores within groups (the pooled within-group variance: what GRPO compares), which holds the noise too. Their
 * ratio gives the reliability r = clamp(1 - noise/signal, 0, 1): the share of the spread that is not the judge's noise
 * (1 for a judge that always agrees with itself; ~0 for one that scores at random). The noise in r is not its estimate
 * but that estimate's upper 95% confidence bound (the sum of d²/2 over the pairs is the noise variance times a
 * chi-square of as many degrees of freedom as pairs): a few pairs that happen to agree do not make a judge trusted, so a
 * judge that scores at random reads r 0 from its first step (a point estimate from 8 pairs reads it above 0.3 about one
 * step in four); one that never disagrees with itself reads 1 at once. Both sums are smoothed over steps (an
 * exponential decay of their sums, SMOOTHING), kept in the run's state so a resumed run goes on from them.
 * Pure arithmetic: the trainer applies r (step-advantages.ts), `agl judge check` reports it.
 */

/** How much of the sums the next step keeps: the estimate reads the last ~5 steps (1 / (1 - 0.8)). */
export const SMOOTHING = 0.8;

/** One step's evidence: the sums behind the noise (pairs) and the signal (within-group spread). */
export interface ReliabilityEvidence {
  /** Retest pairs, and the sum of d²/2 over them. */
  pairs: number;
  noiseSum: number;
  /** The sum of squared deviations from their group's mean, and its degrees of freedom (scores - groups, over groups of 2+). */
  spreadSum: number;
  spreadDf: number;
}

/** The smoothed sums (the run's state keeps them: TrainerState.judgeReliability). */
export type ReliabilityState = ReliabilityEvidence;

/** The judge's reliability as read from some evidence: r, the noise and signal variances (null without evidence). */
export interface Reliability {
  r: number;
  /** The noise variance's estimate (mean d²/2), and the upper 95% bound of it that r reads. */
  noise: number | null;
  noiseBound: number | null;
  signal: number | null;
  pairs: number;
}

/** The evidence of a set of groups' scores and retest pairs (each pair: the two scores of one trajectory). */
export function evidenceOf(groups: readonly (readonly number[])[], pairs: readonly (readonly [number, number])[]): ReliabilityEvidence {
  let spreadSum = 0;
  let spreadDf = 0;
  for (const g of groups) {
    if (g.length < 2) continue;
    const mean = g.reduce((a, x) => a + x, 0) / g.length;
    spreadSum += g.reduce((a, x) => a + (x - mean) ** 2, 0);
    spreadDf += g.length - 1;
  }
  const noiseSum = pairs.reduce((a, [x, y]) => a + (x - y) ** 2 / 2, 0);
  return { pairs: pairs.length, noiseSum, spreadSum, spreadDf };
}

/** The sums after one more step: the old ones decayed by `smoothing`, the step's added. */
export function smoothed(state: ReliabilityState | null | undefined, step: ReliabilityEvidence, smoothing = SMOOTHING): ReliabilityState {
  const k = state ? smoothing : 0;
  return {
    pairs: k * (state?.pairs ?? 0) + step.pairs,
    noiseSum: k * (state?.noiseSum ?? 0) + step.noiseSum,
    spreadSum: k * (state?.spreadSum ?? 0) + step.spreadSum,
    spreadDf: k * (state?.spreadDf ?? 0) + step.spreadDf,
  };
}

/**
 * The 5% quantile of a chi-square with `df` degrees of freedom (Wilson-Hilferty; `df` may be fractional, as smoothed
 * sums are): the sum of d²/2 over that many pairs exceeds noise x this 95 times in 100. Near 0 below ~1 pair.
 */
export function chiSquareLow(df: number): number {
  const c = 2 / (9 * df);
  return df * Math.max(0, 1 - c - 1.6449 * Math.sqrt(c)) ** 3;
}

/**
 * The reliability the sums give: r = clamp(1 - noiseBound/signal, 0, 1), noiseBound the noise's upper 95% bound. Without
 * a pair there is no evidence of noise: r 1. A judge whose scores never spread within a group: r 1 when it never
 * disagreed with itself either (nothing to scale: every advantage is 0), else 0.
 */
export function reliabilityOf(s: ReliabilityState | null | undefined): Reliability {
  const signal = s && s.spreadDf > 0 ? s.spreadSum / s.spreadDf : null;
  if (!s || s.pairs <= 0) return { r: 1, noise: null, noiseBound: null, signal, pairs: 0 };
  const noise = s.noiseSum / s.pairs;
  const pairs = Math.round(s.pairs * 1000) / 1000;
  if (noise === 0) return { r: 1, noise, noiseBound: 0, signal, pairs };
  const low = chiSquareLow(s.pairs);
  if (low <= 0) return { r: 0, noise, noiseBound: null, signal, pairs }; // one pair's disagreement bounds nothing
  const noiseBound = s.noiseSum / low;
  if (signal === null || signal === 0) return { r: 0, noise, noiseBound, signal, pairs };
  return { r: Math.min(1, Math.max(0, 1 - noiseBound / signal)), noise, noiseBound, signal, pairs };
}
