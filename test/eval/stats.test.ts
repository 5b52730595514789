/**
 * The numbers `agl eval` reports, checked against answers worked out independently: the Wilcoxon signed-rank test's
 * exact p-values against counts of sign patterns done by hand and against brute-force enumeration of all 2^n
 * patterns (ties included), on 0/1 scores against the exact binomial sign test it reduces to; Student's t against
 * the Cauchy distribution (t with 1 degree of freedom, whose CDF has a closed form) and the printed tables; the
 * comparison's wins, losses and ties; its direction (the statistic's, not the means') in the verdict and the
 * --no-worse-than gate; the tie-corrected normal approximation against the exact sign test; float noise as no change.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EvalSummary } from '../../protocol/eval.js';
import {
  compareTasks,
  mean,
  meanInterval,
  normalQuantile,
  normalSignedRankP,
  pSaid,
  tCdf,
  tQuantile,
  wilcoxonSignedRank,
  wilsonInterval,
} from '../../protocol/eval-stats.js';
import { comparisonLines, gates } from '../../daemon/eval/report.js';

const close = (a: number, b: number, eps = 1e-9, what = '') => assert.ok(Math.abs(a - b) <= eps, `${what} ${a} vs ${b}`);

/** The two-sided p of W+ by enumerating every sign pattern of the magnitudes' midranks (the test's definition). */
function bruteForceP(diffs: number[]): number {
  const d = diffs.filter((x) => x !== 0);
  const abs = d.map(Math.abs);
  const rank = abs.map((v) => {
    const less = abs.filter((w) => w < v).length,
      same = abs.filter((w) => w === v).length;
    return less + (same + 1) / 2;
  });
  const observed = d.reduce((a, x, i) => a + (x > 0 ? rank[i]! : 0), 0);
  let below = 0,
    above = 0;
  const total = 2 ** d.length;
  for (let mask = 0; mask < total; mask++) {
    let w = 0;
    for (let i = 0; i < d.length; i++) if (mask & (1 << i)) w += rank[i]!;
    if (w <= observed + 1e-9) below++;
    if (w >= observed - 1e-9) above++;
  }
  return Math.min(1, (2 * Math.min(below, above)) / total);
}

const choose = (n: number, k: number): number => (k < 0 || k > n ? 0 : k === 0 ? 1 : (choose(n - 1, k - 1) * n) / k);

test('the signed-rank p-value is exact: hand-counted cases', () => {
  // Five tasks all better, distinct magnitudes: only the all-plus pattern reaches W+ = 15 (and all-minus 0): p = 2/32.
  close(wilcoxonSignedRank([0.1, 0.2, 0.3, 0.4, 0.5]).p, 2 / 32);
  // Six: 2/64, below 0.05 (five never can be).
  close(wilcoxonSignedRank([1, 2, 3, 4, 5, 6]).p, 2 / 64);
  // [1, 2, -3, 4, 5]: W+ = 12; the subsets of {1..5} summing to >= 12 are the complements of those summing to <= 3
  // ({}, {1}, {2}, {3}, {1,2}): 5 of 32, so p = 10/32.
  const r = wilcoxonSignedRank([1, 2, -3, 4, 5]);
  assert.equal(r.wPlus, 12);
  assert.equal(r.n, 5);
  assert.equal(r.exact, true);
  close(r.p, 10 / 32);
  // Zeros are dropped (Wilcoxon's way): the same test as without them.
  close(wilcoxonSignedRank([0, 1, 2, -3, 0, 4, 5]).p, 10 / 32);
  // Nothing differs: no evidence of a change.
  assert.equal(wilcoxonSignedRank([0, 0, 0]).p, 1);
});

test('on 0/1 scores it is the exact two-sided sign test (binomial)', () => {
  for (const [wins, losses] of [
    [8, 1],
    [6, 0],
    [5, 5],
    [3, 9],
    [12, 2],
  ] as const) {
    const n = wins + losses;
    const k = Math.max(wins, losses);
    let tail = 0;
    for (let j = k; j <= n; j++) tail += choose(n, j);
    const binomial = Math.min(1, (2 * tail) / 2 ** n);
    const diffs = [...Array(wins).fill(1), ...Array(losses).fill(-1), 0, 0, 0];
    close(wilcoxonSignedRank(diffs).p, binomial, 1e-12, `${wins} wins, ${losses} losses`);
  }
  // 8 of 9: (C(9,8) + C(9,9)) / 512 each side: 20/512.
  close(wilcoxonSignedRank([1, 1, 1, 1, 1, 1, 1, 1, -1]).p, 20 / 512);
});

test('with tied magnitudes (midranks) it matches enumerating every sign pattern', () => {
  const cases = [
    [0.5, 0.5, -0.25, 1, 1, 1, -0.5, 0.75],
    [1, -1, 2, -2, 3, 3, 0.5, 0, 4],
    [-0.1, -0.2, -0.2, -0.3, 0.4, -0.4, -0.5, -0.5, -0.5, 0.6, -1, -1],
    [2, 2, 2, 2, 2, -2, -2, 1, 1, 3, 3, 3, -3, 0.5],
  ];
  for (const diffs of cases) close(wilcoxonSignedRank(diffs).p, bruteForceP(diffs), 1e-12, JSON.stringify(diffs));
});

test('above the exact range it says so and gives the normal approximation', () => {
  // 400 tasks that differ, every magnitude its own: symmetric differences give p near 1, a strong shift a tiny p.
  const symmetric = Array.from({ length: 400 }, (_, i) => (i % 2 ? 1 : -1) * (1 + (i >> 1)));
  const r = wilcoxonSignedRank(symmetric);
  assert.equal(r.exact, false);
  assert.ok(r.p > 0.5, String(r.p));
  const shifted = Array.from({ length: 400 }, (_, i) => (i % 10 === 0 ? -1 : 1) * (1 + i));
  assert.ok(wilcoxonSignedRank(shifted).p < 1e-10);
});

/** The two-sided exact sign test of `wins` of `n` (BigInt binomial counts: no rounding until the division). */
function exactSignTest(wins: number, n: number): number {
  let tail = 0n,
    c = 1n;
  const k = Math.max(wins, n - wins);
  for (let j = 0; j <= n; j++) {
    if (j >= k) tail += c;
    c = (c * BigInt(n - j)) / BigInt(j + 1);
  }
  return Math.min(1, Number((2n * tail * 10n ** 18n) / 2n ** BigInt(n)) / 1e18);
}

test('many tied magnitudes: 61 wins of 102 on 0/1 scores is the exact sign test (p = 0.0594), not 0.048', () => {
  const diffs = [...Array(61).fill(1), ...Array(41).fill(-1)];
  const r = wilcoxonSignedRank(diffs);
  assert.equal(r.exact, true);
  assert.equal(r.wPlus, 61 * 51.5);
  close(r.p, exactSignTest(61, 102), 1e-12);
  close(r.p, 0.0594005369, 1e-9);
  assert.ok(!compareTasks('eval-x', new Map(diffs.map((_, i) => [`t${i}`, 0.5])), new Map(diffs.map((d, i) => [`t${i}`, 0.5 + d / 2]))).significant);
  // The normal approximation, where it is used, corrects for the ties: W+ moves in steps of the midrank 51.5, so its
  // continuity correction is 51.5 / 2. By hand: mean 102 x 103 / 4 = 2626.5; variance 102 x 103 x 205 / 24 -
  // (102^3 - 102) / 48 = 67632.375; z = (3141.5 - 2626.5 - 25.75) / sqrt(67632.375) = 1.881280; two-sided
  // p = erfc(z / sqrt 2) = 0.0599338 (a correction of 1/2 gives z = 1.978372, p = 0.0478867: "significant").
  const midranks = Array(102).fill(51.5);
  close(normalSignedRankP(61 * 51.5, midranks, 51.5), 0.059933795, 1e-6);
  close(normalSignedRankP(61 * 51.5, midranks, 1), 0.047886703, 1e-6);
});

test("the direction is the test statistic's: many small drops and one large gain are a significant drop although the mean rises", () => {
  // 14 tasks 0.55 -> 0.50 and one 0.10 -> 1.00. Magnitudes: 14 tied at 0.05 (midrank 7.5), 0.9 rank 15: W+ = 15,
  // below its null mean 15 x 16 / 4 = 60. Null: W+ = 15b + 7.5k (b a fair coin, k ~ Bin(14, 1/2)); W+ <= 15 when b = 0
  // and k <= 2 (1 + 14 + 91 patterns) or b = 1 and k = 0 (1): 107 of 2^15, two-sided p = 214 / 32768 = 0.00653.
  const ids = Array.from({ length: 15 }, (_, i) => `t${i}`);
  const before = new Map(ids.map((id, i) => [id, i === 14 ? 0.1 : 0.55]));
  const after = new Map(ids.map((id, i) => [id, i === 14 ? 1 : 0.5]));
  const c = compareTasks('eval-base', before, after);
  assert.deepEqual([c.wins, c.losses, c.ties, c.test.wPlus, c.test.n], [1, 14, 0, 15, 15]);
  close(c.test.p, 214 / 32768, 1e-12);
  close(c.test.p, bruteForceP(ids.map((id) => after.get(id)! - before.get(id)!)), 1e-12);
  assert.ok(c.mean > c.baselineMean, 'the mean rises: 0.520 -> 0.533');
  assert.equal(c.significant, true);
  assert.equal(c.direction, 'worse');
  const lines = comparisonLines(c).join('\n');
  assert.match(lines, /significant \(p < 0\.05\): worse than eval-base \(by the ranked per-task changes; the mean moved the other way\)/);
  assert.doesNotMatch(lines, /better than/);
  const [gate] = gates({ mean: c.mean } as EvalSummary, null, c);
  assert.equal(gate!.ok, false, '--no-worse-than fails on a significant drop');
  assert.match(gate!.said, /significantly worse than eval-base/);
  // The mirror image: a significant gain whose mean falls never fails CI.
  const mirrored = compareTasks('eval-base', after, before);
  assert.equal(mirrored.direction, 'better');
  assert.ok(mirrored.mean < mirrored.baselineMean);
  assert.equal(gates({ mean: mirrored.mean } as EvalSummary, null, mirrored)[0]!.ok, true);
  assert.match(comparisonLines(mirrored).join('\n'), /significant \(p < 0\.05\): better than eval-base \(by the ranked/);
});

test('means of repeated runs that differ by float rounding are a tie, and equal moves rank as tied', () => {
  // (0.1 + 0.2 + 0.3) / 3 = 0.20000000000000004 and (0.3 + 0.2 + 0.1) / 3 = 0.19999999999999998: the same three scores.
  const before = new Map([
    ['a', (0.1 + 0.2 + 0.3) / 3],
    ['b', (0.3 + 0.2 + 0.1) / 3],
  ]);
  const after = new Map([
    ['a', (0.3 + 0.2 + 0.1) / 3],
    ['b', (0.1 + 0.2 + 0.3) / 3],
  ]);
  const c = compareTasks('eval-x', before, after);
  assert.deepEqual([c.wins, c.losses, c.ties, c.test.n, c.direction], [0, 0, 2, 0, 'none']);
  // 0.7 - 0.4 = 0.29999999999999993 and 0.4 - 0.1 = 0.30000000000000004: one move, so one midrank (1.5) each.
  assert.equal(wilcoxonSignedRank([0.7 - 0.4, -(0.4 - 0.1)]).wPlus, 1.5);
});

test("Student's t: the Cauchy CDF at 1 degree of freedom, and the tables' 97.5% quantiles", () => {
  for (const t of [-3, -0.5, 0, 0.7, 2, 12.706]) close(tCdf(t, 1), 0.5 + Math.atan(t) / Math.PI, 1e-9, `t=${t}`);
  for (const [df, q] of [
    [1, 12.7062],
    [2, 4.3027],
    [5, 2.5706],
    [10, 2.2281],
    [30, 2.0423],
    [120, 1.9799],
  ] as const)
    close(tQuantile(0.975, df), q, 5e-4, `df=${df}`);
});

test('the mean interval of continuous scores is the t interval of the per-task means, cut to [0, 1] when they lie in it', () => {
  const xs = [0.5, 0.25, 0.75, 0.5, 0, 1, 0.5, 0.25];
  const [lo, hi] = meanInterval(xs)!;
  const m = mean(xs);
  const sd = Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / 7);
  close((lo + hi) / 2, m);
  close(hi - m, 2.3646 * (sd / Math.sqrt(8)), 1e-3);
  // Near the top the t interval would pass 1.0; scores in [0, 1] have a mean in [0, 1].
  const high = [1, 1, 1, 1, 1, 1, 1, 0.5];
  const [, top] = meanInterval(high)!;
  assert.equal(top, 1);
  // Scores outside [0, 1] (an agent's own reward) keep the whole t interval.
  const wide = [2, -1, 3, 0.5];
  const [wlo, whi] = meanInterval(wide)!;
  close(wlo + whi, 2 * mean(wide));
  assert.ok(wlo < -1 && whi > 3, `${wlo} ${whi}`);
  assert.equal(meanInterval([1]), null);
});

test("pass/fail scores get Wilson's interval: inside [0, 1], and not zero-width when every task passes", () => {
  // Reference values: Wilson (1927) with z = 1.959964 (as statsmodels' proportion_confint(method='wilson') gives them).
  const at = (k: number, n: number) => meanInterval([...Array(k).fill(1), ...Array(n - k).fill(0)])!;
  const [a, b] = at(15, 16);
  close(a, 0.71671, 1e-4);
  close(b, 0.98889, 1e-4);
  const [c, d] = at(16, 16);
  close(c, 0.80639, 1e-4);
  assert.equal(d, 1);
  const [e, f] = at(0, 16);
  assert.equal(e, 0);
  close(f, 0.19361, 1e-4);
  const [g, h] = at(5, 16);
  close(g, 0.14165, 1e-4);
  close(h, 0.55596, 1e-4);
  close(normalQuantile(0.975), 1.959964, 1e-5);
  // The t interval on the same 15 of 16 would have passed 1.0.
  assert.ok(mean([...Array(15).fill(1), 0]) + 2.1314 * Math.sqrt(1 / 16 / 16) > 1);
  assert.deepEqual(wilsonInterval(3, 3, 1.959964)[1], 1);
});

test('a comparison counts wins, losses and ties on the shared tasks and leaves the others out', () => {
  const before = new Map([
    ['a', 0],
    ['b', 1],
    ['c', 0.5],
    ['d', 0],
    ['only-before', 1],
  ]);
  const after = new Map([
    ['a', 1],
    ['b', 0],
    ['c', 0.5],
    ['d', 1],
    ['only-after', 0],
  ]);
  const c = compareTasks('eval-x', before, after);
  assert.deepEqual([c.tasks, c.unmatched, c.wins, c.losses, c.ties], [4, 2, 2, 1, 1]);
  close(c.baselineMean, 0.375);
  close(c.mean, 0.625);
  close(c.test.p, bruteForceP([1, -1, 0, 1]));
  assert.equal(c.significant, false);
});

test('a p-value reads as the reports say it: four decimals, then powers of ten, then where double precision runs out', () => {
  assert.equal(pSaid(0.0625), 'p = 0.0625');
  assert.equal(pSaid(3.1e-7), 'p = 3.10e-7');
  // 200 tasks, 144 better: the normal approximation's tail underflows to 0, which is no p-value to print.
  assert.equal(pSaid(0), 'p < 1e-15');
});
