/**
 * Running a predicted query safely and scoring it (execution accuracy, as Spider's): the reward is 1
 * when the predicted query's rows equal the gold query's rows, compared as multisets (row order only
 * matters to the gold query's own LIMIT), column names ignored, numbers compared to 1e-6.
 */
import type Database from 'better-sqlite3';

export interface QueryResult {
  rows: unknown[][];
  error: string | null;
}

/** Rows read at most from one predicted query: a runaway cross join must not stall a rollout. */
export const MAX_ROWS = 500;

/** Runs one read-only statement; bad SQL, writes and several statements come back as an error string. */
export function runQuery(db: Database.Database, sql: string): QueryResult {
  if (!sql.trim()) return { rows: [], error: 'empty query' };
  // SQLite cannot be interrupted from better-sqlite3; a recursive CTE could loop forever.
  if (/\bRECURSIVE\b/i.test(sql)) return { rows: [], error: 'recursive queries are not allowed' };
  try {
    const stmt = db.prepare(sql);
    if (!stmt.reader) return { rows: [], error: 'not a query (only SELECT is allowed)' };
    const rows: unknown[][] = [];
    for (const row of stmt.raw(true).iterate() as Iterable<unknown[]>) {
      rows.push(row);
      if (rows.length >= MAX_ROWS) break;
    }
    return { rows, error: null };
  } catch (e) {
    return { rows: [], error: (e as Error).message };
  }
}

/** A short rendering of a result, as the checker and rewriter read it: rows `a|b` joined by ', '. */
export function formatResult(r: QueryResult, rowSeparator = ', '): string {
  if (r.error !== null) return `error: ${r.error}`;
  if (r.rows.length === 0) return 'no rows';
  return r.rows.map((row) => row.map((v) => (typeof v === 'number' && !Number.isInteger(v) ? Number(v.toFixed(2)) : v)).join('|')).join(rowSeparator);
}

/** A result one row per line, as the viewer shows what the agent emitted (a long one folds after its first rows). */
export function formatRows(r: QueryResult): string {
  return formatResult(r, '\n');
}

function cellKey(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'bigint') return `n:${Math.round(Number(v) * 1e6) / 1e6}`;
  if (v === null || v === undefined) return 'null';
  return `s:${String(v)}`;
}

/** Multiset equality of rows (cells compared by value, numbers to 1e-6). */
export function sameRows(a: unknown[][], b: unknown[][]): boolean {
  if (a.length !== b.length) return false;
  const count = new Map<string, number>();
  for (const row of a) {
    const k = row.map(cellKey).join('\u0001');
    count.set(k, (count.get(k) ?? 0) + 1);
  }
  for (const row of b) {
    const k = row.map(cellKey).join('\u0001');
    const n = count.get(k) ?? 0;
    if (n === 0) return false;
    count.set(k, n - 1);
  }
  return true;
}

/** Execution-match reward: 1 when the predicted query gives the gold query's rows, else 0. */
export function executionReward(db: Database.Database, predicted: string, gold: string): number {
  const g = runQuery(db, gold);
  if (g.error !== null) throw new Error(`gold query failed (${g.error}): ${gold}`);
  const p = runQuery(db, predicted);
  return p.error === null && sameRows(p.rows, g.rows) ? 1 : 0;
}
