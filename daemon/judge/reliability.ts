/**
 * How far a judge agrees with itself (test-retest reliability), and how much its scores may be trusted for an update.
 * With judge.retest, the judge is shown one trajectory twice: in group mode each call holds one of the group's
 * trajectories at two places (judge.ts), in single mode one rollout per step is scored by a second call. A consistent
 * judge gives both copies the same score; the difference d of a pair measures its noise: for a score = truth + noise
 * with noise variance s², E[d²] = 2s², so the noise variance is the mean of d²/2 over the pairs. The signal is the spread
 * of its scores within groups (the pooled within-group variance: what GRPO compares), which holds the noise too. Their
 * ratio gives the reliability r = clamp(1 - noise/signal, 0, 1): the share of the spread that is not the judge's noise
 * (1 for a judge that always agrees with itself; ~0 for one that scores at random). Both are smoothed over steps (an
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
  noise: number | null;
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
 * The reliability the sums give: r = clamp(1 - noise/signal, 0, 1). Without a pair there is no evidence of noise: r 1.
 * A judge whose scores never spread within a group: r 1 when it never disagreed with itself either (nothing to scale:
 * every advantage is 0), else 0.
 */
export function reliabilityOf(s: ReliabilityState | null | undefined): Reliability {
  if (!s || s.pairs <= 0) return { r: 1, noise: null, signal: s && s.spreadDf > 0 ? s.spreadSum / s.spreadDf : null, pairs: 0 };
  const noise = s.noiseSum / s.pairs;
  const signal = s.spreadDf > 0 ? s.spreadSum / s.spreadDf : null;
  const pairs = Math.round(s.pairs * 1000) / 1000;
  if (noise === 0) return { r: 1, noise, signal, pairs };
  if (signal === null || signal === 0) return { r: 0, noise, signal, pairs };
  return { r: Math.min(1, Math.max(0, 1 - noise / signal)), noise, signal, pairs };
}
