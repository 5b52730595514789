/**
 * What a SQLite store committed, for SqliteStore.watchChanges (protocol/lightning-store.ts): the daemon's event
 * stream tells the editor from it. While anyone watches, the feed keeps a mark per table (changes.ts CHANGE_SOURCES)
 * and reads what moved past it, all by rowid: SQLite gives a new row the next rowid under the write lock, so rowids
 * follow commit order. Rows inserted are those past the table's mark; rollouts, runs and prompt candidates that moved (their
 * `updated_at` set) are those the change log (schema 5) lists past its mark. Every writer is a SqliteStore, of this
 * process or another: each group commit looks whether a feed is registered in `change_watchers` and, if one is,
 * appends the rows it moved (ChangeLog), so nobody watching costs a commit one read of an empty table: no index on a
 * column every update changes (schema 3's), and no trigger (measured: a row trigger costs an update more than that
 * index did, even one whose WHEN is false). The log keeps its last 64 Ki entries (a feed that fell further behind
 * says `truncated`).
 * The feed looks after this connection's own commits (SqliteStore calls `committed`) and whenever `PRAGMA
 * data_version` says another connection committed (another process on the same file: `agl train`), a read of shared
 * memory, checked every FOREIGN_CHECK_MS. Nothing runs while nobody watches.
 */
import { hostname } from 'node:os';
import type Database from 'better-sqlite3';
import { MAX_LISTED_CHANGES, emptyChange, isEmptyChange, type StoreChange } from '../../protocol/events.js';
import { CHANGE_SOURCES, changeItem, changedItemsSql, type ChangeKind, type MovingTable } from './changes.js';

/** Log entries kept (the oldest are pruned every PRUNE_EVERY entries). */
const LOG_KEPT = 65_536;
const PRUNE_EVERY = 4_096;
/** Rows read per kind per look at most; more: `truncated`. */
const READ_LIMIT = 2000;
/** How often another connection's commits are looked for while watched (ms). */
const FOREIGN_CHECK_MS = 100;
/** This connection's commits are looked at no more often than this (ms): a burst of writes is read once. */
const MIN_CHECK_GAP_MS = 20;

/**
 * Schema migration 5: the change log and the registry of feeds; the `updated_at` index of schema 3 goes (every
 * rollout update maintained it for the feed). Runs again over itself (a store migrated back by hand, as tests do).
 */
export const CHANGE_LOG_MIGRATION_SQL = `
  DROP INDEX IF EXISTS rollouts_updated;
  CREATE TABLE IF NOT EXISTS change_watchers (id INTEGER PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL, since REAL NOT NULL);
  CREATE TABLE IF NOT EXISTS change_log (seq INTEGER PRIMARY KEY, tbl TEXT NOT NULL, key TEXT NOT NULL);
`;

/** The tables whose rows move (changes.ts), which a writer logs while a feed watches. */
export type { MovingTable };

/**
 * A writer's side of the log, run inside each group commit (SqliteStore.commitQueued): whether any feed, of any
 * process, is registered (read under the write lock, so a feed registered before this commit is seen), and the
 * rows this commit moved, appended in one statement. Entries past the last LOG_KEPT are pruned as it goes.
 */
export class ChangeLog {
  constructor(private readonly st: (sql: string) => Database.Statement) {}

  watched(): boolean {
    return this.st('SELECT 1 FROM change_watchers LIMIT 1').get() !== undefined;
  }

  append(moves: ReadonlyArray<readonly [MovingTable, string]>): void {
    if (moves.length === 0) return;
    const info = this.st('INSERT INTO change_log (tbl, key) SELECT value ->> 0, value ->> 1 FROM json_each(?)').run(JSON.stringify(moves));
    const last = Number(info.lastInsertRowid);
    if (Math.floor(last / PRUNE_EVERY) > Math.floor((last - moves.length) / PRUNE_EVERY)) this.st('DELETE FROM change_log WHERE seq <= ?').run(last - LOG_KEPT);
  }
}

interface Marks {
  /** The last rowid read per kind's table, and the last change log entry. */
  rows: Record<ChangeKind, number>;
  log: number;
  dataVersion: number;
}

/** Whether a process of this machine is running (a registered feed's owner). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class SqliteChangeFeed {
  private readonly listeners = new Set<(c: StoreChange) => void>();
  private marks: Marks | null = null;
  /** This feed's row in change_watchers while it watches. */
  private watcherId: number | null = null;
  private foreignTimer: ReturnType<typeof setInterval> | null = null;
  private scheduled: ReturnType<typeof setTimeout> | null = null;
  private lastCheck = 0;

  constructor(
    private readonly db: Database.Database,
    private readonly st: (sql: string) => Database.Statement,
    private readonly log: (message: string) => void,
  ) {
    // A feed whose process died left its row: while it stays, every writer logs for nobody.
    if (this.deadWatchers().length) this.db.transaction(() => this.removeDeadWatchers()).immediate();
  }

  /** Watching from now on: registered and marked before this returns, so every later commit is reported. */
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

  /** Stops looking (the last listener left, or the store closes): unregistered, listeners forgotten. */
  stop(): void {
    if (this.foreignTimer) clearInterval(this.foreignTimer);
    if (this.scheduled) clearTimeout(this.scheduled);
    this.foreignTimer = this.scheduled = null;
    this.marks = null;
    this.listeners.clear();
    if (this.watcherId !== null && this.db.open) {
      const id = this.watcherId;
      this.watcherId = null;
      try {
        this.db.transaction(() => this.unregister(id)).immediate();
      } catch (e) {
        this.log(`store changes: could not unregister the watch (${(e as Error).message}); the next feed or open removes it`);
      }
    }
  }

  private start(): void {
    this.marks = this.db.transaction(() => this.register()).immediate();
    this.foreignTimer = setInterval(() => {
      if (this.marks && this.dataVersion() !== this.marks.dataVersion) this.check();
    }, FOREIGN_CHECK_MS);
    this.foreignTimer.unref();
  }

  private dataVersion(): number {
    return this.db.pragma('data_version', { simple: true }) as number;
  }

  private deadWatchers(): number[] {
    const rows = this.st('SELECT id, host, pid FROM change_watchers').all() as Array<{ id: number; host: string; pid: number }>;
    return rows.filter((r) => r.host === hostname() && r.pid !== process.pid && !isRunning(r.pid)).map((r) => r.id);
  }
  /** Removes the rows of dead feeds; with no feed left, the log goes too. */
  private removeDeadWatchers(): void {
    const dead = this.deadWatchers();
    for (const id of dead) this.st('DELETE FROM change_watchers WHERE id = ?').run(id);
    if (dead.length && !this.st('SELECT 1 FROM change_watchers LIMIT 1').get()) this.st('DELETE FROM change_log').run();
  }

  /** In a write transaction: this feed's row, and the marks from which it reports (the triggers log from now on). */
  private register(): Marks {
    this.removeDeadWatchers();
    const info = this.st('INSERT INTO change_watchers (host, pid, since) VALUES (?, ?, ?)').run(hostname(), process.pid, Date.now());
    this.watcherId = Number(info.lastInsertRowid);
    return this.currentMarks();
  }

  /** In a write transaction: a feed's row gone; the last one takes the log with it. */
  private unregister(id: number): void {
    this.st('DELETE FROM change_watchers WHERE id = ?').run(id);
    if (!this.st('SELECT 1 FROM change_watchers LIMIT 1').get()) this.st('DELETE FROM change_log').run();
  }

  private registered(): boolean {
    return this.st('SELECT 1 FROM change_watchers WHERE id = ?').get(this.watcherId) !== undefined;
  }

  private currentMarks(): Marks {
    const one = (sql: string) => ((this.st(sql).get() as { v: number | null }).v ?? 0) as number;
    const rows = Object.fromEntries(CHANGE_SOURCES.map((s) => [s.kind, one(`SELECT MAX(rowid) AS v FROM ${s.table}`)])) as Record<ChangeKind, number>;
    return { rows, log: one('SELECT MAX(seq) AS v FROM change_log'), dataVersion: this.dataVersion() };
  }

  private check(): void {
    if (!this.marks || !this.db.open) return;
    this.lastCheck = Date.now();
    let change: StoreChange;
    try {
      // One read transaction: every table is read at the same commit, so no mark passes a row it did not read.
      change = this.db.transaction(() => this.readSince(this.marks!))();
      // Our row was removed (by hand, or by a process that took ours for dead): nothing is logged for us, register again.
      if (!this.registered()) this.marks = this.db.transaction(() => this.register()).immediate();
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
    const now = this.currentMarks();
    const oldest = (this.st('SELECT MIN(seq) AS v FROM change_log').get() as { v: number | null }).v;
    // Entries past our mark were pruned (we fell behind), or we are not registered (nothing is logged for us).
    const missed = (oldest !== null && oldest > m.log + 1) || now.log < m.log || !this.registered();
    if (missed) change.truncated = true;
    for (const source of CHANGE_SOURCES) {
      const moved = source.moves && !missed ? `id IN (SELECT key FROM change_log WHERE seq > ? AND seq <= ? AND tbl = '${source.table}') OR ` : '';
      const where = `${moved}(rowid > ? AND rowid <= ?)`;
      const params = moved ? [m.log, now.log, m.rows[source.kind], now.rows[source.kind]] : [m.rows[source.kind], now.rows[source.kind]];
      const rows = this.st(`${changedItemsSql(source, source.table, where)} LIMIT ${READ_LIMIT}`).all(...params) as Array<Record<string, unknown>>;
      if (rows.length === READ_LIMIT || rows.length > MAX_LISTED_CHANGES) change.truncated = true;
      (change as Record<ChangeKind, unknown[]>)[source.kind] = rows.slice(0, MAX_LISTED_CHANGES).map((r) => changeItem(source, r));
    }
    m.rows = now.rows;
    m.log = now.log;
    return change;
  }
}
