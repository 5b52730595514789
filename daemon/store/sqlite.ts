/**
 * SqliteStore: the embedded LightningStore on better-sqlite3 (WAL, synchronous=NORMAL, 16 KB pages).
 * Group commit: every write (claims, spans, finishes, ...) arriving in the same event-loop turn runs in one
 * BEGIN IMMEDIATE transaction, each call in its own savepoint so one bad call fails alone; a promise
 * resolves only after its rows are committed. BEGIN IMMEDIATE makes claims exactly-once across processes
 * sharing the file. Reads run directly. Rollout/attempt state rules live in sqlite-lifecycle.ts.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
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
  emptyHealthResult,
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
  sqlList,
  waitLoop,
  type Row,
} from './common.js';
import { agentAliasesIn, sameAgent } from '../../protocol/agent-id.js';
import { prepareDatabase } from './sqlite-schema.js';
import { rolloutPage, rolloutStatements } from './rollout-query.js';
import { sqliteDialect } from './sqlite-search.js';
import { SqliteLifecycle } from './sqlite-lifecycle.js';
import { WalCheckpointer } from './sqlite-checkpointer.js';
import { SqliteChangeFeed } from './sqlite-changes.js';
import type { StoreChange } from '../../protocol/events.js';

export interface SqliteStoreOptions {
  /** Run WAL checkpoints in a worker thread instead of inside commits (default true for files). */
  backgroundCheckpoints?: boolean;
  /** How often waitForRollouts re-reads the file for rollouts ended by other processes (default 1000 ms). */
  waitPollMs?: number;
}

interface PendingWrite {
  run: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

const TERMINAL_SQL = sqlList(TERMINAL_ROLLOUT_STATUSES);

export class SqliteStore implements LightningStore {
  readonly kind = 'sqlite';
  readonly db: Database.Database;
  private readonly hub = new RolloutEndHub();
  private readonly life: SqliteLifecycle;
  private readonly statements = new Map<string, Database.Statement>();
  private queue: PendingWrite[] = [];
  private closed = false;
  private readonly waitPollMs: number;
  /** The background WAL checkpointer, when one runs. */
  readonly checkpointer: WalCheckpointer | null = null;
  /** What was committed, for watchChanges (sqlite-changes.ts). */
  private readonly changes: SqliteChangeFeed;

  constructor(
    readonly path: string,
    options: SqliteStoreOptions = {},
  ) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    prepareDatabase(this.db);
    this.waitPollMs = options.waitPollMs ?? 1000;
    this.life = new SqliteLifecycle(this.db, (sql) => this.st(sql));
    this.changes = new SqliteChangeFeed(
      this.db,
      (sql) => this.st(sql),
      (m) => console.error(`[agl store] ${m}`),
    );
    if (path !== ':memory:' && options.backgroundCheckpoints !== false) {
      const checkpointer = new WalCheckpointer(path, 500, (m) => console.error(`[agl store] background checkpoint: ${m}`));
      if (checkpointer.active) {
        this.checkpointer = checkpointer;
        // Backstop only: if the worker stalls, commits still checkpoint once the WAL reaches ~320 MB.
        this.db.pragma('wal_autocheckpoint = 20000');
        this.db.pragma('journal_size_limit = 67108864');
      }
    }
  }

  /** Prepared statements, cached by text. */
  private st(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (!s) this.statements.set(sql, (s = this.db.prepare(sql)));
    return s;
  }
  /** Queues a write for this turn's group commit; resolves with its result once committed. */
  private write<T>(fn: () => T): Promise<T> {
    if (this.closed) return Promise.reject(new Error('store is closed'));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ run: fn, resolve: resolve as (v: unknown) => void, reject });
      if (this.queue.length === 1) setImmediate(() => this.commitQueued());
    });
  }

  /** Runs every queued write in one transaction (synchronously: nothing else interleaves). */
  private commitQueued(): void {
    const ops = this.queue;
    this.queue = [];
    if (ops.length === 0 || (this.closed && !this.db.open)) {
      for (const op of ops) op.reject(new Error('store is closed'));
      return;
    }
    const outcomes: Array<{ ok: boolean; value: unknown }> = [];
    try {
      this.db
        .transaction(() => {
          if (ops.length === 1) {
            outcomes.push({ ok: true, value: ops[0]!.run() });
            return;
          }
          for (const op of ops) {
            try {
              outcomes.push({ ok: true, value: this.db.transaction(op.run)() });
            } catch (error) {
              outcomes.push({ ok: false, value: error });
            }
          }
        })
        .immediate();
    } catch (error) {
      for (const op of ops) op.reject(error);
      return;
    }
    this.changes.committed();
    ops.forEach((op, i) => {
      const o = outcomes[i]!;
      if (o.ok) op.resolve(o.value);
      else op.reject(o.value);
    });
  }

  async watchChanges(listener: (change: StoreChange) => void): Promise<() => void> {
    if (this.closed) throw new Error('store is closed');
    return this.changes.watch(listener);
  }

  private read<T>(fn: () => T): T {
    if (this.closed) throw new Error('store is closed');
    return fn();
  }
  private announceEnded(rollouts: Array<{ id: string; status: string }>): void {
    for (const r of rollouts) if ((TERMINAL_ROLLOUT_STATUSES as readonly string[]).includes(r.status)) this.hub.ended(r.id);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.commitQueued();
    this.closed = true;
    this.changes.stop();
    await this.checkpointer?.stop();
    this.db.close();
  }

  // --- rollouts ----------------------------------------------------------------------------------
  async enqueueRollout(input: RolloutInput): Promise<Rollout> {
    return (await this.enqueueRollouts([input]))[0]!;
  }

  async enqueueRollouts(inputs: RolloutInput[]): Promise<Rollout[]> {
    const parsed = inputs.map(parseRolloutInput);
    return this.write(() => this.life.enqueue(parsed, Date.now()));
  }

  async startRollout(input: RolloutInput, workerId?: string): Promise<Claim> {
    const parsed = parseRolloutInput(input);
    return this.write(() => this.life.start(parsed, workerId ?? null, Date.now()));
  }

  async claimNextRollout(workerId: string, opts?: ClaimOptions): Promise<Claim | null> {
    return (await this.claimRollouts(workerId, 1, opts))[0] ?? null;
  }

  async claimRollouts(workerId: string, limit: number, opts: ClaimOptions = {}): Promise<Claim[]> {
    if (!Number.isInteger(limit) || limit < 1) throw new TypeError(`limit must be a positive integer, got ${limit}`);
    return this.write(() => this.life.claim(workerId, limit, opts, Date.now()));
  }

  async getRollout(id: string): Promise<Rollout | null> {
    return this.read(() => {
      const r = this.life.rolloutRow(id);
      return r ? rowToRollout(r) : null;
    });
  }

  async queryRollouts(q: RolloutQuery = {}): Promise<RolloutPage> {
    const d = sqliteDialect();
    const sql = rolloutStatements(q, d, q.agent === undefined ? [] : this.read(() => agentAliasesIn(this.agentNames(), q.agent!)));
    return this.read(() => {
      const rows = this.st(sql.page).all(...d.params) as Row[];
      const total = sql.count === null ? null : (this.st(sql.count).get(...d.params.slice(0, sql.countParams)) as { n: number }).n;
      return rolloutPage(q, rows, sql.limit, total);
    });
  }

  /** Distinct agent names of the rollouts (one index probe each): ids written in every form (protocol/agent-id.ts). */
  private agentNames(): string[] {
    const names: string[] = [];
    for (let last = ''; ;) {
      const next = (this.st(DISTINCT_AGENTS_SQL.sqlite).get(last) as { agent: string | null }).agent;
      if (next === null) return names;
      names.push(next);
      last = next;
    }
  }

  async cancelRollout(id: string): Promise<Rollout> {
    const rollout = await this.write(() => this.life.cancel(id, Date.now()));
    this.hub.ended(id);
    return rollout;
  }

  async updateRolloutMetadata(id: string, metadata: Record<string, unknown>): Promise<Rollout> {
    return this.write(() => {
      const row = this.life.rolloutRow(id);
      if (!row) throw new NotFoundError('rollout', id);
      const merged = { ...JSON.parse(row.metadata), ...metadata };
      this.st('UPDATE rollouts SET metadata = ?, updated_at = ? WHERE id = ?').run(JSON.stringify(merged), Date.now(), id);
      return rowToRollout(this.life.rolloutRow(id)!);
    });
  }

  async waitForRollouts(ids: string[], timeoutMs: number): Promise<Rollout[]> {
    // Driven by the ids (one index probe each; `+status` keeps the planner off the status index, which would
    // scan every ended rollout: 124 ms instead of 3.6 ms for 4096 ids among 46k ended ones).
    const sql = `SELECT r.* FROM json_each(?) j JOIN rollouts r ON r.id = j.value WHERE +r.status IN (${TERMINAL_SQL})`;
    return waitLoop(
      this.hub,
      ids,
      timeoutMs,
      async (pending) => this.read(() => (this.st(sql).all(JSON.stringify(pending)) as Row[]).map(rowToRollout)),
      this.waitPollMs,
    );
  }

  // --- attempts ----------------------------------------------------------------------------------
  async getAttempts(rolloutId: string): Promise<Attempt[]> {
    return this.read(() => {
      if (!this.life.rolloutRow(rolloutId)) throw new NotFoundError('rollout', rolloutId);
      return (this.st('SELECT * FROM attempts WHERE rollout_id = ? ORDER BY sequence').all(rolloutId) as Row[]).map(rowToAttempt);
    });
  }
  async getLatestAttempt(rolloutId: string): Promise<Attempt | null> {
    return this.read(() => {
      const r = this.life.rolloutRow(rolloutId);
      if (!r) throw new NotFoundError('rollout', rolloutId);
      return r.latest_attempt_id ? rowToAttempt(this.life.attemptRow(r.latest_attempt_id)!) : null;
    });
  }
  async getAttempt(attemptId: string): Promise<Attempt | null> {
    return this.read(() => {
      const a = this.life.attemptRow(attemptId);
      return a ? rowToAttempt(a) : null;
    });
  }
  async heartbeatAttempt(attemptId: string): Promise<Attempt> {
    return this.write(() => this.life.heartbeat(attemptId, Date.now()));
  }
  async finishAttempt(attemptId: string, input: FinishAttemptInput): Promise<{ attempt: Attempt; rollout: Rollout }> {
    checkFinishInput(input);
    const result = await this.write(() => this.life.finish(attemptId, input, Date.now()));
    this.announceEnded([result.rollout]);
    return result;
  }

  // --- spans -------------------------------------------------------------------------------------
  async addSpans(spans: SpanInput[]): Promise<Span[]> {
    if (this.closed) throw new Error('store is closed');
    if (spans.length === 0) return [];
    spans.forEach(checkSpanInput);
    return this.write(() => this.life.insertSpans(spans, Date.now()));
  }

  async querySpans(q: SpanQuery): Promise<Span[]> {
    return this.read(() => this.spanRows(q).map(rowToSpan));
  }
  async querySpansJson(q: SpanQuery): Promise<string> {
    return this.read(
      () =>
        `[${this.spanRows(q)
          .map((r) => r.data)
          .join(',')}]`,
    );
  }
  private spanRows(q: SpanQuery): Array<{ data: string }> {
    const r = this.life.rolloutRow(q.rolloutId);
    if (!r) throw new NotFoundError('rollout', q.rolloutId);
    let sql = 'SELECT data FROM spans WHERE rollout_id = ?';
    const params: unknown[] = [q.rolloutId];
    if (q.attemptId !== undefined) {
      const attemptId = q.attemptId === 'latest' ? r.latest_attempt_id : q.attemptId;
      if (!attemptId) return [];
      sql += ' AND attempt_id = ?';
      params.push(attemptId);
    }
    if (q.name !== undefined) {
      sql += ' AND name = ?';
      params.push(q.name);
    }
    if (q.afterSequenceId !== undefined) {
      sql += ' AND sequence_id > ?';
      params.push(q.afterSequenceId);
    }
    sql += ' ORDER BY sequence_id LIMIT ?';
    params.push(q.limit === undefined ? -1 : pageLimit(q.limit));
    return this.st(sql).all(...params) as Array<{ data: string }>;
  }

  // --- resources ---------------------------------------------------------------------------------
  async addResources(input: ResourcesInput): Promise<Resources> {
    const parsed = ResourcesInput.parse(input);
    return this.write(() => {
      const { v } = this.st('SELECT COALESCE(MAX(version), 0) + 1 AS v FROM resources').get() as { v: number };
      const res: Resources = { id: newId('rs'), version: v, createdAt: Date.now(), resources: parsed.resources, metadata: parsed.metadata };
      this.st('INSERT INTO resources (id, version, created_at, resources, metadata) VALUES (?, ?, ?, ?, ?)').run(
        res.id,
        res.version,
        res.createdAt,
        JSON.stringify(res.resources),
        JSON.stringify(res.metadata),
      );
      return res;
    });
  }
  async getLatestResources(): Promise<Resources | null> {
    return this.read(() => {
      const r = this.st('SELECT * FROM resources ORDER BY version DESC LIMIT 1').get();
      return r ? rowToResources(r) : null;
    });
  }
  async getResources(id: string): Promise<Resources | null> {
    return this.read(() => {
      const r = this.st('SELECT * FROM resources WHERE id = ?').get(id);
      return r ? rowToResources(r) : null;
    });
  }
  async listResources(limit?: number): Promise<Resources[]> {
    return this.read(() => (this.st('SELECT * FROM resources ORDER BY version DESC LIMIT ?').all(pageLimit(limit)) as Row[]).map(rowToResources));
  }

  // --- workers -----------------------------------------------------------------------------------
  async heartbeatWorker(id: string, patch: Partial<Pick<Worker, 'status' | 'currentRolloutId' | 'currentAttemptId' | 'metadata'>> = {}): Promise<Worker> {
    if (typeof id !== 'string' || id.length === 0) throw new TypeError('worker id must be a non-empty string');
    return this.write(() => {
      const row = this.st('SELECT * FROM workers WHERE id = ?').get(id);
      const prev: Worker = row ? rowToWorker(row) : { id, status: 'idle', lastHeartbeat: 0, currentRolloutId: null, currentAttemptId: null, metadata: {} };
      const w: Worker = {
        id,
        lastHeartbeat: Date.now(),
        status: patch.status ?? prev.status,
        currentRolloutId: patch.currentRolloutId !== undefined ? patch.currentRolloutId : prev.currentRolloutId,
        currentAttemptId: patch.currentAttemptId !== undefined ? patch.currentAttemptId : prev.currentAttemptId,
        metadata: patch.metadata ? { ...prev.metadata, ...patch.metadata } : prev.metadata,
      };
      this.st(
        `INSERT INTO workers (id, status, last_heartbeat, current_rollout_id, current_attempt_id, metadata) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT(id) DO UPDATE SET status = excluded.status, last_heartbeat = excluded.last_heartbeat,
        current_rollout_id = excluded.current_rollout_id, current_attempt_id = excluded.current_attempt_id, metadata = excluded.metadata`,
      ).run(w.id, w.status, w.lastHeartbeat, w.currentRolloutId, w.currentAttemptId, JSON.stringify(w.metadata));
      return w;
    });
  }
  async getWorker(id: string): Promise<Worker | null> {
    return this.read(() => {
      const r = this.st('SELECT * FROM workers WHERE id = ?').get(id);
      return r ? rowToWorker(r) : null;
    });
  }
  async listWorkers(): Promise<Worker[]> {
    return this.read(() => (this.st('SELECT * FROM workers ORDER BY id').all() as Row[]).map(rowToWorker));
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
    await this.write(() => {
      if (this.st('SELECT 1 FROM training_runs WHERE id = ?').get(t.id)) throw new ConflictError(`training run '${t.id}' already exists`);
      this.st(
        `INSERT INTO training_runs (id, agent, status, config, step, total_steps, checkpoint_dir, summary, created_at, updated_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(t.id, t.agent, t.status, JSON.stringify(t.config), t.step, t.totalSteps, null, '{}', now, now);
    });
    return t;
  }
  async updateTrainingRun(id: string, patch: TrainingRunPatch): Promise<TrainingRun> {
    return this.write(() => {
      const row = this.st('SELECT * FROM training_runs WHERE id = ?').get(id);
      if (!row) throw new NotFoundError('training run', id);
      const t = patchTrainingRun(rowToTrainingRun(row), patch);
      this.st(`UPDATE training_runs SET status = ?, step = ?, total_steps = ?, checkpoint_dir = ?, summary = ?, updated_at = ? WHERE id = ?`).run(
        t.status,
        t.step,
        t.totalSteps,
        t.checkpointDir,
        JSON.stringify(t.summary),
        t.updatedAt,
        id,
      );
      return t;
    });
  }
  async getTrainingRun(id: string): Promise<TrainingRun | null> {
    return this.read(() => {
      const r = this.st('SELECT * FROM training_runs WHERE id = ?').get(id);
      return r ? rowToTrainingRun(r) : null;
    });
  }
  async listTrainingRuns(agent?: string): Promise<TrainingRun[]> {
    // Runs are few: filtered here, so an agent's runs recorded under an older form of its id count (protocol/agent-id.ts).
    const runs = this.read(() => this.st('SELECT * FROM training_runs ORDER BY created_at DESC, rowid DESC').all() as Row[]).map(rowToTrainingRun);
    return agent === undefined ? runs : runs.filter((r) => sameAgent(r.agent, agent));
  }
  async addMetrics(points: Omit<MetricPoint, 'time'>[]): Promise<void> {
    const now = Date.now();
    await this.write(() => {
      const ins = this.st('INSERT INTO metrics (run_id, step, name, value, time) VALUES (?, ?, ?, ?, ?)');
      for (const p of points) ins.run(p.runId, p.step, p.name, p.value, now);
    });
  }
  async queryMetrics(runId: string, afterStep?: number): Promise<MetricPoint[]> {
    return this.read(() =>
      (this.st('SELECT * FROM metrics WHERE run_id = ? AND step > ? ORDER BY step, rowid').all(runId, afterStep ?? -1) as Row[]).map(rowToMetric),
    );
  }
  async addTransitions(transitions: Transition[]): Promise<void> {
    await this.write(() => {
      const ins = this.st('INSERT INTO transitions (run_id, step, rollout_id, data) VALUES (?, ?, ?, ?)');
      for (const t of transitions) ins.run(t.runId, t.step, t.rolloutId, JSON.stringify(t));
    });
  }
  async queryTransitions(q: TransitionQuery): Promise<Transition[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.runId !== undefined) {
      where.push('run_id = ?');
      params.push(q.runId);
    }
    if (q.rolloutId !== undefined) {
      where.push('rollout_id = ?');
      params.push(q.rolloutId);
    }
    if (q.step !== undefined) {
      where.push('step = ?');
      params.push(q.step);
    }
    const sql = `SELECT data FROM transitions ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY step, rowid LIMIT ?`;
    params.push(q.limit === undefined ? -1 : pageLimit(q.limit));
    return this.read(() => (this.st(sql).all(...params) as Row[]).map(rowToTransition));
  }

  // --- health ------------------------------------------------------------------------------------
  async runHealthCheck(now: number = Date.now()): Promise<HealthCheckResult> {
    if (this.read(() => !this.life.needsHealthCheck(now))) return emptyHealthResult();
    const result = await this.write(() => this.life.healthCheck(now));
    for (const id of result.failed) this.hub.ended(id);
    return result;
  }

  async statistics(): Promise<Statistics> {
    return this.read(() => {
      const rollouts = Object.fromEntries(ROLLOUT_STATUSES.map((s) => [s, 0])) as Statistics['rollouts'];
      for (const r of this.st('SELECT status, COUNT(*) AS n FROM rollouts GROUP BY status').all() as Row[]) rollouts[r.status as keyof typeof rollouts] = r.n;
      const attempts = Object.fromEntries(ATTEMPT_STATUSES.map((s) => [s, 0])) as Statistics['attempts'];
      for (const r of this.st('SELECT status, COUNT(*) AS n FROM attempts GROUP BY status').all() as Row[]) attempts[r.status as keyof typeof attempts] = r.n;
      const count = (table: string) => (this.st(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
      return { rollouts, attempts, spans: count('spans'), resources: count('resources'), workers: count('workers'), trainingRuns: count('training_runs') };
    });
  }
}
