/**
 * SQLite schema and its migrations. The database's `user_version` is the number of migrations applied;
 * opening runs the missing ones (inside BEGIN IMMEDIATE, so several processes opening one file at once
 * apply each exactly once) and refuses a file written by a newer version of agl.
 * JSON lives in TEXT columns, times are float epoch milliseconds; spans keep their whole JSON in `data`
 * (one JSON.parse per span on read) next to the columns used for lookups.
 */
import type Database from 'better-sqlite3';
import { SEARCH_MIGRATION_SQL, backfillSearch } from './sqlite-search.js';

/** SQL, or a function for a migration that also computes data. */
const MIGRATIONS: Array<string | ((db: Database.Database) => void)> = [
  // 1: initial schema
  `
  CREATE TABLE rollouts (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    input TEXT NOT NULL,
    mode TEXT NOT NULL,
    status TEXT NOT NULL,
    agent TEXT,
    resources_id TEXT,
    resources_version INTEGER,
    config TEXT NOT NULL,
    metadata TEXT NOT NULL,
    attempt_count INTEGER NOT NULL DEFAULT 0,
    latest_attempt_id TEXT,
    queued_at REAL NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    ended_at REAL
  );
  CREATE INDEX rollouts_queue ON rollouts(queued_at, seq) WHERE status IN ('queuing', 'requeuing');
  CREATE INDEX rollouts_status ON rollouts(status, seq);
  CREATE INDEX rollouts_resources ON rollouts(resources_version, seq);
  CREATE INDEX rollouts_agent ON rollouts(agent, seq);

  CREATE TABLE attempts (
    id TEXT PRIMARY KEY,
    rollout_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    worker_id TEXT,
    status TEXT NOT NULL,
    started_at REAL NOT NULL,
    ended_at REAL,
    last_heartbeat REAL NOT NULL,
    error TEXT
  );
  CREATE UNIQUE INDEX attempts_rollout ON attempts(rollout_id, sequence);
  CREATE INDEX attempts_live ON attempts(status) WHERE status IN ('preparing', 'running');

  CREATE TABLE spans (
    rollout_id TEXT NOT NULL,
    sequence_id INTEGER NOT NULL,
    attempt_id TEXT NOT NULL,
    name TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (rollout_id, sequence_id)
  );

  CREATE TABLE resources (
    id TEXT PRIMARY KEY,
    version INTEGER NOT NULL UNIQUE,
    created_at REAL NOT NULL,
    resources TEXT NOT NULL,
    metadata TEXT NOT NULL
  );

  CREATE TABLE workers (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    last_heartbeat REAL NOT NULL,
    current_rollout_id TEXT,
    current_attempt_id TEXT,
    metadata TEXT NOT NULL
  );

  CREATE TABLE training_runs (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    status TEXT NOT NULL,
    config TEXT NOT NULL,
    step INTEGER NOT NULL,
    total_steps INTEGER NOT NULL,
    checkpoint_dir TEXT,
    summary TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
  );

  CREATE TABLE metrics (
    run_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    name TEXT NOT NULL,
    value REAL NOT NULL,
    time REAL NOT NULL
  );
  CREATE INDEX metrics_run ON metrics(run_id, step);

  CREATE TABLE transitions (
    run_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    rollout_id TEXT NOT NULL,
    data TEXT NOT NULL
  );
  CREATE INDEX transitions_run ON transitions(run_id, step);
  CREATE INDEX transitions_rollout ON transitions(rollout_id);
  `,
  // 2: the rollouts list's search (FTS5) and summary columns, built for the rollouts already stored
  (db) => {
    db.exec(SEARCH_MIGRATION_SQL);
    backfillSearch(db);
  },
  // 3: what changed since a time, read by the change feed (sqlite-changes.ts) for the daemon's event stream
  `CREATE INDEX IF NOT EXISTS rollouts_updated ON rollouts(updated_at);`,
  // 4: steps numbered from 1 (protocol/metrics.ts FIRST_TRAINING_STEP): what agl train recorded of a training step
  //    (metrics, transitions, training rollouts) moves up one; validations already counted the updates before them
  `
  CREATE TEMP TABLE agl_trained_runs AS SELECT DISTINCT run_id FROM metrics WHERE name = 'reward/mean';
  UPDATE metrics SET step = step + 1 WHERE name <> 'val/reward' AND run_id IN (SELECT run_id FROM agl_trained_runs);
  UPDATE transitions SET step = step + 1, data = json_set(data, '$.step', step + 1) WHERE run_id IN (SELECT run_id FROM agl_trained_runs);
  UPDATE rollouts SET metadata = json_set(metadata, '$.step', json_extract(metadata, '$.step') + 1)
    WHERE mode = 'train' AND json_type(metadata, '$.step') = 'integer'
      AND json_extract(metadata, '$.runId') IN (SELECT run_id FROM agl_trained_runs);
  DROP TABLE agl_trained_runs;
  `,
];

export const SQLITE_SCHEMA_VERSION = MIGRATIONS.length;

/** Sets connection pragmas and brings the schema up to date. */
export function prepareDatabase(db: Database.Database): void {
  db.pragma('busy_timeout = 60000');
  // page_size only takes effect before the first table exists and before WAL mode is switched on.
  if ((db.pragma('user_version', { simple: true }) as number) === 0) db.pragma('page_size = 16384');
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = OFF');
  db.pragma('cache_size = -32768');
  db.pragma('temp_store = MEMORY');
  const migrate = db.transaction(() => {
    const current = db.pragma('user_version', { simple: true }) as number;
    if (current > MIGRATIONS.length) {
      throw new Error(`store schema version ${current} is newer than this agl supports (${MIGRATIONS.length}); upgrade agl`);
    }
    for (let v = current; v < MIGRATIONS.length; v++) {
      const migration = MIGRATIONS[v]!;
      if (typeof migration === 'string') db.exec(migration);
      else migration(db);
      db.pragma(`user_version = ${v + 1}`);
    }
  });
  migrate.immediate();
}
