/**
 * What the change feed (LightningStore.watchChanges) watches, declared once for both backends: for each kind of
 * StoreChange (protocol/events.ts), the table it comes from, whether rows that move (their `updated_at` set) count
 * as well as rows inserted, and how a changed row becomes the event's item, as a select list over that table's rows
 * (aliases are StoreChange's field names). sqlite-changes.ts reads it over the rows past its marks;
 * postgres-changes.ts builds its triggers from it, over each statement's transition table.
 * Both write what they need only while someone watches (a feed registered in the database): nobody watching, a
 * writer pays no index and no notification for the feed.
 */
import type { StoreChange } from '../../protocol/events.js';

export type ChangeKind = Exclude<keyof StoreChange, 'truncated'>;

export interface ChangeSource {
  kind: ChangeKind;
  table: string;
  /** Rows whose `updated_at` is set are reported too (rollouts, runs and candidates move; the other kinds are only inserted). */
  moves: boolean;
  /** The item of a changed row: a select list whose aliases are the item's fields; `DISTINCT x AS k` for a list of ids. */
  select: string;
  /** What the select aggregates by, if anything. */
  groupBy?: string;
  /** Items one PostgreSQL notification lists at most (a payload must stay under 8000 bytes). */
  notifyAtMost: number;
}

/**
 * What schemas 3 to 6 watched: PostgreSQL's migrations 3 and 5 built their triggers from this list (history: it is
 * never edited; schema 7 builds them again from CHANGE_SOURCES).
 */
export const CHANGE_SOURCES_SCHEMA_5: readonly ChangeSource[] = [
  {
    kind: 'rollouts',
    table: 'rollouts',
    moves: true,
    select: 'id, agent, status, latest_attempt_id AS "attemptId", attempt_count AS attempts',
    notifyAtMost: 40,
  },
  { kind: 'spans', table: 'spans', moves: false, select: 'DISTINCT rollout_id AS k', notifyAtMost: 100 },
  { kind: 'runs', table: 'training_runs', moves: true, select: 'id, agent, status, step, total_steps AS "totalSteps"', notifyAtMost: 40 },
  { kind: 'metrics', table: 'metrics', moves: false, select: 'run_id AS "runId", MAX(step) AS step', groupBy: 'run_id', notifyAtMost: 100 },
  { kind: 'transitions', table: 'transitions', moves: false, select: 'DISTINCT run_id AS k', notifyAtMost: 100 },
  { kind: 'resources', table: 'resources', moves: false, select: 'id, version', notifyAtMost: 100 },
];

/** Schema 7 on: a run's item says its kind, and a prompt optimization's records are watched (protocol/prompts.ts). */
export const CHANGE_SOURCES: readonly ChangeSource[] = [
  ...CHANGE_SOURCES_SCHEMA_5.map((s) => (s.kind === 'runs' ? { ...s, select: `${s.select}, kind` } : s)),
  { kind: 'candidates', table: 'prompt_candidates', moves: true, select: 'id, run_id AS "runId", status', notifyAtMost: 40 },
  { kind: 'optimizerCalls', table: 'optimizer_calls', moves: false, select: 'run_id AS "runId", MAX(seq) AS seq', groupBy: 'run_id', notifyAtMost: 100 },
  { kind: 'promotedPrompts', table: 'promoted_prompts', moves: false, select: 'agent, name', groupBy: 'agent, name', notifyAtMost: 20 },
];

/** The tables whose rows move (their `updated_at` set after the insert): SQLite's writers log them while a feed watches. */
export type MovingTable = 'rollouts' | 'training_runs' | 'prompt_candidates';

/** The select of `source` over the rows of `from` that satisfy `where` (SQL over the table's columns). */
export function changedItemsSql(source: ChangeSource, from: string, where = ''): string {
  return `SELECT ${source.select} FROM ${from}${where ? ` WHERE ${where}` : ''}${source.groupBy ? ` GROUP BY ${source.groupBy}` : ''}`;
}

/** A row of `changedItemsSql` as the StoreChange item it stands for (a list of ids selects `k`). */
export function changeItem(source: ChangeSource, row: Record<string, unknown>): unknown {
  return source.select.startsWith('DISTINCT ') ? row.k : row;
}
