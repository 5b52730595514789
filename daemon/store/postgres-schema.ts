/**
 * PostgreSQL schema and migrations (the tables and indexes are schema.ts's, rendered in PostgreSQL's types; search and
 * the change feed's triggers are PostgreSQL's own). The applied version lives in `agl_meta` (PostgreSQL has no
 * user_version); migrations run under a transaction-scoped advisory lock, so several daemons starting on one
 * database apply each exactly once. Column names are the SQLite schema's, so the row mapping is shared.
 */
import type pg from 'pg';
import { SEARCH_MIGRATION_SQL, backfillSearch, backfillServed } from './postgres-search.js';
import { FORGET_GONE_LISTENERS_SQL, changeTriggersSql } from './postgres-changes.js';
import { CHANGE_SOURCES, CHANGE_SOURCES_SCHEMA_5 } from './changes.js';
import { RUN_KIND_COLUMN, SERVED_COLUMN, initialSchemaSql, pendingMigrations, policyMetricGapsSql, promptOptimizationTablesSql } from './schema.js';
import { ROLLOUT_METADATA_KEYS } from '../../protocol/store.js';

/** SQL, or a function for a migration that also computes data (run in the migration's transaction). */
const MIGRATIONS: Array<string | ((c: pg.PoolClient) => Promise<void>)> = [
  // 1: initial schema
  initialSchemaSql('postgres'),
  // 2: the rollouts list's search (full text) and summary columns, built for the rollouts already stored
  async (c) => {
    await c.query(SEARCH_MIGRATION_SQL);
    await backfillSearch(c);
  },
  // 3: every write notifies what it changed, for the change feed (postgres-changes.ts) and the daemon's event stream
  changeTriggersSql(CHANGE_SOURCES_SCHEMA_5),
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
  // 5: 3's triggers, notifying only while a feed listens (agl_change_listeners)
  changeTriggersSql(CHANGE_SOURCES_SCHEMA_5),
  // 6: a policy's metrics of a step without its update (or without its roles' calls) are gaps, not 0s
  policyMetricGapsSql('postgres'),
  // 7: run kinds, prompt optimization's records and their change triggers, rollouts found by their candidate (runs
  //    again over itself)
  `ALTER TABLE training_runs ADD COLUMN IF NOT EXISTS ${RUN_KIND_COLUMN};
  ${promptOptimizationTablesSql('postgres')}
  CREATE INDEX IF NOT EXISTS rollouts_candidate ON rollouts(((metadata::jsonb) ->> '${ROLLOUT_METADATA_KEYS.candidate}'), seq)
    WHERE ((metadata::jsonb) ->> '${ROLLOUT_METADATA_KEYS.candidate}') IS NOT NULL;
  ${changeTriggersSql(CHANGE_SOURCES)}`,
  // 8: what answered each rollout's latest attempt (the rollouts list's Model column), filled from the stored calls
  async (c) => {
    await c.query(`ALTER TABLE rollouts ADD COLUMN IF NOT EXISTS ${SERVED_COLUMN}`);
    await backfillServed(c);
  },
];

export const POSTGRES_SCHEMA_VERSION = MIGRATIONS.length;

export async function migratePostgres(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('agl-store-migrate'))`);
    await client.query('CREATE TABLE IF NOT EXISTS agl_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)');
    const row = (await client.query(`SELECT value FROM agl_meta WHERE key = 'schema_version'`)).rows[0];
    for (const { migration } of pendingMigrations(MIGRATIONS, row ? Number(row.value) : 0)) {
      if (typeof migration === 'string') await client.query(migration);
      else await migration(client);
    }
    await client.query(
      `INSERT INTO agl_meta (key, value) VALUES ('schema_version', $1)
      ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      [String(MIGRATIONS.length)],
    );
    // A daemon that died while watching left its registration: writers would notify for nobody until it goes.
    await client.query(FORGET_GONE_LISTENERS_SQL);
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    client.release();
  }
}
