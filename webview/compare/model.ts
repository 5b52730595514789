/**
 * The compare view's pure parts (unit-tested without a browser): which rows a filter shows, and the comparison in the
 * words `agl eval --baseline` prints (daemon/eval/report.ts comparisonLines: the means, the Wilcoxon signed-rank test's
 * p-value, significant or not at protocol/eval-stats.ts ALPHA, better or worse by the test's direction).
 */
import type { EvalCompareRow, EvalCompareView } from '../../protocol/eval-compare.js';
import { ALPHA, directionSaid, pSaid } from '../../protocol/eval-stats.js';
import type { CompareFilter } from '../../protocol/webview-compare.js';

/** The rows a filter shows: the regressions (lower on the second run), the fixes (higher), or all in the dataset's order. */
export function rowsShown(rows: readonly EvalCompareRow[], filter: CompareFilter): EvalCompareRow[] {
  if (filter === 'all') return [...rows];
  return rows.filter((r) => r.change === (filter === 'fixes' ? 'fix' : 'regression'));
}

/** The p-value as `agl eval` writes it: four decimals, or an exponent when tiny. */

export function summaryWords(v: EvalCompareView): { means: string; test: string; verdict: string } {
  const c = v.comparison;
  return {
    means: `${c.baselineMean.toFixed(3)} → ${c.mean.toFixed(3)}`,
    test: `Wilcoxon signed-rank ${pSaid(c.test.p)} (${c.test.exact ? 'exact' : 'normal approximation'}, ${c.test.n} tasks differ)`,
    verdict: c.significant
      ? `significant (p < ${ALPHA}): ${directionSaid(c, v.base.version)}`
      : `not significant (p ≥ ${ALPHA}): no evidence of a change against ${v.base.version}` +
        (c.unmatched ? `; ${c.unmatched} tasks in only one run, left out` : ''),
  };
}
