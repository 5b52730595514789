/**
 * How well a judge agrees with a reward the agent computes itself, on the same rollouts (`agl judge check`):
 *   pairwise accuracy  over the pairs of rollouts the judge compared (group mode: the rollouts of one call; single
 *                      mode: every pair, its scale being absolute) whose agent rewards differ, the share it orders the
 *                      same way; a judge tie counts half. What GRPO needs: it only compares.
 *   Spearman           the rank correlation of the judge's scores and the agent's rewards (ties share their mean
 *                      rank): over every rollout in single mode; in group mode within each group of 3 or more whose
 *                      scores and rewards both vary, averaged weighted by size (scores of different calls are not on
 *                      one scale). Null where no pair or group qualifies.
 */

import { ranks } from '../../protocol/eval-stats.js';

/** Ranks 1..n, ties given their mean rank (shared with the paired test of evaluations). */
export { ranks };

export interface Compared {
  judge: number;
  agent: number;
}

/** Spearman's rank correlation (Pearson's on the ranks); null when either side does not vary or n < 2. */
export function spearman(xs: readonly number[], ys: readonly number[]): number | null {
  if (xs.length !== ys.length || xs.length < 2) return null;
  const [rx, ry] = [ranks(xs), ranks(ys)];
  const mean = (v: number[]) => v.reduce((a, x) => a + x, 0) / v.length;
  const [mx, my] = [mean(rx), mean(ry)];
  let num = 0,
    dx = 0,
    dy = 0;
  for (let i = 0; i < rx.length; i++) {
    num += (rx[i]! - mx) * (ry[i]! - my);
    dx += (rx[i]! - mx) ** 2;
    dy += (ry[i]! - my) ** 2;
  }
  return dx === 0 || dy === 0 ? null : num / Math.sqrt(dx * dy);
}

/** Pairs of one group whose agent rewards differ, and how many of them the judge orders alike (a tie: half). */
function pairsOf(group: readonly Compared[]): { pairs: number; agree: number } {
  let pairs = 0,
    agree = 0;
  for (let i = 0; i < group.length; i++)
    for (let j = i + 1; j < group.length; j++) {
      const a = group[i]!,
        b = group[j]!;
      if (a.agent === b.agent) continue;
      pairs++;
      const judged = Math.sign(a.judge - b.judge);
      agree += judged === 0 ? 0.5 : judged === Math.sign(a.agent - b.agent) ? 1 : 0;
    }
  return { pairs, agree };
}

export interface Agreement {
  /** Pairs compared (agent rewards differ) and the share the judge ordered alike; null without a pair. */
  pairs: number;
  pairwiseAccuracy: number | null;
  /** Spearman's rho, and the groups it is over (group mode; 1 in single mode). */
  spearman: number | null;
  spearmanGroups: number;
}

/** The agreement over groups of compared rollouts (`groups`: each call's rollouts; in single mode pass one group of all). */
export function agreement(groups: readonly (readonly Compared[])[]): Agreement {
  let pairs = 0,
    agree = 0,
    rhoSum = 0,
    rhoWeight = 0,
    rhoGroups = 0;
  for (const g of groups) {
    const p = pairsOf(g);
    pairs += p.pairs;
    agree += p.agree;
    const rho =
      g.length >= 3
        ? spearman(
            g.map((c) => c.judge),
            g.map((c) => c.agent),
          )
        : null;
    if (rho === null) continue;
    rhoSum += rho * g.length;
    rhoWeight += g.length;
    rhoGroups++;
  }
  return { pairs, pairwiseAccuracy: pairs ? agree / pairs : null, spearman: rhoWeight ? rhoSum / rhoWeight : null, spearmanGroups: rhoGroups };
}
