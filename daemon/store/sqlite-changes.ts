/**
 * What a SQLite store committed, for SqliteStore.watchChanges (protocol/lightning-store.ts): the daemon's event
 * stream tells the editor from it. While anyone watches, the feed keeps a mark per table and reads what moved past
 * it: rollouts and training runs by `updated_at` (rollouts through the `rollouts_updated` index), spans, metrics and
 * transitions by rowid (SQLite gives a new row the next rowid under the write lock, so rowids follow commit order),
 * resources by version. It looks after this connection's own commits (SqliteStore calls `committed`) and whenever
 * `PRAGMA data_version` says another connection committed (another process on the same file: `agl train`), which is
 * a read of shared memory, checked every FOREIGN_CHECK_MS. Nothing runs while nobody watches.
 */
import type Database from 'better-sqlite3';
import { MAX_LISTED_CHANGES, emptyChange, isEmptyChange, type StoreChange } from '../../protocol/events.js';
import type { Row } from './common.js';

/** Rows updated this close to the newest time seen are read again (equal milliseconds, a clock stepped back a little). */
const SLACK_MS = 1000;
/** Rows read per table per look at most (the slack's rows again, and the new ones); more: `truncated`. */
const READ_LIMIT = 2000;
/** How often another connection's commits are looked for while watched (ms). */
const FOREIGN_CHECK_MS = 100;
/** This connection's commits are looked at no more often than this (ms): a burst of writes is read once. */
const MIN_CHECK_GAP_MS = 20;

interface Marks {
  rolloutsAt: number;
  runsAt: number;
  spansRow: number;
  metricsRow: number;
  transitionsRow: number;
  resourcesVersion: number;
  dataVersion: number;
}

/** Rows of an `updated_at`-marked table past its mark, less those already reported in the same state. */
class UpdatedSince {
  /** id -> when and in which state it was reported, for rows within SLACK_MS of the mark. */
  private readonly seen = new Map<string, { at: number; state: string }>();
  constructor(private readonly state: (r: Row) => string) {}

  fresh(rows: Row[], mark: number): { fresh: Row[]; mark: number } {
    const fresh: Row[] = [];
    let newest = mark;
    for (const r of rows) {
      const state = this.state(r);
      if (this.seen.get(r.id)?.state !== state) fresh.push(r);
      this.seen.set(r.id, { at: r.updated_at, state });
      newest = Math.max(newest, r.updated_at as number);
    }
    for (const [id, { at }] of this.seen) if (at < newest - SLACK_MS) this.seen.delete(id);
    return { fresh, mark: newest };
  }
  clear(): void {
    this.seen.clear();
  }
}

export class SqliteChangeFeed {
  private readonly listeners = new Set<(c: StoreChange) => void>();
  private marks: Marks | null = null;
  private readonly rollouts = new UpdatedSince((r) => `${r.updated_at}|${r.status}|${r.attempt_count}|${r.latest_attempt_id}`);
  private readonly runs = new UpdatedSince((r) => `${r.updated_at}|${r.status}|${r.step}`);
  private foreignTimer: ReturnType<typeof setInterval> | null = null;
  private scheduled: ReturnType<typeof setTimeout> | null = null;
  private lastCheck = 0;

  constructor(
    private readonly db: Database.Database,
    private readonly st: (sql: string) => Database.Statement,
    private readonly log: (message: string) => void,
  ) {}

  /** Watching from now on: the marks are read before this returns, so every later commit is reported. */
  watch(listener: (c: StoreChange) => void): () => void {
    if (this.listeners.size === 0) this.start();
    this.listeners.add(listener);
    return () => {
      if (this.listeners.delete(listener) && this.listeners.size === 0) this.stop();
    };
  }

  /** This connection committed (its own commits never move data_version): look soon. */
  committed(): void {
    if (!this.marks || this.scheduled) return;
    this.scheduled = setTimeout(
      () => {
        this.scheduled = null;
        this.check();
      },
      Math.max(0, this.lastCheck + MIN_CHECK_GAP_MS - Date.now()),
    );
  }

  /** Stops looking (the store closes); listeners are forgotten. */
  stop(): void {
    if (this.foreignTimer) clearInterval(this.foreignTimer);
    if (this.scheduled) clearTimeout(this.scheduled);
    this.foreignTimer = this.scheduled = null;
    this.marks = null;
    this.listeners.clear();
    this.rollouts.clear();
    this.runs.clear();
  }

  private start(): void {
    this.marks = this.currentMarks();
    this.foreignTimer = setInterval(() => {
      if (this.marks && this.dataVersion() !== this.marks.dataVersion) this.check();
    }, FOREIGN_CHECK_MS);
    this.foreignTimer.unref();
  }

  private dataVersion(): number {
    return this.db.pragma('data_version', { simple: true }) as number;
  }

  private currentMarks(): Marks {
    const one = (sql: string) => ((this.st(sql).get() as { v: number | null }).v ?? 0) as number;
    return {
      rolloutsAt: one('SELECT MAX(updated_at) AS v FROM rollouts'),
      runsAt: one('SELECT MAX(updated_at) AS v FROM training_runs'),
      spansRow: one('SELECT MAX(rowid) AS v FROM spans'),
      metricsRow: one('SELECT MAX(rowid) AS v FROM metrics'),
      transitionsRow: one('SELECT MAX(rowid) AS v FROM transitions'),
      resourcesVersion: one('SELECT MAX(version) AS v FROM resources'),
      dataVersion: this.dataVersion(),
    };
  }

  private check(): void {
    if (!this.marks || !this.db.open) return;
    this.lastCheck = Date.now();
    let change: StoreChange;
    try {
      // One read transaction: every table is read at the same commit, so no mark passes a row it did not read.
      change = this.db.transaction(() => this.readSince(this.marks!))();
    } catch (e) {
      this.log(`store changes: ${(e as Error).message}`);
      this.marks = this.currentMarks();
      change = { ...emptyChange(), truncated: true };
    }
    if (isEmptyChange(change)) return;
    for (const listener of this.listeners) listener(change);
  }

  /** What moved past `m` (advancing it). */
  private readSince(m: Marks): StoreChange {
    m.dataVersion = this.dataVersion();
    const change = emptyChange();
    const listed = <T>(items: T[]): T[] => {
      if (items.length > MAX_LISTED_CHANGES) change.truncated = true;
      return items.slice(0, MAX_LISTED_CHANGES);
    };

    const rolloutRows = this.st(
      `SELECT id, agent, status, latest_attempt_id, attempt_count, updated_at FROM rollouts WHERE updated_at > ? ORDER BY updated_at LIMIT ${READ_LIMIT}`,
    ).all(m.rolloutsAt - SLACK_MS) as Row[];
    const rollouts = this.rollouts.fresh(rolloutRows, m.rolloutsAt);
    m.rolloutsAt = rollouts.mark;
    if (rolloutRows.length === READ_LIMIT) {
      change.truncated = true;
      m.rolloutsAt = (this.st('SELECT MAX(updated_at) AS v FROM rollouts').get() as { v: number }).v;
    }
    change.rollouts = listed(rollouts.fresh).map((r) => ({
      id: r.id,
      agent: r.agent ?? null,
      status: r.status,
      attemptId: r.latest_attempt_id ?? null,
      attempts: r.attempt_count,
    }));

    const runs = this.runs.fresh(
      this.st('SELECT id, agent, status, step, total_steps, updated_at FROM training_runs WHERE updated_at > ? ORDER BY updated_at').all(
        m.runsAt - SLACK_MS,
      ) as Row[],
      m.runsAt,
    );
    m.runsAt = runs.mark;
    change.runs = listed(runs.fresh).map((r) => ({ id: r.id, agent: r.agent, status: r.status, step: r.step, totalSteps: r.total_steps }));

    const spans = this.sinceRow('spans', 'rollout_id', '', m.spansRow);
    m.spansRow = spans.mark;
    change.spans = listed(spans.rows.map((r) => r.k as string));

    const metrics = this.sinceRow('metrics', 'run_id', ', MAX(step) AS step', m.metricsRow);
    m.metricsRow = metrics.mark;
    change.metrics = listed(metrics.rows.map((r) => ({ runId: r.k as string, step: r.step as number })));

    const transitions = this.sinceRow('transitions', 'run_id', '', m.transitionsRow);
    m.transitionsRow = transitions.mark;
    change.transitions = listed(transitions.rows.map((r) => r.k as string));

    const resources = this.st('SELECT id, version FROM resources WHERE version > ? ORDER BY version').all(m.resourcesVersion) as Row[];
    m.resourcesVersion = resources.reduce((v, r) => Math.max(v, r.version as number), m.resourcesVersion);
    change.resources = listed(resources.map((r) => ({ id: r.id as string, version: r.version as number })));
    return change;
  }

  /** The rows of a rowid-marked table past `mark`, one per `key` with its last rowid (and `extra` columns), and the new mark. */
  private sinceRow(table: string, key: string, extra: string, mark: number): { rows: Row[]; mark: number } {
    const rows = this.st(`SELECT ${key} AS k${extra}, MAX(rowid) AS last FROM ${table} WHERE rowid > ? GROUP BY ${key}`).all(mark) as Row[];
    return { rows, mark: rows.reduce((m, r) => Math.max(m, r.last as number), mark) };
  }
}
