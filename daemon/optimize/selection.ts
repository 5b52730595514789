/**
 * Whom GEPA reflects on next (Agrawal et al. 2025, "GEPA: Reflective Prompt Evolution"): a parent drawn from the
 * per-val-task Pareto front. Each val task's front holds the candidates with the best score on it. A candidate whose
 * every task is also won by another candidate still in play is dropped, the lowest mean val first (the later of equals
 * first), one at a time, as GEPA's remove_dominated_programs does: so of two candidates with the same scores one is
 * left, and a duplicate does not double a candidate's chance. The rest are drawn with weight the number of val tasks
 * whose front they are left on. So a candidate that alone solves a few tasks stays in play beside the one with the
 * best mean, and the search keeps what each of them learned.
 */

/** Each candidate's scores on the val tasks, in the val set's order (every candidate scored on all of them). */
export type ValScores = ReadonlyMap<string, readonly number[]>;

/** The candidates left on some val task's front once the covered ones are dropped, each with how many tasks that is. */
export function frontWeights(scores: ValScores): Map<string, number> {
  const ids = [...scores.keys()];
  const tasks = ids.length ? scores.get(ids[0]!)!.length : 0;
  const fronts: string[][] = [];
  for (let t = 0; t < tasks; t++) {
    const best = Math.max(...ids.map((id) => scores.get(id)![t]!));
    fronts.push(ids.filter((id) => scores.get(id)![t] === best));
  }
  const inPlay = new Set(ids.filter((id) => fronts.some((f) => f.includes(id))));
  // Lowest mean first; among equals the later candidate (ids are in the order candidates were scored) goes first.
  const order = [...inPlay].map((id, i) => ({ id, i, mean: mean(scores.get(id)!) })).sort((x, y) => x.mean - y.mean || y.i - x.i);
  const covered = (id: string) => fronts.every((f) => !f.includes(id) || f.some((other) => other !== id && inPlay.has(other)));
  for (let dropped = true; dropped;) {
    dropped = false;
    const next = order.find((x) => inPlay.has(x.id) && covered(x.id));
    if (next) dropped = inPlay.delete(next.id);
  }
  const weights = new Map<string, number>();
  for (const id of ids) {
    const won = fronts.filter((f) => f.includes(id)).length;
    if (inPlay.has(id)) weights.set(id, won);
  }
  return weights;
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
