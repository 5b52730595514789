/**
 * The per-task Pareto front of prompt candidates, the one reading the optimizer (GEPA's parent selection,
 * daemon/optimize/) and the editor's optimization view (daemon/store/views-optimize.ts) share: each candidate is a
 * vector of scores, one per val task in a fixed order. A candidate is on the front when no other candidate is at least
 * as good on every task and better on one; two with the same scores are both on it. Only candidates scored on every val
 * task are compared (the caller leaves the others out). Pure, no zod: the viewer's bundle can read it.
 */

/** A candidate's scores, one per val task (the same task order for every candidate compared). */
export interface ScoredCandidate {
  id: string;
  scores: readonly number[];
}

function sameLength(rows: readonly ScoredCandidate[]): void {
  const n = rows[0]?.scores.length ?? 0;
  const odd = rows.find((r) => r.scores.length !== n);
  if (odd) throw new RangeError(`candidate '${odd.id}' has ${odd.scores.length} scores, '${rows[0]!.id}' has ${n}: compare candidates on the same val tasks`);
}

/** Whether `a` dominates `b`: at least as good on every task and better on one (scores in the same task order). */
export function dominates(a: readonly number[], b: readonly number[]): boolean {
  let better = false;
  for (let i = 0; i < a.length; i++) {
    if (a[i]! < b[i]!) return false;
    if (a[i]! > b[i]!) better = true;
  }
  return better;
}

/** The ids of the candidates no other dominates, in the order given. */
export function paretoFront(rows: readonly ScoredCandidate[]): string[] {
  sameLength(rows);
  return rows.filter((r) => !rows.some((other) => other !== r && dominates(other.scores, r.scores))).map((r) => r.id);
}

/**
 * For each task (in the scores' order), the ids of the candidates with the best score on it: GEPA samples a parent
 * from the front in proportion to the tasks it wins. Empty lists when no candidate is given.
 */
export function taskWinners(rows: readonly ScoredCandidate[]): string[][] {
  sameLength(rows);
  const tasks = rows[0]?.scores.length ?? 0;
  return Array.from({ length: tasks }, (_, t) => {
    const best = Math.max(...rows.map((r) => r.scores[t]!));
    return rows.filter((r) => r.scores[t] === best).map((r) => r.id);
  });
}
