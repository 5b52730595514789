/**
 * How informative a judge is (test-retest between separate calls), and the weight its scores get in an update.
 * With judge.retest, some of a step's groups are scored a second time by a separate call (group mode: the whole group
 * again, shuffled anew; single mode: one rollout of a few groups gets a second call). GRPO compares scores within a
 * group, so the statistic is within groups: a = a first score's deviation from its group's mean, b = the second score's
 * deviation from the mean of the group as the second call saw it; the test-retest reliability is the pooled
 * within-group correlation r = Σab / sqrt(Σa² Σb²). Scores made of a part the judge reproduces (c) and noise it does
 * not have r = Var(c) / Var(score) (an intraclass correlation), whatever the noise's size against the truth's spread: a
 * 0/1 judge flipping each score with probability f has r = (1 - 2f)² on groups of both outcomes, 0 at f = 0.5. A judge
 * scoring at random, or only by the place a trajectory is shown at (shuffled anew in each call), has r 0. Its
 * informativeness is sqrt(r), the correlation of a score with the part the judge reproduces (1 - 2f for that judge).
 * The weight reads a lower bound, not the estimate: Fisher's z of r, one-sided 95%, its standard error 1 / sqrt(df - 2)
 * with df the pairs less the group means estimated from them (a group shown again whole: its size - 1; one rollout of
 * a group of n: 1 - 1/n; a Pearson correlation of n values has df n - 1 and the textbook n - 3 under the root). The
 * bound decides whether the judge is shown informative at all, the estimate how much: weight = its informativeness
 * (sqrt(r), r capped at 1 - 1/df) where the bound is above 0, else 0. A judge whose scores are not shown to reproduce
 * gets 0 (its groups left out), one pair never bounds anything, and a perfect agreement over df values reads as at
 * most sqrt(1 - 1/df) (no 1 from a handful of 0/1 scores that happened to agree). Why not the bound itself (as a first
 * version did): a run that continues its warm-up's Adam state (calc's does) keeps that state's scale of gradients, so
 * the weight multiplies the step size; the bound of a judge right 80% of the time read 0.1-0.4 and taught 0.29 -> 0.61
 * in 16 steps where its estimate teaches 0.29 -> 0.92 (`npm run bench:judge -- --ways right80 --steps 16`), while pure
 * noise and a position-only judge stay at 0 wherever the bound is 0 (95% of their steps) and small where it is not. All sums are smoothed over steps (SMOOTHING), kept in the run's state
 * so a resumed run goes on from them. The noise (mean d²/2 over the pairs) and the signal (the pooled within-group
 * variance of the scores) are kept for the charts. Pure arithmetic: step-advantages.ts applies the weight, `agl judge
 * check` reports it.
 */

/** How much of the sums the next step keeps: the estimate reads the last ~5 steps (1 / (1 - 0.8)). */
export const SMOOTHING = 0.8;

/** The one-sided 95% normal quantile the weight's lower bound reads. */
const Z95 = 1.6449;

/** One step's evidence: the retest sums behind the correlation, the noise, and the within-group spread. */
export interface ReliabilityEvidence {
  /** Pairs scored by two separate calls, and the sum of d²/2 over them. */
  pairs: number;
  noiseSum: number;
  /** Σab, Σa², Σb² over the pairs (deviations from their group's mean in each call), and their degrees of freedom. */
  crossSum: number;
  firstSum: number;
  secondSum: number;
  df: number;
  /** The sum of squared deviations from their group's mean, and its degrees of freedom (scores - groups, over groups of 2+). */
  spreadSum: number;
  spreadDf: number;
}

/** The smoothed sums (the run's state keeps them: TrainerState.judgeReliability). */
export type ReliabilityState = ReliabilityEvidence;

/** A judge's reliability as read from some evidence (null estimates without evidence). */
export interface Reliability {
  /** The test-retest correlation within groups, between separate calls. */
  r: number | null;
  /** Its lower 95% bound (0 where the evidence bounds nothing). */
  low: number;
  /** sqrt(r): the correlation of a score with the part of it the judge reproduces. */
  informativeness: number | null;
  /** What the judged groups' advantages are multiplied by: the informativeness where its bound is above 0, else 0. */
  weight: number;
  /** The noise variance (mean d²/2 over the pairs) and the signal (pooled within-group variance of the scores). */
  noise: number | null;
  signal: number | null;
  pairs: number;
  df: number;
}

/** One group's scores and, where a separate call scored a member again, its second score (null: not scored again). */
export interface RetestGroup {
  scores: readonly number[];
  seconds: readonly (number | null)[];
}

const mean = (xs: readonly number[]) => xs.reduce((a, x) => a + x, 0) / xs.length;

/** The evidence of a set of groups' scores and their second scores from separate calls. */
export function evidenceOf(groups: readonly RetestGroup[]): ReliabilityEvidence {
  const e: ReliabilityEvidence = { pairs: 0, noiseSum: 0, crossSum: 0, firstSum: 0, secondSum: 0, df: 0, spreadSum: 0, spreadDf: 0 };
  for (const { scores, seconds } of groups) {
    if (scores.length < 2) continue; // a group of one compares nothing, in GRPO or here
    const m1 = mean(scores);
    e.spreadSum += scores.reduce((a, x) => a + (x - m1) ** 2, 0);
    e.spreadDf += scores.length - 1;
    const again = scores.map((x, i) => ({ x, y: seconds[i] ?? null })).filter((p): p is { x: number; y: number } => p.y !== null);
    if (!again.length) continue;
    const m2 = mean(scores.map((x, i) => seconds[i] ?? x)); // the group as the second call saw it
    for (const { x, y } of again) {
      e.crossSum += (x - m1) * (y - m2);
      e.firstSum += (x - m1) ** 2;
      e.secondSum += (y - m2) ** 2;
      e.noiseSum += (x - y) ** 2 / 2;
    }
    e.pairs += again.length;
    e.df += again.length * (1 - 1 / scores.length); // the share of the group's mean estimated from the pairs
  }
  return e;
}

/** The sums after one more step: the old ones decayed by `smoothing`, the step's added (a sum an older state lacks: 0). */
export function smoothed(state: Partial<ReliabilityState> | null | undefined, step: ReliabilityEvidence, smoothing = SMOOTHING): ReliabilityState {
  const k = state ? smoothing : 0;
  const keys = Object.keys(step) as (keyof ReliabilityEvidence)[];
  return Object.fromEntries(keys.map((key) => [key, k * (state?.[key] ?? 0) + step[key]])) as unknown as ReliabilityState;
}

/** The one-sided 95% lower bound of a correlation r over df degrees of freedom (Fisher's z); 0 below 3 df. */
export function correlationLow(r: number, df: number): number {
  if (df <= 2) return 0;
  const capped = Math.max(-1 + 1 / df, Math.min(1 - 1 / df, r));
  return Math.tanh(Math.atanh(capped) - Z95 / Math.sqrt(df - 2));
}

/** The reliability the sums give: the correlation, its bound, and the weight (0 without evidence of informativeness). */
export function reliabilityOf(s: Partial<ReliabilityState> | null | undefined): Reliability {
  const signal = s?.spreadDf ? (s.spreadSum ?? 0) / s.spreadDf : null;
  const pairs = Math.round((s?.pairs ?? 0) * 1000) / 1000;
  const df = Math.round((s?.df ?? 0) * 1000) / 1000;
  const noise = pairs > 0 ? (s?.noiseSum ?? 0) / (s?.pairs ?? 1) : null;
  const spread = Math.sqrt((s?.firstSum ?? 0) * (s?.secondSum ?? 0));
  if (!spread) return { r: null, low: 0, informativeness: null, weight: 0, noise, signal, pairs, df };
  const r = Math.max(-1, Math.min(1, (s?.crossSum ?? 0) / spread));
  const low = Math.max(0, correlationLow(r, s?.df ?? 0));
  const informativeness = Math.sqrt(Math.max(0, r));
  // The bound decides whether there is evidence at all; the estimate how much (capped as the bound is: no 1 from a few values).
  const weight = low > 0 ? Math.sqrt(Math.min(r, 1 - 1 / (s?.df ?? 1))) : 0;
  return { r, low, informativeness, weight, noise, signal, pairs, df };
}
