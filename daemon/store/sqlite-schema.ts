/**
 * SQLite schema and its migrations (the tables and indexes are schema.ts's, rendered in SQLite's types; search and
 * the change feed's pieces are SQLite's own). The database's `user_version` is the number of migrations applied;
 * opening runs the missing ones (inside BEGIN IMMEDIATE, so several processes opening one file at once
 * apply each exactly once) and refuses a file written by a newer version of agl.
 * JSON lives in TEXT columns, times are float epoch milliseconds; spans keep their whole JSON in `data`
 * (one JSON.parse per span on read) next to the columns used for lookups.
 */
import type Database from 'better-sqlite3';
import { SEARCH_MIGRATION_SQL, backfillSearch, backfillServed } from './sqlite-search.js';
import { RUN_KIND_COLUMN, SERVED_COLUMN, initialSchemaSql, pendingMigrations, policyMetricGapsSql, promptOptimizationTablesSql } from './schema.js';
import { ROLLOUT_METADATA_KEYS } from '../../protocol/store.js';
import { CHANGE_LOG_MIGRATION_SQL } from './sqlite-changes.js';

/** SQL, or a function for a migration that also computes data. */
const MIGRATIONS: Array<string | ((db: Database.Database) => void)> = [
  // 1: initial schema
  initialSchemaSql('sqlite'),
  // 2: the rollouts list's search (FTS5) and summary columns, built for the rollouts already stored
  (db) => {
    db.exec(SEARCH_MIGRATION_SQL);
    backfillSearch(db);
  },
  // 3: what changed since a time, read by the change feed for the daemon's event stream (dropped by 5)
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
  // 5: what moved is logged by triggers only while a change feed watches (sqlite-changes.ts), instead of 3's index
  CHANGE_LOG_MIGRATION_SQL,
  // 6: a policy's metrics of a step without its update (or without its roles' calls) are gaps, not 0s
  policyMetricGapsSql('sqlite'),
  // 7: run kinds, prompt optimization's records, rollouts found by their candidate (runs again over itself)
  (db) => {
    if (!(db.pragma('table_info(training_runs)') as Array<{ name: string }>).some((c) => c.name === 'kind')) {
      db.exec(`ALTER TABLE training_runs ADD COLUMN ${RUN_KIND_COLUMN};`);
    }
    db.exec(`${promptOptimizationTablesSql('sqlite')}
      CREATE INDEX IF NOT EXISTS rollouts_candidate ON rollouts(json_extract(metadata, '$.${ROLLOUT_METADATA_KEYS.candidate}'), seq)
        WHERE json_extract(metadata, '$.${ROLLOUT_METADATA_KEYS.candidate}') IS NOT NULL;`);
  },
  // 8: what answered each rollout's latest attempt (the rollouts list's Model column), filled from the stored calls
  (db) => {
    if (!(db.pragma('table_info(rollouts)') as Array<{ name: string }>).some((c) => c.name === 'served'))
      db.exec(`ALTER TABLE rollouts ADD COLUMN ${SERVED_COLUMN};`);
    backfillServed(db);
  },
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
    for (const { version, migration } of pendingMigrations(MIGRATIONS, db.pragma('user_version', { simple: true }) as number)) {
      if (typeof migration === 'string') db.exec(migration);
      else migration(db);
      db.pragma(`user_version = ${version}`);
    }
  });
  migrate.immediate();
}
