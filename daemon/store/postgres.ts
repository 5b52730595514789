/**
 * PostgresStore: the LightningStore on PostgreSQL via `pg` (a Pool), for several daemons / machines sharing
 * one database. Claims are one statement with SELECT ... FOR UPDATE SKIP LOCKED; addSpans calls arriving in
 * the same event-loop turn are group-committed as one multi-row INSERT; sequence ids are allocated with an
 * atomic UPDATE ... RETURNING on the rollout row. The rollout/attempt state machine is postgres-lifecycle.ts.
 */
import pg from 'pg';
import {
  ATTEMPT_STATUSES,
  ROLLOUT_STATUSES,
  ResourcesInput,
  TERMINAL_ROLLOUT_STATUSES,
  type Attempt,
  type MetricPoint,
  type Resources,
  type Rollout,
  type RolloutInput,
  type Span,
  type SpanInput,
  type Statistics,
  type TrainingRun,
  type Transition,
  type Worker,
} from '../../protocol/store.js';
import {
  ConflictError,
  NotFoundError,
  type Claim,
  type ClaimOptions,
  type FinishAttemptInput,
  type HealthCheckResult,
  type LightningStore,
  type RolloutPage,
  type RolloutQuery,
  type SpanQuery,
  type TrainingRunPatch,
  type TransitionQuery,
} from '../../protocol/lightning-store.js';
import {
  RolloutEndHub,
  checkFinishInput,
  checkSpanInput,
  isTerminalRollout,
  newId,
  pageLimit,
  parseRolloutInput,
  rowToAttempt,
  rowToMetric,
  rowToResources,
  rowToRollout,
  rowToSpan,
  patchTrainingRun,
  rowToTrainingRun,
  rowToTransition,
  rowToWorker,
  DISTINCT_AGENTS_SQL,
  waitLoop,
  type Row,
} from './common.js';
import { agentAliasesIn, sameAgent } from '../../protocol/agent-id.js';
import { migratePostgres } from './postgres-schema.js';
import { postgresDialect } from './postgres-search.js';
import { rolloutPage, rolloutStatements } from './rollout-query.js';
import { PostgresLifecycle } from './postgres-lifecycle.js';
import { PostgresChangeFeed } from './postgres-changes.js';
import type { StoreChange } from '../../protocol/events.js';

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

export class PostgresStore implements LightningStore {
  readonly kind = 'postgres';
  private readonly hub = new RolloutEndHub();
  private pending: PendingSpans[] = [];
  private flushing: Promise<void> | null = null;
  private closed = false;
  private readonly life: PostgresLifecycle;
  /** What was committed by anyone, for watchChanges (postgres-changes.ts). */
  private readonly changes: PostgresChangeFeed;

  private constructor(
    readonly pool: pg.Pool,
    private readonly waitPollMs: number,
    url: string,
  ) {
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

  // --- rollouts ----------------------------------------------------------------------------------
  async enqueueRollout(input: RolloutInput): Promise<Rollout> {
    return (await this.enqueueRollouts([input]))[0]!;
  }

  async enqueueRollouts(inputs: RolloutInput[]): Promise<Rollout[]> {
    return this.life.enqueue(inputs.map(parseRolloutInput), Date.now());
  }

  async startRollout(input: RolloutInput, workerId?: string): Promise<Claim> {
    const parsed = parseRolloutInput(input);
    return this.life.start(parsed, workerId ?? null, Date.now());
  }

  async claimNextRollout(workerId: string, opts?: ClaimOptions): Promise<Claim | null> {
    return (await this.claimRollouts(workerId, 1, opts))[0] ?? null;
  }

  async claimRollouts(workerId: string, limit: number, opts: ClaimOptions = {}): Promise<Claim[]> {
    if (!Number.isInteger(limit) || limit < 1) throw new TypeError(`limit must be a positive integer, got ${limit}`);
    return this.life.claim(workerId, limit, opts, Date.now());
  }

  async getRollout(id: string): Promise<Rollout | null> {
    const r = (await this.q('SELECT * FROM rollouts WHERE id = $1', [id])).rows[0];
    return r ? rowToRollout(r) : null;
  }

  async queryRollouts(q: RolloutQuery = {}): Promise<RolloutPage> {
    const aliases =
      q.agent === undefined
        ? []
        : agentAliasesIn(
            (await this.q(DISTINCT_AGENTS_SQL.postgres)).rows.map((r) => r.agent as string),
            q.agent,
          );
    const d = postgresDialect();
    const sql = rolloutStatements(q, d, aliases);
    const [{ rows }, count] = await Promise.all([
      this.q(sql.page, d.params),
      sql.count === null ? null : this.q(sql.count, d.params.slice(0, sql.countParams)),
    ]);
    return rolloutPage(q, rows, sql.limit, count === null ? null : Number(count.rows[0]!.n));
  }

  async cancelRollout(id: string): Promise<Rollout> {
    const r = await this.life.cancel(id, Date.now());
    this.hub.ended(id);
    return r;
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

  async waitForRollouts(ids: string[], timeoutMs: number): Promise<Rollout[]> {
    return waitLoop(
      this.hub,
      ids,
      timeoutMs,
      async (pending) => (await this.q('SELECT * FROM rollouts WHERE id = ANY($1) AND status = ANY($2)', [pending, TERMINAL])).rows.map(rowToRollout),
      this.waitPollMs,
    );
  }

  // --- attempts ----------------------------------------------------------------------------------
  private async requireRollout(id: string): Promise<Row> {
    const r = (await this.q('SELECT * FROM rollouts WHERE id = $1', [id])).rows[0];
    if (!r) throw new NotFoundError('rollout', id);
    return r;
  }
  async getAttempts(rolloutId: string): Promise<Attempt[]> {
    await this.requireRollout(rolloutId);
    return (await this.q('SELECT * FROM attempts WHERE rollout_id = $1 ORDER BY sequence', [rolloutId])).rows.map(rowToAttempt);
  }
  async getLatestAttempt(rolloutId: string): Promise<Attempt | null> {
    const r = await this.requireRollout(rolloutId);
    return r.latest_attempt_id ? this.getAttempt(r.latest_attempt_id) : null;
  }
  async getAttempt(attemptId: string): Promise<Attempt | null> {
    const a = (await this.q('SELECT * FROM attempts WHERE id = $1', [attemptId])).rows[0];
    return a ? rowToAttempt(a) : null;
  }
  async heartbeatAttempt(attemptId: string): Promise<Attempt> {
    return this.life.heartbeat(attemptId, Date.now());
  }
  async finishAttempt(attemptId: string, input: FinishAttemptInput): Promise<{ attempt: Attempt; rollout: Rollout }> {
    checkFinishInput(input);
    const out = await this.life.finish(attemptId, input, Date.now());
    if (isTerminalRollout(out.rollout.status)) this.hub.ended(out.rollout.id);
    return out;
  }

  // --- spans -------------------------------------------------------------------------------------
  async addSpans(spans: SpanInput[]): Promise<Span[]> {
    if (this.closed) throw new Error('store is closed');
    if (spans.length === 0) return [];
    spans.forEach(checkSpanInput);
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

  async querySpans(q: SpanQuery): Promise<Span[]> {
    return (await this.spanRows(q)).map(rowToSpan);
  }
  async querySpansJson(q: SpanQuery): Promise<string> {
    return `[${(await this.spanRows(q)).map((r) => r.data).join(',')}]`;
  }
  private async spanRows(q: SpanQuery): Promise<Array<{ data: string }>> {
    const r = await this.requireRollout(q.rolloutId);
    const params: unknown[] = [q.rolloutId];
    let sql = 'SELECT data FROM spans WHERE rollout_id = $1';
    if (q.attemptId !== undefined) {
      const attemptId = q.attemptId === 'latest' ? r.latest_attempt_id : q.attemptId;
      if (!attemptId) return [];
      params.push(attemptId);
      sql += ` AND attempt_id = $${params.length}`;
    }
    if (q.name !== undefined) {
      params.push(q.name);
      sql += ` AND name = $${params.length}`;
    }
    if (q.afterSequenceId !== undefined) {
      params.push(q.afterSequenceId);
      sql += ` AND sequence_id > $${params.length}`;
    }
    sql += ' ORDER BY sequence_id';
    if (q.limit !== undefined) {
      params.push(pageLimit(q.limit));
      sql += ` LIMIT $${params.length}`;
    }
    return (await this.q(sql, params)).rows as Array<{ data: string }>;
  }

  // --- resources ---------------------------------------------------------------------------------
  async addResources(input: ResourcesInput): Promise<Resources> {
    const parsed = ResourcesInput.parse(input);
    return this.tx(async (c) => {
      // Versions are gap-free and unique across daemons: one writer at a time.
      await c.query(`SELECT pg_advisory_xact_lock(hashtext('agl-resources-version'))`);
      const { v } = (await c.query('SELECT COALESCE(MAX(version), 0) + 1 AS v FROM resources')).rows[0];
      const res: Resources = { id: newId('rs'), version: Number(v), createdAt: Date.now(), resources: parsed.resources, metadata: parsed.metadata };
      await c.query('INSERT INTO resources (id, version, created_at, resources, metadata) VALUES ($1, $2, $3, $4, $5)', [
        res.id,
        res.version,
        res.createdAt,
        JSON.stringify(res.resources),
        JSON.stringify(res.metadata),
      ]);
      return res;
    });
  }
  async getLatestResources(): Promise<Resources | null> {
    const r = (await this.q('SELECT * FROM resources ORDER BY version DESC LIMIT 1')).rows[0];
    return r ? rowToResources(r) : null;
  }
  async getResources(id: string): Promise<Resources | null> {
    const r = (await this.q('SELECT * FROM resources WHERE id = $1', [id])).rows[0];
    return r ? rowToResources(r) : null;
  }
  async listResources(limit?: number): Promise<Resources[]> {
    return (await this.q('SELECT * FROM resources ORDER BY version DESC LIMIT $1', [pageLimit(limit)])).rows.map(rowToResources);
  }

  // --- workers -----------------------------------------------------------------------------------
  async heartbeatWorker(id: string, patch: Partial<Pick<Worker, 'status' | 'currentRolloutId' | 'currentAttemptId' | 'metadata'>> = {}): Promise<Worker> {
    if (typeof id !== 'string' || id.length === 0) throw new TypeError('worker id must be a non-empty string');
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
  async getWorker(id: string): Promise<Worker | null> {
    const r = (await this.q('SELECT * FROM workers WHERE id = $1', [id])).rows[0];
    return r ? rowToWorker(r) : null;
  }
  async listWorkers(): Promise<Worker[]> {
    return (await this.q('SELECT * FROM workers ORDER BY id')).rows.map(rowToWorker);
  }

  // --- training runs, metrics, transitions --------------------------------------------------------
  async createTrainingRun(run: Pick<TrainingRun, 'agent' | 'config' | 'totalSteps'> & { id?: string }): Promise<TrainingRun> {
    const now = Date.now();
    const t: TrainingRun = {
      id: run.id ?? newId('run'),
      agent: run.agent,
      status: 'running',
      config: run.config ?? {},
      step: 0,
      totalSteps: run.totalSteps,
      checkpointDir: null,
      summary: {},
      createdAt: now,
      updatedAt: now,
    };
    const { rowCount } = await this.q(
      `INSERT INTO training_runs (id, agent, status, config, step, total_steps, checkpoint_dir, summary, created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6, NULL, '{}', $7, $7) ON CONFLICT (id) DO NOTHING`,
      [t.id, t.agent, t.status, JSON.stringify(t.config), 0, t.totalSteps, now],
    );
    if (rowCount === 0) throw new ConflictError(`training run '${t.id}' already exists`);
    return t;
  }
  async updateTrainingRun(id: string, patch: TrainingRunPatch): Promise<TrainingRun> {
    return this.tx(async (c) => {
      const row = (await c.query('SELECT * FROM training_runs WHERE id = $1 FOR UPDATE', [id])).rows[0];
      if (!row) throw new NotFoundError('training run', id);
      const t = patchTrainingRun(rowToTrainingRun(row), patch);
      await c.query('UPDATE training_runs SET status = $1, step = $2, total_steps = $3, checkpoint_dir = $4, summary = $5, updated_at = $6 WHERE id = $7', [
        t.status,
        t.step,
        t.totalSteps,
        t.checkpointDir,
        JSON.stringify(t.summary),
        t.updatedAt,
        id,
      ]);
      return t;
    });
  }
  async getTrainingRun(id: string): Promise<TrainingRun | null> {
    const r = (await this.q('SELECT * FROM training_runs WHERE id = $1', [id])).rows[0];
    return r ? rowToTrainingRun(r) : null;
  }
  async listTrainingRuns(agent?: string): Promise<TrainingRun[]> {
    // Runs are few: filtered here, so an agent's runs recorded under an older form of its id count (protocol/agent-id.ts).
    const runs = (await this.q('SELECT * FROM training_runs ORDER BY created_at DESC, seq DESC')).rows.map(rowToTrainingRun);
    return agent === undefined ? runs : runs.filter((r) => sameAgent(r.agent, agent));
  }
  async addMetrics(points: Omit<MetricPoint, 'time'>[]): Promise<void> {
    if (points.length === 0) return;
    await this.q(
      `INSERT INTO metrics (run_id, step, name, value, time)
      SELECT r, s, n, v, $5 FROM unnest($1::text[], $2::int[], $3::text[], $4::float8[]) WITH ORDINALITY AS t(r, s, n, v, ord) ORDER BY ord`,
      [points.map((p) => p.runId), points.map((p) => p.step), points.map((p) => p.name), points.map((p) => p.value), Date.now()],
    );
  }
  async queryMetrics(runId: string, afterStep?: number): Promise<MetricPoint[]> {
    return (await this.q('SELECT * FROM metrics WHERE run_id = $1 AND step > $2 ORDER BY step, seq', [runId, afterStep ?? -1])).rows.map(rowToMetric);
  }
  async addTransitions(transitions: Transition[]): Promise<void> {
    if (transitions.length === 0) return;
    await this.q(
      `INSERT INTO transitions (run_id, step, rollout_id, data)
      SELECT r, s, ro, d FROM unnest($1::text[], $2::int[], $3::text[], $4::text[]) WITH ORDINALITY AS t(r, s, ro, d, ord) ORDER BY ord`,
      [transitions.map((t) => t.runId), transitions.map((t) => t.step), transitions.map((t) => t.rolloutId), transitions.map((t) => JSON.stringify(t))],
    );
  }
  async queryTransitions(q: TransitionQuery): Promise<Transition[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (col: string, v: unknown) => {
      params.push(v);
      where.push(`${col} = $${params.length}`);
    };
    if (q.runId !== undefined) add('run_id', q.runId);
    if (q.rolloutId !== undefined) add('rollout_id', q.rolloutId);
    if (q.step !== undefined) add('step', q.step);
    let sql = `SELECT data FROM transitions ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY step, seq`;
    if (q.limit !== undefined) {
      params.push(pageLimit(q.limit));
      sql += ` LIMIT $${params.length}`;
    }
    return (await this.q(sql, params)).rows.map(rowToTransition);
  }

  // --- health ------------------------------------------------------------------------------------
  async runHealthCheck(now: number = Date.now()): Promise<HealthCheckResult> {
    if (this.closed) throw new Error('store is closed');
    const result = await this.life.healthCheck(now);
    for (const id of result.failed) this.hub.ended(id);
    return result;
  }

  async statistics(): Promise<Statistics> {
    const rollouts = Object.fromEntries(ROLLOUT_STATUSES.map((s) => [s, 0])) as Statistics['rollouts'];
    for (const r of (await this.q('SELECT status, COUNT(*) AS n FROM rollouts GROUP BY status')).rows)
      rollouts[r.status as keyof typeof rollouts] = Number(r.n);
    const attempts = Object.fromEntries(ATTEMPT_STATUSES.map((s) => [s, 0])) as Statistics['attempts'];
    for (const r of (await this.q('SELECT status, COUNT(*) AS n FROM attempts GROUP BY status')).rows)
      attempts[r.status as keyof typeof attempts] = Number(r.n);
    const { rows } = await this.q(`SELECT (SELECT COUNT(*) FROM spans) AS spans, (SELECT COUNT(*) FROM resources) AS resources,
      (SELECT COUNT(*) FROM workers) AS workers, (SELECT COUNT(*) FROM training_runs) AS runs`);
    const c = rows[0]!;
    return { rollouts, attempts, spans: Number(c.spans), resources: Number(c.resources), workers: Number(c.workers), trainingRuns: Number(c.runs) };
  }
}
