/**
 * The numbers an evaluation reports (`agl eval` in daemon/eval/, and the editor's compare view of two eval runs, which
 * reads the same per-task means from the runs' records): the mean over tasks with its 95% interval (Wilson's on pass/fail scores, Student's t otherwise),
 * and a comparison of two evaluations task by task (wins, losses, ties) with a paired test's two-sided p-value and the
 * direction it found.
 *
 * The paired test is the Wilcoxon signed-rank test on the per-task mean differences (zeros dropped, Wilcoxon's way;
 * tied magnitudes get their mean rank). Why it and not the sign test: it also weighs how much each task moved, so a
 * few large gains are not outvoted by many tiny losses, and it has more power on the continuous scores that --repeat
 * or a reward grader give; on 0/1 scores every non-zero difference has the same magnitude, and it is exactly the sign
 * test. Its direction is its statistic's (W+ above or below its null mean n(n+1)/4), never the difference of the means:
 * many small losses and one large gain can raise the mean while the test finds a significant drop.
 * Differences are compared on a grid of SAME_WITHIN, so means of repeated runs that differ by float rounding
 * ((0.1 + 0.2 + 0.3) / 3 against (0.3 + 0.2 + 0.1) / 3) are a tie, not a win. The p-value is exact (the null
 * distribution of W+ over the 2^n sign patterns of the observed ranks, midranks included, by dynamic programming on
 * the ranks' lattice) while that takes at most EXACT_WORK steps: every pass/fail dataset up to thousands of tasks; above,
 * the normal approximation with the variance corrected for ties and a continuity correction of half the lattice's
 * step (on 0/1 scores W+ moves in steps of the one midrank, not of 1).
 */

/** The 1-based ranks of `xs`, tied values their mean rank (midranks). */
export function ranks(xs: readonly number[]): number[] {
  const order = xs.map((x, i) => [x, i] as const).sort((a, b) => a[0] - b[0]);
  const out = new Array<number>(xs.length);
  for (let i = 0; i < order.length;) {
    let j = i;
    while (j + 1 < order.length && order[j + 1]![0] === order[i]![0]) j++;
    for (let k = i; k <= j; k++) out[order[k]![1]] = (i + j) / 2 + 1;
    i = j + 1;
  }
  return out;
}

/** The work (tasks that differ x the lattice points of W+) up to which the p-value is exact: about 0.1 s (270 tasks that differ, 3,000 on 0/1 scores). */
export const EXACT_WORK = 1e7;
/** Two per-task means closer than this are the same (float rounding of repeated runs' means is not a change). */
export const SAME_WITHIN = 1e-9;

/** after - before on the SAME_WITHIN grid: float noise rounds to 0, and equal moves to the same magnitude. */
export const difference = (before: number, after: number): number => Math.round((after - before) / SAME_WITHIN) * SAME_WITHIN;
/** The significance level `agl eval` says "significant" at. */
export const ALPHA = 0.05;

/** A p-value as the reports say it: "p = 0.0020", "p = 3.10e-7", or "p < 1e-15" where double precision has run out. */
export const pSaid = (p: number): string => (p < 1e-15 ? 'p < 1e-15' : `p = ${p < 0.0001 ? p.toExponential(2) : p.toFixed(4)}`);

export const mean = (xs: readonly number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

/**
 * The 95% interval of the mean of `xs` (per-task scores); null under two values.
 *   - Every score 0 or 1 (pass/fail graders): the Wilson score interval of k passes in n. Student's t on 0/1 values
 *     leaves [0, 1] near the ends (15 of 16: 0.80 to 1.07) and has no width at all when every task passes or fails
 *     (16 of 16: 1 to 1), while Wilson's stays inside [0, 1] and says how little 16 tasks prove (16 of 16: 0.81 to 1).
 *   - Otherwise Student's t on the scores (n - 1 degrees of freedom); when every score lies in [0, 1] (fractions of
 *     --repeat, graded scores), so does their mean: the interval is cut to [0, 1].
 */
export function meanInterval(xs: readonly number[], level = 0.95): [number, number] | null {
  const n = xs.length;
  if (n < 2) return null;
  const z = normalQuantile(1 - (1 - level) / 2);
  if (xs.every((x) => x === 0 || x === 1)) return wilsonInterval(xs.filter((x) => x === 1).length, n, z);
  const m = mean(xs);
  const sd = Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / (n - 1));
  const half = tQuantile(1 - (1 - level) / 2, n - 1) * (sd / Math.sqrt(n));
  const unit = xs.every((x) => x >= 0 && x <= 1);
  return unit ? [Math.max(0, m - half), Math.min(1, m + half)] : [m - half, m + half];
}

/** Wilson's score interval for `k` successes in `n` trials at the normal quantile `z`. */
export function wilsonInterval(k: number, n: number, z: number): [number, number] {
  const p = k / n,
    z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  // At k = 0 or k = n one end is exactly 0 or 1; rounding must not move it past.
  return [k === 0 ? 0 : Math.max(0, centre - half), k === n ? 1 : Math.min(1, centre + half)];
}

/** The p-quantile of the standard normal (p in (0.5, 1)), by bisection on its CDF. */
export function normalQuantile(p: number): number {
  let lo = 0,
    hi = 10;
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (normalCdf(mid) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** The p-quantile of Student's t with `df` degrees of freedom (p in (0.5, 1)), by bisection on its CDF. */
export function tQuantile(p: number, df: number): number {
  let lo = 0,
    hi = 1;
  while (tCdf(hi, df) < p) hi *= 2;
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (tCdf(mid, df) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** P(T <= t) for Student's t with df degrees of freedom: 1 - I_x(df/2, 1/2) / 2 with x = df / (df + t^2), for t >= 0. */
export function tCdf(t: number, df: number): number {
  const tail = 0.5 * betaRegularized(df / (df + t * t), df / 2, 0.5);
  return t >= 0 ? 1 - tail : tail;
}

/** The regularized incomplete beta I_x(a, b), by its continued fraction (Lentz's method). */
function betaRegularized(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  if (x > (a + 1) / (a + b + 2)) return 1 - betaRegularized(1 - x, b, a);
  const front = Math.exp(a * Math.log(x) + b * Math.log(1 - x) - logBeta(a, b)) / a;
  const tiny = 1e-300;
  let c = 1,
    d = 1 - ((a + b) * x) / (a + 1);
  d = 1 / (Math.abs(d) < tiny ? tiny : d);
  let f = d;
  for (let m = 1; m <= 300; m++) {
    for (const num of [(m * (b - m) * x) / ((a + 2 * m - 1) * (a + 2 * m)), -((a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1))]) {
      d = 1 + num * d;
      d = 1 / (Math.abs(d) < tiny ? tiny : d);
      c = 1 + num / c;
      if (Math.abs(c) < tiny) c = tiny;
      f *= c * d;
    }
    if (Math.abs(c * d - 1) < 1e-15) break;
  }
  return front * f;
}

const logBeta = (a: number, b: number) => logGamma(a) + logGamma(b) - logGamma(a + b);

/** ln Γ(x) for x > 0 (Lanczos, g = 7). */
function logGamma(x: number): number {
  const g = [
    0.9999999999998099, 676.5203681218851, -1259.1392167224028, 771.3234287776531, -176.6150291621406, 12.507343278686905, -0.13857109526572012,
    9.984369578019572e-6, 1.5056327351493116e-7,
  ];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const z = x - 1;
  let s = g[0]!;
  for (let i = 1; i < 9; i++) s += g[i]! / (z + i);
  const t = z + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(s);
}

/**
 * A paired test's result: W+ (the sum of the ranks of the positive differences), the tasks that differ, the p-value,
 * and the direction of the statistic (W+ above its null mean n(n+1)/4: higher; below: lower).
 */
export interface SignedRank {
  wPlus: number;
  n: number;
  p: number;
  exact: boolean;
  direction: 'higher' | 'lower' | 'none';
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/** Wilcoxon's signed-rank test of the paired differences `diffs` (after - before), two-sided. */
export function wilcoxonSignedRank(diffs: readonly number[]): SignedRank {
  const d = diffs.map((x) => difference(0, x)).filter((x) => x !== 0);
  const n = d.length;
  if (n === 0) return { wPlus: 0, n: 0, p: 1, exact: true, direction: 'none' };
  const rs = ranks(d.map(Math.abs)); // 1-based, tied magnitudes their mean rank
  const wPlus = d.reduce((a, x, i) => a + (x > 0 ? rs[i]! : 0), 0);
  const mu = (n * (n + 1)) / 4;
  const direction = wPlus > mu ? 'higher' : wPlus < mu ? 'lower' : 'none';
  // Doubled ranks are whole numbers (midranks are halves); W+ moves on the lattice of their greatest common divisor.
  const twice = rs.map((r) => Math.round(2 * r));
  const step = twice.reduce(gcd);
  const units = twice.map((r) => r / step);
  const total = units.reduce((a, b) => a + b, 0);
  if (n * total > EXACT_WORK) return { wPlus, n, p: normalSignedRankP(wPlus, rs, step / 2), exact: false, direction };
  // The distribution of 2W+ / step over every sign pattern.
  let dist = new Float64Array(total + 1);
  dist[0] = 1;
  let reach = 0;
  for (const r of units) {
    const next = new Float64Array(total + 1);
    for (let s = 0; s <= reach; s++) {
      if (!dist[s]) continue;
      next[s] += dist[s]! / 2;
      next[s + r] += dist[s]! / 2;
    }
    dist = next;
    reach += r;
  }
  const w = Math.round((2 * wPlus) / step);
  let below = 0,
    above = 0;
  for (let s = 0; s <= total; s++) {
    if (s <= w) below += dist[s]!;
    if (s >= w) above += dist[s]!;
  }
  return { wPlus, n, p: Math.min(1, 2 * Math.min(below, above)), exact: true, direction };
}

/**
 * The two-sided normal approximation of the signed-rank test for W+ over the ranks `rs`: its variance corrected for
 * ties, and a continuity correction of half the `step` W+ moves in (1 without ties; the one midrank when every
 * magnitude ties, as on 0/1 scores, where a correction of 1/2 would be anti-conservative).
 */
export function normalSignedRankP(wPlus: number, rs: readonly number[], step = 1): number {
  const n = rs.length;
  const counts = new Map<number, number>();
  for (const r of rs) counts.set(r, (counts.get(r) ?? 0) + 1);
  const ties = [...counts.values()].reduce((a, t) => a + (t ** 3 - t), 0);
  const mu = (n * (n + 1)) / 4;
  const sigma = Math.sqrt((n * (n + 1) * (2 * n + 1)) / 24 - ties / 48);
  if (sigma === 0) return 1;
  const z = Math.max(0, Math.abs(wPlus - mu) - step / 2) / sigma;
  return Math.min(1, 2 * (1 - normalCdf(z)));
}

/** Φ(z), from erfc (Numerical Recipes' Chebyshev fit, |error| < 1.2e-7). */
function normalCdf(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.5 * x);
  const erfc =
    t *
    Math.exp(
      -x * x -
        1.26551223 +
        t *
          (1.00002368 +
            t *
              (0.37409196 +
                t * (0.09678418 + t * (-0.18628288 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return z >= 0 ? 1 - erfc / 2 : erfc / 2;
}

/** Two evaluations task by task: the tasks both have, who won each, the means over those tasks, the paired test. */
export interface Comparison {
  baselineRunId: string;
  tasks: number;
  /** Tasks only one of them has (left out of the comparison). */
  unmatched: number;
  wins: number;
  losses: number;
  ties: number;
  mean: number;
  baselineMean: number;
  test: SignedRank & { name: 'wilcoxon-signed-rank' };
  significant: boolean;
  /** Which way the test says the scores moved (its statistic's direction, not the means'): what a significant result means. */
  direction: 'better' | 'worse' | 'none';
  /** Per task (ids both have): the baseline's mean and this one's. */
  perTask: { id: string; before: number; after: number }[];
}

/** Compares per-task means (by task id) of this evaluation against a baseline's. */
export function compareTasks(baselineRunId: string, before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>): Comparison {
  const perTask = [...after].filter(([id]) => before.has(id)).map(([id, a]) => ({ id, before: before.get(id)!, after: a }));
  const all = new Set([...before.keys(), ...after.keys()]);
  const diffs = perTask.map((t) => difference(t.before, t.after));
  const test = wilcoxonSignedRank(diffs);
  return {
    baselineRunId,
    tasks: perTask.length,
    unmatched: all.size - perTask.length,
    wins: diffs.filter((x) => x > 0).length,
    losses: diffs.filter((x) => x < 0).length,
    ties: diffs.filter((x) => x === 0).length,
    mean: mean(perTask.map((t) => t.after)),
    baselineMean: mean(perTask.map((t) => t.before)),
    test: { ...test, name: 'wilcoxon-signed-rank' },
    significant: test.p < ALPHA,
    direction: test.direction === 'higher' ? 'better' : test.direction === 'lower' ? 'worse' : 'none',
    perTask,
  };
}

/**
 * A significant comparison's direction in words ("better than X", "worse than X"), the test's, and saying so when the
 * mean moved the other way (a few large changes against many small ones): `agl eval` and the compare view say this.
 */
export function directionSaid(c: Comparison, baseline: string): string {
  const meanMoved = c.mean - c.baselineMean;
  const against = (c.direction === 'better' && meanMoved < 0) || (c.direction === 'worse' && meanMoved > 0);
  return `${c.direction} than ${baseline}${against ? ' (by the ranked per-task changes; the mean moved the other way)' : ''}`;
}
