/**
 * The store's tables, indexes and the data migrations both backends run, declared once: sqlite-schema.ts and
 * postgres-schema.ts render them in their SQL (`renderSchema`) inside their own migration runners, and keep beside
 * them only what the engines do differently (full-text search, JSON functions, change feeds). Columns are written
 * with SQLite's type names; PostgreSQL's rendering makes REAL a DOUBLE PRECISION and BOOLEAN stays BOOLEAN (SQLite
 * stores it as INTEGER 1/0). Every table keeps its insertion order: SQLite's rowid, on PostgreSQL a `seq` identity
 * column (`ORDER_COLUMN` names it per backend). A migration, once released, is history: its text may be re-rendered
 * from here only if the schema it builds stays exactly the same.
 */
export type Backend = 'sqlite' | 'postgres';

/** The column a backend orders a table's rows by insertion with (SQLite's implicit rowid, PostgreSQL's `seq`). */
export const ORDER_COLUMN: Record<Backend, string> = { sqlite: 'rowid', postgres: 'seq' };

/** [name, type and constraints, the one backend that has it]. */
type Column = readonly [name: string, definition: string, only?: Backend];

interface Table {
  name: string;
  /**
   * `key`: a `seq` column is the primary key, in insertion order (rollouts: cursors page by it). `hidden`: SQLite's
   * rowid, a `seq` identity column on PostgreSQL (the primary key when the table declares none).
   */
  order: 'key' | 'hidden' | 'none';
  columns: readonly Column[];
  /** Table constraints after the columns. */
  constraints?: readonly string[];
  /** Its indexes (`[UNIQUE] INDEX name ON ...`, rendered after CREATE), made with the table. */
  indexes?: ReadonlyArray<string | readonly [index: string, only: Backend]>;
}

/** Schema 1: every table and index of the first release. */
const TABLES_V1: readonly Table[] = [
  {
    name: 'rollouts',
    order: 'key',
    columns: [
      ['id', 'TEXT NOT NULL UNIQUE'],
      ['input', 'TEXT NOT NULL'],
      ['mode', 'TEXT NOT NULL'],
      ['status', 'TEXT NOT NULL'],
      ['agent', 'TEXT'],
      ['resources_id', 'TEXT'],
      ['resources_version', 'INTEGER'],
      ['config', 'TEXT NOT NULL'],
      ['metadata', 'TEXT NOT NULL'],
      ['attempt_count', 'INTEGER NOT NULL DEFAULT 0'],
      ['latest_attempt_id', 'TEXT'],
      // Span sequence ids allocated on the rollout's row, by daemons writing at once; SQLite's writes are serial.
      ['span_seq', 'INTEGER NOT NULL DEFAULT 0', 'postgres'],
      ['queued_at', 'REAL NOT NULL'],
      ['created_at', 'REAL NOT NULL'],
      ['updated_at', 'REAL NOT NULL'],
      ['ended_at', 'REAL'],
    ],
    indexes: [
      "INDEX rollouts_queue ON rollouts(queued_at, seq) WHERE status IN ('queuing', 'requeuing')",
      'INDEX rollouts_status ON rollouts(status, seq)',
      'INDEX rollouts_resources ON rollouts(resources_version, seq)',
      'INDEX rollouts_agent ON rollouts(agent, seq)',
      // PostgreSQL's span batches join attempts to their rollouts by it (postgres-lifecycle.ts insertSpanBatches).
      ['INDEX rollouts_latest_attempt ON rollouts(latest_attempt_id)', 'postgres'],
    ],
  },
  {
    name: 'attempts',
    order: 'none',
    columns: [
      ['id', 'TEXT PRIMARY KEY'],
      ['rollout_id', 'TEXT NOT NULL'],
      ['sequence', 'INTEGER NOT NULL'],
      ['worker_id', 'TEXT'],
      ['status', 'TEXT NOT NULL'],
      ['started_at', 'REAL NOT NULL'],
      ['ended_at', 'REAL'],
      ['last_heartbeat', 'REAL NOT NULL'],
      ['error', 'TEXT'],
    ],
    indexes: [
      'UNIQUE INDEX attempts_rollout ON attempts(rollout_id, sequence)',
      "INDEX attempts_live ON attempts(status) WHERE status IN ('preparing', 'running')",
    ],
  },
  {
    name: 'spans',
    order: 'none',
    columns: [
      ['rollout_id', 'TEXT NOT NULL'],
      ['sequence_id', 'INTEGER NOT NULL'],
      ['attempt_id', 'TEXT NOT NULL'],
      ['name', 'TEXT NOT NULL'],
      ['data', 'TEXT NOT NULL'],
    ],
    constraints: ['PRIMARY KEY (rollout_id, sequence_id)'],
  },
  {
    name: 'resources',
    order: 'none',
    columns: [
      ['id', 'TEXT PRIMARY KEY'],
      ['version', 'INTEGER NOT NULL UNIQUE'],
      ['created_at', 'REAL NOT NULL'],
      ['resources', 'TEXT NOT NULL'],
      ['metadata', 'TEXT NOT NULL'],
    ],
  },
  {
    name: 'workers',
    order: 'none',
    columns: [
      ['id', 'TEXT PRIMARY KEY'],
      ['status', 'TEXT NOT NULL'],
      ['last_heartbeat', 'REAL NOT NULL'],
      ['current_rollout_id', 'TEXT'],
      ['current_attempt_id', 'TEXT'],
      ['metadata', 'TEXT NOT NULL'],
    ],
  },
  {
    name: 'training_runs',
    order: 'hidden',
    columns: [
      ['id', 'TEXT PRIMARY KEY'],
      ['agent', 'TEXT NOT NULL'],
      ['status', 'TEXT NOT NULL'],
      ['config', 'TEXT NOT NULL'],
      ['step', 'INTEGER NOT NULL'],
      ['total_steps', 'INTEGER NOT NULL'],
      ['checkpoint_dir', 'TEXT'],
      ['summary', 'TEXT NOT NULL'],
      ['created_at', 'REAL NOT NULL'],
      ['updated_at', 'REAL NOT NULL'],
    ],
  },
  {
    name: 'metrics',
    order: 'hidden',
    columns: [
      ['run_id', 'TEXT NOT NULL'],
      ['step', 'INTEGER NOT NULL'],
      ['name', 'TEXT NOT NULL'],
      ['value', 'REAL NOT NULL'],
      ['time', 'REAL NOT NULL'],
    ],
    indexes: ['INDEX metrics_run ON metrics(run_id, step)'],
  },
  {
    name: 'transitions',
    order: 'hidden',
    columns: [
      ['run_id', 'TEXT NOT NULL'],
      ['step', 'INTEGER NOT NULL'],
      ['rollout_id', 'TEXT NOT NULL'],
      ['data', 'TEXT NOT NULL'],
    ],
    indexes: ['INDEX transitions_run ON transitions(run_id, step)', 'INDEX transitions_rollout ON transitions(rollout_id)'],
  },
];

/** A column type in the backend's names. */
function typeIn(definition: string, backend: Backend): string {
  if (backend === 'postgres') return definition.replace(/\bREAL\b/g, 'DOUBLE PRECISION');
  return definition.replace(/\bBOOLEAN\b/g, 'INTEGER');
}

/** The insertion-order column a table gets on a backend, or null (SQLite's rowid needs none). */
function orderColumn(t: Table, backend: Backend): string | null {
  if (t.order === 'key') return backend === 'sqlite' ? 'seq INTEGER PRIMARY KEY' : 'seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY';
  if (t.order === 'none' || backend === 'sqlite') return null;
  const declaresKey = t.columns.some(([, d]) => d.includes('PRIMARY KEY')) || (t.constraints ?? []).some((c) => c.startsWith('PRIMARY KEY'));
  return `seq BIGINT GENERATED ALWAYS AS IDENTITY${declaresKey ? '' : ' PRIMARY KEY'}`;
}

/** `again`: the statements run again over themselves (IF NOT EXISTS), for a migration a store may have had already. */
function createTable(t: Table, backend: Backend, again = false): string {
  const order = orderColumn(t, backend);
  const columns = t.columns.filter(([, , only]) => only === undefined || only === backend).map(([name, d]) => `${name} ${typeIn(d, backend)}`);
  const lines = [...(order ? [order] : []), ...columns, ...(t.constraints ?? [])];
  const ifNew = again ? 'IF NOT EXISTS ' : '';
  const indexes = (t.indexes ?? [])
    .flatMap((i) => (typeof i === 'string' ? [i] : i[1] === backend ? [i[0]] : []))
    .map((i) => `CREATE ${i.replace(/INDEX /, `INDEX ${ifNew}`)};`);
  return [`CREATE TABLE ${ifNew}${t.name} (\n  ${lines.join(',\n  ')}\n);`, ...indexes].join('\n');
}

/** Schema migration 1 in the backend's SQL: every table and its indexes. */
export function initialSchemaSql(backend: Backend): string {
  return TABLES_V1.map((t) => createTable(t, backend)).join('\n\n');
}

// --- schema 2: the rollouts list's summary of each rollout's latest attempt (search.ts keeps it) -----------------
/** The summary columns beside each rollout; a new attempt resets them (RESET_SUMMARY_SQL). */
const SUMMARY_COLUMNS: readonly Column[] = [
  ['final_reward', 'REAL'],
  ['reward_final', 'BOOLEAN'],
  ['reward_time', 'REAL'],
  ['error_spans', 'INTEGER NOT NULL DEFAULT 0'],
];

/** Columns a new attempt resets: its rollout's summary describes the latest attempt only (`served`: schema 8's). */
export const RESET_SUMMARY_SQL = 'final_reward = NULL, reward_final = NULL, reward_time = NULL, error_spans = 0, served = NULL';

/** Schema migration 2's part both backends share: the summary columns and the index that sorts by reward. */
export function summaryColumnsSql(backend: Backend): string {
  const add = SUMMARY_COLUMNS.map(([name, d]) => `ADD COLUMN ${name} ${typeIn(d, backend)}`);
  // SQLite adds one column per ALTER TABLE.
  const alter = backend === 'sqlite' ? add.map((a) => `ALTER TABLE rollouts ${a};`).join('\n') : `ALTER TABLE rollouts ${add.join(', ')};`;
  return `${alter}\nCREATE INDEX rollouts_reward ON rollouts(final_reward, seq);`;
}

// --- schema 7: prompt optimization (protocol/prompts.ts) ----------------------------------------------------------
/**
 * The tables of a prompt optimization's records. A candidate's row keeps the whole record as JSON (`data`), its status
 * and `updated_at` beside it for the change feed (a candidate moves once, when decided); an optimizer call is stored
 * once, whole; promoted prompts are a history (a row per promotion, `text` NULL for a clear back to the seed), the
 * latest row of an agent's prompt being what its agents get.
 */
const TABLES_V7: readonly Table[] = [
  {
    name: 'prompt_candidates',
    order: 'none',
    columns: [
      ['id', 'TEXT PRIMARY KEY'],
      ['run_id', 'TEXT NOT NULL'],
      ['ordinal', 'INTEGER NOT NULL'],
      ['status', 'TEXT NOT NULL'],
      ['data', 'TEXT NOT NULL'],
      ['created_at', 'REAL NOT NULL'],
      ['updated_at', 'REAL NOT NULL'],
    ],
    indexes: ['UNIQUE INDEX prompt_candidates_run ON prompt_candidates(run_id, ordinal)'],
  },
  {
    name: 'optimizer_calls',
    order: 'none',
    columns: [
      ['run_id', 'TEXT NOT NULL'],
      ['seq', 'INTEGER NOT NULL'],
      ['data', 'TEXT NOT NULL'],
      ['created_at', 'REAL NOT NULL'],
    ],
    constraints: ['PRIMARY KEY (run_id, seq)'],
  },
  {
    name: 'promoted_prompts',
    order: 'hidden',
    columns: [
      ['agent', 'TEXT NOT NULL'],
      ['name', 'TEXT NOT NULL'],
      ['text', 'TEXT'],
      ['candidate_id', 'TEXT'],
      ['run_id', 'TEXT'],
      ['promoted_by', 'TEXT NOT NULL'],
      ['promoted_at', 'REAL NOT NULL'],
    ],
    indexes: ['INDEX promoted_prompts_name ON promoted_prompts(name)'],
  },
];

/** Schema 7's column of every run: its kind (protocol/store.ts RUN_KINDS); runs stored before are training runs. */
export const RUN_KIND_COLUMN = "kind TEXT NOT NULL DEFAULT 'train'";

/**
 * Schema migration 7's tables, both backends alike, written to run again over themselves (a store migrated back by
 * hand, as tests do). Each backend adds RUN_KIND_COLUMN (SQLite's ALTER TABLE has no IF NOT EXISTS) and the index of
 * its rollouts by candidate (a JSON expression).
 */
export function promptOptimizationTablesSql(backend: Backend): string {
  return TABLES_V7.map((t) => createTable(t, backend, true)).join('\n\n');
}

// --- schema 8: what answered the latest attempt's LLM calls ------------------------------------------------------
/**
 * Schema 8's summary column: the models that answered the latest attempt's calls (protocol/served-by.ts ServedKey[] as
 * JSON, first seen first, at most MAX_SERVED_MODELS; NULL when no call says), kept as spans land (search.ts) and
 * filled for the rollouts already stored by each backend's backfillServed. Like 7, it runs again over itself (a store
 * migrated back by hand, as tests do): each backend adds the column only where it is missing.
 */
export const SERVED_COLUMN = 'served TEXT';

// --- running them -------------------------------------------------------------------------------------------------
/** The migrations a database at `current` still needs, or the error of one written by a newer agl. */
export function pendingMigrations<M>(migrations: readonly M[], current: number): Array<{ version: number; migration: M }> {
  if (current > migrations.length) {
    throw new Error(`store schema version ${current} is newer than this agl supports (${migrations.length}); upgrade agl`);
  }
  return migrations.slice(current).map((migration, i) => ({ version: current + i + 1, migration }));
}

/**
 * Migration 6 (both backends): what a training run recorded per policy at a step it did not update (its loss, KL, clip
 * ratio, gradient norm and learning rate written as 0), or whose roles made no call (its reward as 0), is removed: a
 * step without them is a gap, as agl train records it now (daemon/algorithm/step-metrics.ts). A policy updated at a step
 * when its `policy/<name>/updates` grew there (from 0 before its first step).
 */
export function policyMetricGapsSql(backend: Backend): string {
  const temp = backend === 'postgres' ? 'CREATE TEMP TABLE agl_no_update ON COMMIT DROP AS' : 'CREATE TEMP TABLE agl_no_update AS';
  return `
  ${temp}
    SELECT run_id, step, substr(name, 1, length(name) - length('/updates')) AS prefix FROM (
      SELECT run_id, step, name, value, LAG(value, 1, 0) OVER (PARTITION BY run_id, name ORDER BY step) AS before
      FROM metrics WHERE name LIKE 'policy/%/updates'
    ) AS counted WHERE value <= before;
  DELETE FROM metrics WHERE name LIKE 'policy/%' AND EXISTS (
    SELECT 1 FROM agl_no_update u WHERE u.run_id = metrics.run_id AND u.step = metrics.step
      AND metrics.name IN (u.prefix || '/loss', u.prefix || '/kl', u.prefix || '/clip_ratio', u.prefix || '/grad_norm', u.prefix || '/lr'));
  DELETE FROM metrics WHERE name LIKE 'policy/%/reward' AND EXISTS (
    SELECT 1 FROM metrics t WHERE t.run_id = metrics.run_id AND t.step = metrics.step AND t.value = 0
      AND t.name = substr(metrics.name, 1, length(metrics.name) - length('/reward')) || '/transitions');
  ${backend === 'sqlite' ? 'DROP TABLE agl_no_update;' : ''}
  `;
}
