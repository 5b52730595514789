/**
 * Whom GEPA reflects on next (Agrawal et al. 2025, "GEPA: Reflective Prompt Evolution"): a parent drawn from the
 * per-val-task Pareto front. For each val task the candidates with the best score on it are kept; a candidate every
 * one of whose scores another candidate matches or beats (and beats once) is dropped; the rest are drawn with weight
 * the number of val tasks they are best on. So a candidate that alone solves a few tasks stays in play beside the one
 * with the best mean, and the search keeps what each of them learned.
 */
import { dominates } from '../../protocol/pareto.js';

/** Each candidate's scores on the val tasks, in the val set's order (every candidate scored on all of them). */
export type ValScores = ReadonlyMap<string, readonly number[]>;

/** The candidates best on some val task and dominated by none, each with how many val tasks it is best on. */
export function frontWeights(scores: ValScores): Map<string, number> {
  const ids = [...scores.keys()];
  const tasks = ids.length ? scores.get(ids[0]!)!.length : 0;
  const wins = new Map<string, number>();
  for (let t = 0; t < tasks; t++) {
    const best = Math.max(...ids.map((id) => scores.get(id)![t]!));
    for (const id of ids) if (scores.get(id)![t] === best) wins.set(id, (wins.get(id) ?? 0) + 1);
  }
  const onFront = [...wins.keys()].filter((id) => !ids.some((other) => other !== id && dominates(scores.get(other)!, scores.get(id)!)));
  return new Map(onFront.map((id) => [id, wins.get(id)!]));
}

/** A parent drawn from the front, weighted by tasks won (`random` in [0, 1)); ties of order go to the earlier candidate. */
export function pickParent(scores: ValScores, random: () => number): string {
  const weights = [...frontWeights(scores)];
  if (weights.length === 0) throw new Error('no candidate has val scores to pick a parent from');
  const total = weights.reduce((a, [, w]) => a + w, 0);
  let x = random() * total;
  for (const [id, w] of weights) {
    if (x < w) return id;
    x -= w;
  }
  return weights.at(-1)![0];
}

/** The candidate with the best mean val score (the earliest among equals). */
export function bestByMean(scores: ValScores): string {
  let best: { id: string; mean: number } | null = null;
  for (const [id, s] of scores) {
    const mean = s.reduce((a, x) => a + x, 0) / Math.max(1, s.length);
    if (!best || mean > best.mean) best = { id, mean };
  }
  if (!best) throw new Error('no candidate has val scores');
  return best.id;
}

export const mean = (xs: readonly number[]): number => xs.reduce((a, x) => a + x, 0) / Math.max(1, xs.length);
