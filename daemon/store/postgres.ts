/**
 * PostgresStore: the LightningStore on PostgreSQL via `pg` (a Pool), for several daemons / machines sharing
 * one database. Claims are one statement with SELECT ... FOR UPDATE SKIP LOCKED; addSpans calls arriving in
 * the same event-loop turn are group-committed as one multi-row INSERT; sequence ids are allocated with an
 * atomic UPDATE ... RETURNING on the rollout row. What both backends do alike is sql-store.ts's; the
 * rollout/attempt state machine is postgres-lifecycle.ts.
 */
import pg from 'pg';
import {
  TERMINAL_ROLLOUT_STATUSES,
  type Attempt,
  type MetricPoint,
  type Resources,
  type Rollout,
  type Span,
  type SpanInput,
  type TrainingRun,
  type Transition,
} from '../../protocol/store.js';
import {
  ConflictError,
  NotFoundError,
  type ClaimOptions,
  type FinishAttemptInput,
  type LightningStore,
  type TrainingRunPatch,
} from '../../protocol/lightning-store.js';
import { numbered, patchTrainingRun, rowToRollout, rowToTrainingRun, rowToWorker, DISTINCT_AGENTS_SQL, type ParsedRollout, type Row } from './common.js';
import { migratePostgres } from './postgres-schema.js';
import { postgresDialect } from './postgres-search.js';
import type { SqlDialect } from './rollout-query.js';
import { PostgresLifecycle } from './postgres-lifecycle.js';
import { PostgresChangeFeed } from './postgres-changes.js';
import { INSERT_RESOURCES_SQL, SqlStore, UPDATE_TRAINING_RUN_SQL, resourcesRow, trainingRunUpdate, type WorkerPatch } from './sql-store.js';
import type { StoreChange } from '../../protocol/events.js';
import type { MovingTable } from './changes.js';
import type { RowChange, Statement } from './prompt-records.js';

export interface PostgresStoreOptions {
  poolSize?: number;
  waitPollMs?: number;
}
interface PendingSpans {
  spans: SpanInput[];
  resolve: (s: Span[]) => void;
  reject: (e: unknown) => void;
}

const RETRYABLE = new Set(['40001', '40P01']); // serialization failure, deadlock detected
const TERMINAL = [...TERMINAL_ROLLOUT_STATUSES];

export class PostgresStore extends SqlStore implements LightningStore {
  readonly kind = 'postgres';
  private pending: PendingSpans[] = [];
  private flushing: Promise<void> | null = null;
  private readonly life: PostgresLifecycle;
  /** What was committed by anyone, for watchChanges (postgres-changes.ts). */
  private readonly changes: PostgresChangeFeed;

  private constructor(
    readonly pool: pg.Pool,
    waitPollMs: number,
    url: string,
  ) {
    super('postgres', waitPollMs);
    this.life = new PostgresLifecycle((sql, params) => this.q(sql, params), this.tx);
    this.changes = new PostgresChangeFeed(url, (m) => console.error(`[agl store] ${m}`));
  }

  static async connect(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const pool = new pg.Pool({ connectionString: url, max: options.poolSize ?? 10 });
    pool.on('error', (e) => console.error('[agl store] idle PostgreSQL connection error:', e.message));
    try {
      await migratePostgres(pool);
    } catch (e) {
      await pool.end();
      throw e;
    }
    return new PostgresStore(pool, options.waitPollMs ?? 500, url);
  }

  private q(sql: string, params: unknown[] = []): Promise<pg.QueryResult<Row>> {
    if (this.closed) throw new Error('store is closed');
    return this.pool.query(sql, params);
  }
  private readonly tx = async <T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> => {
    if (this.closed) throw new Error('store is closed');
    for (let attempt = 1; ; attempt++) {
      const c = await this.pool.connect();
      try {
        await c.query('BEGIN');
        const out = await fn(c);
        await c.query('COMMIT');
        return out;
      } catch (e) {
        await c.query('ROLLBACK').catch(() => {});
        if (attempt < 5 && RETRYABLE.has((e as { code?: string }).code ?? '')) continue;
        throw e;
      } finally {
        c.release();
      }
    }
  };

  async close(): Promise<void> {
    if (this.closed) return;
    await this.flushSpans();
    this.closed = true;
    this.changes.close();
    await this.pool.end();
  }

  async watchChanges(listener: (change: StoreChange) => void): Promise<() => void> {
    if (this.closed) throw new Error('store is closed');
    return this.changes.watch(listener);
  }

  // --- sql-store.ts's reads, on the pool -------------------------------------------------------------
  protected async rows(sql: string, params: unknown[]): Promise<Row[]> {
    return (await this.q(sql, params)).rows;
  }
  protected dialect(): SqlDialect {
    return postgresDialect();
  }
  protected async agentNames() {
    return (await this.q(DISTINCT_AGENTS_SQL.postgres)).rows.map((r) => r.agent as string);
  }
  protected async endedAmong(ids: string[]) {
    return (await this.q('SELECT * FROM rollouts WHERE id = ANY($1) AND status = ANY($2)', [ids, TERMINAL])).rows.map(rowToRollout);
  }

  // --- writes: each its own transaction, span batches group-committed ---------------------------------
  protected enqueueParsed(parsed: ParsedRollout[]) {
    return this.life.enqueue(parsed, Date.now());
  }
  protected startParsed(parsed: ParsedRollout, workerId: string | null) {
    return this.life.start(parsed, workerId, Date.now());
  }
  protected claim(workerId: string, limit: number, opts: ClaimOptions) {
    return this.life.claim(workerId, limit, opts, Date.now());
  }
  protected cancel(id: string) {
    return this.life.cancel(id, Date.now());
  }
  async updateRolloutMetadata(id: string, metadata: Record<string, unknown>): Promise<Rollout> {
    return this.tx(async (c) => {
      const row = (await c.query('SELECT * FROM rollouts WHERE id = $1 FOR UPDATE', [id])).rows[0];
      if (!row) throw new NotFoundError('rollout', id);
      const merged = JSON.stringify({ ...JSON.parse(row.metadata), ...metadata });
      const now = Date.now();
      await c.query('UPDATE rollouts SET metadata = $1, updated_at = $2 WHERE id = $3', [merged, now, id]);
      return rowToRollout({ ...row, metadata: merged, updated_at: now });
    });
  }
  async heartbeatAttempt(attemptId: string): Promise<Attempt> {
    return this.life.heartbeat(attemptId, Date.now());
  }
  protected finish(attemptId: string, input: FinishAttemptInput) {
    return this.life.finish(attemptId, input, Date.now());
  }
  protected insertSpans(spans: SpanInput[]) {
    return new Promise<Span[]>((resolve, reject) => {
      this.pending.push({ spans, resolve, reject });
      if (this.pending.length === 1 && !this.flushing) setImmediate(() => void this.flushSpans());
    });
  }

  private async flushSpans(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.pending.length === 0) return;
    const batches = this.pending;
    this.pending = [];
    let done!: () => void;
    this.flushing = new Promise((r) => (done = r));
    try {
      const outcome = await this.life.insertSpans(
        batches.map((b) => b.spans),
        Date.now(),
      );
      batches.forEach((b, i) => {
        const o = outcome[i]!;
        if (o instanceof Error) b.reject(o);
        else b.resolve(o);
      });
    } catch (error) {
      for (const b of batches) b.reject(error);
    } finally {
      this.flushing = null;
      done();
      if (this.pending.length) setImmediate(() => void this.flushSpans());
    }
  }

  protected insertResources(make: (version: number) => Resources) {
    return this.tx(async (c) => {
      // Versions are gap-free and unique across daemons: one writer at a time.
      await c.query(`SELECT pg_advisory_xact_lock(hashtext('agl-resources-version'))`);
      const { v } = (await c.query('SELECT COALESCE(MAX(version), 0) + 1 AS v FROM resources')).rows[0];
      const res = make(Number(v));
      await c.query(numbered(INSERT_RESOURCES_SQL), resourcesRow(res));
      return res;
    });
  }
  protected async upsertWorker(id: string, patch: WorkerPatch) {
    const has = (k: keyof typeof patch) => patch[k] !== undefined;
    const { rows } = await this.q(
      `INSERT INTO workers (id, status, last_heartbeat, current_rollout_id, current_attempt_id, metadata)
      VALUES ($1, COALESCE($2, 'idle'), $3, $4, $5, COALESCE($6, '{}'))
      ON CONFLICT (id) DO UPDATE SET last_heartbeat = excluded.last_heartbeat,
        status = COALESCE($2, workers.status),
        current_rollout_id = CASE WHEN $7 THEN excluded.current_rollout_id ELSE workers.current_rollout_id END,
        current_attempt_id = CASE WHEN $8 THEN excluded.current_attempt_id ELSE workers.current_attempt_id END,
        metadata = CASE WHEN $6::text IS NULL THEN workers.metadata ELSE (workers.metadata::jsonb || $6::jsonb)::text END
      RETURNING *`,
      [
        id,
        patch.status ?? null,
        Date.now(),
        patch.currentRolloutId ?? null,
        patch.currentAttemptId ?? null,
        patch.metadata ? JSON.stringify(patch.metadata) : null,
        has('currentRolloutId'),
        has('currentAttemptId'),
      ],
    );
    return rowToWorker(rows[0]!);
  }
  protected async insertTrainingRun(t: TrainingRun) {
    const { rowCount } = await this.q(
      `INSERT INTO training_runs (id, agent, kind, status, config, step, total_steps, checkpoint_dir, summary, created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, '{}', $8, $8) ON CONFLICT (id) DO NOTHING`,
      [t.id, t.agent, t.kind, t.status, JSON.stringify(t.config), t.step, t.totalSteps, t.createdAt],
    );
    if (rowCount === 0) throw new ConflictError(`training run '${t.id}' already exists`);
  }
  async updateTrainingRun(id: string, patch: TrainingRunPatch): Promise<TrainingRun> {
    return this.tx(async (c) => {
      const row = (await c.query('SELECT * FROM training_runs WHERE id = $1 FOR UPDATE', [id])).rows[0];
      if (!row) throw new NotFoundError('training run', id);
      const t = patchTrainingRun(rowToTrainingRun(row), patch);
      await c.query(numbered(UPDATE_TRAINING_RUN_SQL), trainingRunUpdate(t, id));
      return t;
    });
  }
  async addMetrics(points: Omit<MetricPoint, 'time'>[]): Promise<void> {
    if (points.length === 0) return;
    await this.q(
      `INSERT INTO metrics (run_id, step, name, value, time)
      SELECT r, s, n, v, $5 FROM unnest($1::text[], $2::int[], $3::text[], $4::float8[]) WITH ORDINALITY AS t(r, s, n, v, ord) ORDER BY ord`,
      [points.map((p) => p.runId), points.map((p) => p.step), points.map((p) => p.name), points.map((p) => p.value), Date.now()],
    );
  }
  async addTransitions(transitions: Transition[]): Promise<void> {
    if (transitions.length === 0) return;
    await this.q(
      `INSERT INTO transitions (run_id, step, rollout_id, data)
      SELECT r, s, ro, d FROM unnest($1::text[], $2::int[], $3::text[], $4::text[]) WITH ORDINALITY AS t(r, s, ro, d, ord) ORDER BY ord`,
      [transitions.map((t) => t.runId), transitions.map((t) => t.step), transitions.map((t) => t.rolloutId), transitions.map((t) => JSON.stringify(t))],
    );
  }
  protected healthCheck(now: number) {
    return this.life.healthCheck(now);
  }
  protected async insertUnlessExists(insert: Statement, existing: Statement): Promise<Row | null> {
    // Any unique key the row would break (a writer of another daemon may have just stored it): then read what is there.
    if ((await this.q(numbered(`${insert.sql} ON CONFLICT DO NOTHING`), insert.params)).rowCount === 1) return null;
    const row = (await this.q(numbered(existing.sql), existing.params)).rows[0];
    if (!row) throw new ConflictError('the row in the way of this write was removed meanwhile: write it again');
    return row;
  }
  protected modifyRow<T>(select: Statement, _table: MovingTable, change: (row: Row | undefined) => RowChange<T>): Promise<T> {
    return this.tx(async (c) => {
      const out = change((await c.query(numbered(`${select.sql} FOR UPDATE`), select.params)).rows[0]);
      if (out.write) await c.query(numbered(out.write.sql), out.write.params);
      return out.result;
    });
  }
  protected async execute(write: Statement): Promise<void> {
    await this.q(numbered(write.sql), write.params);
  }
}
