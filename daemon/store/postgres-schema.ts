/**
 * PostgreSQL schema and migrations. The applied version lives in `agl_meta` (PostgreSQL has no
 * user_version); migrations run under a transaction-scoped advisory lock, so several daemons starting on one
 * database apply each exactly once. Column names match the SQLite schema, so the row mapping is shared.
 */
import type pg from 'pg';
import { SEARCH_MIGRATION_SQL, backfillSearch } from './postgres-search.js';
import { CHANGE_TRIGGERS_SQL } from './postgres-changes.js';

/** SQL, or a function for a migration that also computes data (run in the migration's transaction). */
const MIGRATIONS: Array<string | ((c: pg.PoolClient) => Promise<void>)> = [
  `
  CREATE TABLE rollouts (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
    span_seq INTEGER NOT NULL DEFAULT 0,
    queued_at DOUBLE PRECISION NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    ended_at DOUBLE PRECISION
  );
  CREATE INDEX rollouts_queue ON rollouts(queued_at, seq) WHERE status IN ('queuing', 'requeuing');
  CREATE INDEX rollouts_status ON rollouts(status, seq);
  CREATE INDEX rollouts_resources ON rollouts(resources_version, seq);
  CREATE INDEX rollouts_agent ON rollouts(agent, seq);
  CREATE INDEX rollouts_latest_attempt ON rollouts(latest_attempt_id);

  CREATE TABLE attempts (
    id TEXT PRIMARY KEY,
    rollout_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    worker_id TEXT,
    status TEXT NOT NULL,
    started_at DOUBLE PRECISION NOT NULL,
    ended_at DOUBLE PRECISION,
    last_heartbeat DOUBLE PRECISION NOT NULL,
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
    created_at DOUBLE PRECISION NOT NULL,
    resources TEXT NOT NULL,
    metadata TEXT NOT NULL
  );

  CREATE TABLE workers (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    last_heartbeat DOUBLE PRECISION NOT NULL,
    current_rollout_id TEXT,
    current_attempt_id TEXT,
    metadata TEXT NOT NULL
  );

  CREATE TABLE training_runs (
    seq BIGINT GENERATED ALWAYS AS IDENTITY,
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    status TEXT NOT NULL,
    config TEXT NOT NULL,
    step INTEGER NOT NULL,
    total_steps INTEGER NOT NULL,
    checkpoint_dir TEXT,
    summary TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
  );

  CREATE TABLE metrics (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    name TEXT NOT NULL,
    value DOUBLE PRECISION NOT NULL,
    time DOUBLE PRECISION NOT NULL
  );
  CREATE INDEX metrics_run ON metrics(run_id, step);

  CREATE TABLE transitions (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    rollout_id TEXT NOT NULL,
    data TEXT NOT NULL
  );
  CREATE INDEX transitions_run ON transitions(run_id, step);
  CREATE INDEX transitions_rollout ON transitions(rollout_id);
  `,
  // 2: the rollouts list's search (full text) and summary columns, built for the rollouts already stored
  async (c) => {
    await c.query(SEARCH_MIGRATION_SQL);
    await backfillSearch(c);
  },
  // 3: every write notifies what it changed, for the change feed (postgres-changes.ts) and the daemon's event stream
  CHANGE_TRIGGERS_SQL,
  // 4: steps numbered from 1 (protocol/metrics.ts FIRST_TRAINING_STEP): what agl train recorded of a training step
  //    (metrics, transitions, training rollouts) moves up one; validations already counted the updates before them
  `
  CREATE TEMP TABLE agl_trained_runs ON COMMIT DROP AS SELECT DISTINCT run_id FROM metrics WHERE name = 'reward/mean';
  UPDATE metrics SET step = step + 1 WHERE name <> 'val/reward' AND run_id IN (SELECT run_id FROM agl_trained_runs);
  UPDATE transitions SET step = step + 1, data = jsonb_set(data::jsonb, '{step}', to_jsonb(step + 1))::text
    WHERE run_id IN (SELECT run_id FROM agl_trained_runs);
  UPDATE rollouts SET metadata = jsonb_set(metadata::jsonb, '{step}', to_jsonb((metadata::jsonb ->> 'step')::int + 1))::text
    WHERE mode = 'train' AND jsonb_typeof(metadata::jsonb -> 'step') = 'number'
      AND (metadata::jsonb ->> 'runId') IN (SELECT run_id FROM agl_trained_runs);
  `,
];

export const POSTGRES_SCHEMA_VERSION = MIGRATIONS.length;

export async function migratePostgres(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('agl-store-migrate'))`);
    await client.query('CREATE TABLE IF NOT EXISTS agl_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)');
    const row = (await client.query(`SELECT value FROM agl_meta WHERE key = 'schema_version'`)).rows[0];
    const current = row ? Number(row.value) : 0;
    if (current > MIGRATIONS.length) {
      throw new Error(`store schema version ${current} is newer than this agl supports (${MIGRATIONS.length}); upgrade agl`);
    }
    for (let v = current; v < MIGRATIONS.length; v++) {
      const migration = MIGRATIONS[v]!;
      if (typeof migration === 'string') await client.query(migration);
      else await migration(client);
    }
    await client.query(
      `INSERT INTO agl_meta (key, value) VALUES ('schema_version', $1)
      ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      [String(MIGRATIONS.length)],
    );
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    client.release();
  }
}
