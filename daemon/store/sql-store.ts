/**
 * What SqliteStore and PostgresStore do alike, written once: the API's checks before any SQL, the records a write
 * returns, the reads whose SQL both engines run as written (rows by id, lists, a run's metrics and transitions, a
 * rollout's spans, the statistics, the rollouts list through rollout-query.ts), and the in-process wakeups of
 * waitForRollouts. Shared statements are written with `?` placeholders; a backend runs them through `rows` after
 * numbering them as its driver needs (`numbered` for PostgreSQL). Each backend implements the writes, the
 * rollout/attempt lifecycle (sqlite-lifecycle.ts, postgres-lifecycle.ts) and the reads whose SQL differs. A prompt
 * optimization's records are prompt-records.ts's, over three writes each backend gives (insertUnlessExists,
 * modifyRow, execute).
 */
import {
  ATTEMPT_STATUSES,
  ROLLOUT_STATUSES,
  ResourcesInput,
  type Attempt,
  type MetricPoint,
  type Resources,
  type Rollout,
  type RolloutInput,
  type RunKind,
  type Span,
  type SpanInput,
  type Statistics,
  type TrainingRun,
  type Transition,
  type Worker,
} from '../../protocol/store.js';
import {
  NotFoundError,
  type Claim,
  type ClaimOptions,
  type FinishAttemptInput,
  type HealthCheckResult,
  type RolloutPage,
  type RolloutQuery,
  type SpanQuery,
  type TransitionQuery,
} from '../../protocol/lightning-store.js';
import { agentAliasesIn, sameAgent } from '../../protocol/agent-id.js';
import {
  RolloutEndHub,
  checkFinishInput,
  checkSpanInput,
  isTerminalRollout,
  newId,
  numbered,
  pageLimit,
  parseRolloutInput,
  rowToAttempt,
  rowToMetric,
  rowToResources,
  rowToRollout,
  rowToSpan,
  rowToTrainingRun,
  rowToTransition,
  rowToWorker,
  waitLoop,
  type ParsedRollout,
  type Row,
} from './common.js';
import { rolloutPage, rolloutStatements, type SqlDialect } from './rollout-query.js';
import { ORDER_COLUMN, type Backend } from './schema.js';
import type { MovingTable } from './changes.js';
import { PromptRecords, type RowChange, type Statement } from './prompt-records.js';
import type {
  CandidateDecision,
  ClearPromotedPromptInput,
  OptimizerCall,
  OptimizerCallInput,
  PromotePromptInput,
  PromotedPrompt,
  PromptCandidate,
  PromptCandidateInput,
  PromptPromotion,
} from '../../protocol/prompts.js';

export type WorkerPatch = Partial<Pick<Worker, 'status' | 'currentRolloutId' | 'currentAttemptId' | 'metadata'>>;

/** The columns a training run's update writes, and their values (`?` placeholders, the run's id last). */
export const UPDATE_TRAINING_RUN_SQL =
  'UPDATE training_runs SET status = ?, step = ?, total_steps = ?, checkpoint_dir = ?, summary = ?, updated_at = ? WHERE id = ?';
export const trainingRunUpdate = (t: TrainingRun, id: string): unknown[] => [
  t.status,
  t.step,
  t.totalSteps,
  t.checkpointDir,
  JSON.stringify(t.summary),
  t.updatedAt,
  id,
];
/** A new resources version's row. */
export const INSERT_RESOURCES_SQL = 'INSERT INTO resources (id, version, created_at, resources, metadata) VALUES (?, ?, ?, ?, ?)';
export const resourcesRow = (r: Resources): unknown[] => [r.id, r.version, r.createdAt, JSON.stringify(r.resources), JSON.stringify(r.metadata)];

export abstract class SqlStore {
  protected readonly hub = new RolloutEndHub();
  protected closed = false;
  private readonly records: PromptRecords;

  constructor(
    private readonly backend: Backend,
    /** How often waitForRollouts re-reads for rollouts ended by other processes (ms). */
    private readonly waitPollMs: number,
  ) {
    this.records = new PromptRecords({
      select: (sql, params) => this.select(sql, params),
      insertUnlessExists: (insert, existing) => this.insertUnlessExists(insert, existing),
      modifyRow: (select, table, change) => this.modifyRow(select, table, change),
      execute: (write) => this.execute(write),
      orderColumn: ORDER_COLUMN[backend],
    });
  }

  /** Runs a read in the backend's own placeholders. */
  protected abstract rows(sql: string, params: unknown[]): Promise<Row[]>;
  /** The dialect rollout-query.ts builds the rollouts list in. */
  protected abstract dialect(): SqlDialect;
  /** Every distinct agent name of the rollouts (protocol/agent-id.ts: what a query by agent expands into). */
  protected abstract agentNames(): Promise<string[]>;
  /** The rollouts among `ids` that have ended. */
  protected abstract endedAmong(ids: string[]): Promise<Rollout[]>;
  protected abstract enqueueParsed(parsed: ParsedRollout[]): Promise<Rollout[]>;
  protected abstract startParsed(parsed: ParsedRollout, workerId: string | null): Promise<Claim>;
  protected abstract claim(workerId: string, limit: number, opts: ClaimOptions): Promise<Claim[]>;
  protected abstract cancel(id: string): Promise<Rollout>;
  protected abstract finish(attemptId: string, input: FinishAttemptInput): Promise<{ attempt: Attempt; rollout: Rollout }>;
  /** Stores checked spans (not empty), issuing their sequence ids. */
  protected abstract insertSpans(spans: SpanInput[]): Promise<Span[]>;
  /** Stores the next resources version, `make` building it from its number. */
  protected abstract insertResources(make: (version: number) => Resources): Promise<Resources>;
  protected abstract upsertWorker(id: string, patch: WorkerPatch): Promise<Worker>;
  /** Stores a new run, or throws ConflictError when its id is taken. */
  protected abstract insertTrainingRun(run: TrainingRun): Promise<void>;
  protected abstract healthCheck(now: number): Promise<HealthCheckResult>;
  /** Runs `insert` unless the row `existing` finds is there (any unique key the insert would break): then that row. */
  protected abstract insertUnlessExists(insert: Statement, existing: Statement): Promise<Row | null>;
  /** Reads one row locked against other writers, and writes what `change` decides, in one transaction. */
  protected abstract modifyRow<T>(select: Statement, table: MovingTable, change: (row: Row | undefined) => RowChange<T>): Promise<T>;
  /** One write statement in its own transaction. */
  protected abstract execute(write: Statement): Promise<void>;

  /** A shared statement (`?` placeholders) run by the backend. */
  protected select(sql: string, params: unknown[] = []): Promise<Row[]> {
    return this.rows(this.backend === 'postgres' ? numbered(sql) : sql, params);
  }
  private async first(sql: string, params: unknown[]): Promise<Row | undefined> {
    return (await this.select(sql, params))[0];
  }
  protected async requireRollout(id: string): Promise<Row> {
    const r = await this.first('SELECT * FROM rollouts WHERE id = ?', [id]);
    if (!r) throw new NotFoundError('rollout', id);
    return r;
  }

  // --- rollouts ----------------------------------------------------------------------------------
  async enqueueRollout(input: RolloutInput): Promise<Rollout> {
    return (await this.enqueueRollouts([input]))[0]!;
  }
  async enqueueRollouts(inputs: RolloutInput[]): Promise<Rollout[]> {
    return this.enqueueParsed(inputs.map(parseRolloutInput));
  }
  async startRollout(input: RolloutInput, workerId?: string): Promise<Claim> {
    return this.startParsed(parseRolloutInput(input), workerId ?? null);
  }
  async claimNextRollout(workerId: string, opts?: ClaimOptions): Promise<Claim | null> {
    return (await this.claimRollouts(workerId, 1, opts))[0] ?? null;
  }
  async claimRollouts(workerId: string, limit: number, opts: ClaimOptions = {}): Promise<Claim[]> {
    if (!Number.isInteger(limit) || limit < 1) throw new TypeError(`limit must be a positive integer, got ${limit}`);
    return this.claim(workerId, limit, opts);
  }
  async getRollout(id: string): Promise<Rollout | null> {
    const r = await this.first('SELECT * FROM rollouts WHERE id = ?', [id]);
    return r ? rowToRollout(r) : null;
  }
  async queryRollouts(q: RolloutQuery = {}): Promise<RolloutPage> {
    const aliases = q.agent === undefined ? [] : agentAliasesIn(await this.agentNames(), q.agent);
    const d = this.dialect();
    const sql = rolloutStatements(q, d, aliases);
    const [rows, count] = await Promise.all([
      this.rows(sql.page, d.params),
      sql.count === null ? null : this.rows(sql.count, d.params.slice(0, sql.countParams)),
    ]);
    return rolloutPage(q, rows, sql.limit, count === null ? null : Number(count[0]!.n));
  }
  async cancelRollout(id: string): Promise<Rollout> {
    const rollout = await this.cancel(id);
    this.hub.ended(id);
    return rollout;
  }
  async waitForRollouts(ids: string[], timeoutMs: number): Promise<Rollout[]> {
    return waitLoop(this.hub, ids, timeoutMs, (pending) => this.endedAmong(pending), this.waitPollMs);
  }

  // --- attempts ----------------------------------------------------------------------------------
  async getAttempts(rolloutId: string): Promise<Attempt[]> {
    await this.requireRollout(rolloutId);
    return (await this.select('SELECT * FROM attempts WHERE rollout_id = ? ORDER BY sequence', [rolloutId])).map(rowToAttempt);
  }
  async getLatestAttempt(rolloutId: string): Promise<Attempt | null> {
    const r = await this.requireRollout(rolloutId);
    return r.latest_attempt_id ? this.getAttempt(r.latest_attempt_id) : null;
  }
  async getAttempt(attemptId: string): Promise<Attempt | null> {
    const a = await this.first('SELECT * FROM attempts WHERE id = ?', [attemptId]);
    return a ? rowToAttempt(a) : null;
  }
  async finishAttempt(attemptId: string, input: FinishAttemptInput): Promise<{ attempt: Attempt; rollout: Rollout }> {
    checkFinishInput(input);
    const out = await this.finish(attemptId, input);
    if (isTerminalRollout(out.rollout.status)) this.hub.ended(out.rollout.id);
    return out;
  }

  // --- spans -------------------------------------------------------------------------------------
  async addSpans(spans: SpanInput[]): Promise<Span[]> {
    if (this.closed) throw new Error('store is closed');
    if (spans.length === 0) return [];
    spans.forEach(checkSpanInput);
    return this.insertSpans(spans);
  }
  async querySpans(q: SpanQuery): Promise<Span[]> {
    return (await this.spanRows(q)).map(rowToSpan);
  }
  async querySpansJson(q: SpanQuery): Promise<string> {
    return `[${(await this.spanRows(q)).map((r) => r.data).join(',')}]`;
  }
  private async spanRows(q: SpanQuery): Promise<Row[]> {
    const r = await this.requireRollout(q.rolloutId);
    const where = ['rollout_id = ?'];
    const params: unknown[] = [q.rolloutId];
    if (q.attemptId !== undefined) {
      const attemptId = q.attemptId === 'latest' ? r.latest_attempt_id : q.attemptId;
      if (!attemptId) return [];
      where.push('attempt_id = ?');
      params.push(attemptId);
    }
    if (q.name !== undefined) {
      where.push('name = ?');
      params.push(q.name);
    }
    if (q.afterSequenceId !== undefined) {
      where.push('sequence_id > ?');
      params.push(q.afterSequenceId);
    }
    if (q.limit !== undefined) params.push(pageLimit(q.limit));
    return this.select(`SELECT data FROM spans WHERE ${where.join(' AND ')} ORDER BY sequence_id${q.limit === undefined ? '' : ' LIMIT ?'}`, params);
  }

  // --- resources ---------------------------------------------------------------------------------
  async addResources(input: ResourcesInput): Promise<Resources> {
    const parsed = ResourcesInput.parse(input);
    return this.insertResources((version) => ({ id: newId('rs'), version, createdAt: Date.now(), resources: parsed.resources, metadata: parsed.metadata }));
  }
  async getLatestResources(): Promise<Resources | null> {
    const r = await this.first('SELECT * FROM resources ORDER BY version DESC LIMIT 1', []);
    return r ? rowToResources(r) : null;
  }
  async getResources(id: string): Promise<Resources | null> {
    const r = await this.first('SELECT * FROM resources WHERE id = ?', [id]);
    return r ? rowToResources(r) : null;
  }
  async listResources(limit?: number): Promise<Resources[]> {
    return (await this.select('SELECT * FROM resources ORDER BY version DESC LIMIT ?', [pageLimit(limit)])).map(rowToResources);
  }

  // --- workers -----------------------------------------------------------------------------------
  async heartbeatWorker(id: string, patch: WorkerPatch = {}): Promise<Worker> {
    if (typeof id !== 'string' || id.length === 0) throw new TypeError('worker id must be a non-empty string');
    return this.upsertWorker(id, patch);
  }
  async getWorker(id: string): Promise<Worker | null> {
    const r = await this.first('SELECT * FROM workers WHERE id = ?', [id]);
    return r ? rowToWorker(r) : null;
  }
  async listWorkers(): Promise<Worker[]> {
    return (await this.select('SELECT * FROM workers ORDER BY id')).map(rowToWorker);
  }

  // --- training runs, metrics, transitions --------------------------------------------------------
  async createTrainingRun(run: Pick<TrainingRun, 'agent' | 'config' | 'totalSteps'> & { id?: string; kind?: RunKind }): Promise<TrainingRun> {
    const now = Date.now();
    const t: TrainingRun = {
      id: run.id ?? newId('run'),
      agent: run.agent,
      kind: run.kind ?? 'train',
      status: 'running',
      config: run.config ?? {},
      step: 0,
      totalSteps: run.totalSteps,
      checkpointDir: null,
      summary: {},
      createdAt: now,
      updatedAt: now,
    };
    await this.insertTrainingRun(t);
    return t;
  }
  async getTrainingRun(id: string): Promise<TrainingRun | null> {
    const r = await this.first('SELECT * FROM training_runs WHERE id = ?', [id]);
    return r ? rowToTrainingRun(r) : null;
  }
  async listTrainingRuns(agent?: string, kind?: RunKind): Promise<TrainingRun[]> {
    // Runs are few: filtered here, so an agent's runs recorded under an older form of its id count (protocol/agent-id.ts).
    const where = kind === undefined ? '' : ' WHERE kind = ?';
    const sql = `SELECT * FROM training_runs${where} ORDER BY created_at DESC, ${ORDER_COLUMN[this.backend]} DESC`;
    const runs = (await this.select(sql, kind === undefined ? [] : [kind])).map(rowToTrainingRun);
    return agent === undefined ? runs : runs.filter((r) => sameAgent(r.agent, agent));
  }
  async queryMetrics(runId: string, afterStep?: number): Promise<MetricPoint[]> {
    const sql = `SELECT * FROM metrics WHERE run_id = ? AND step > ? ORDER BY step, ${ORDER_COLUMN[this.backend]}`;
    return (await this.select(sql, [runId, afterStep ?? -1])).map(rowToMetric);
  }
  async queryTransitions(q: TransitionQuery): Promise<Transition[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    for (const [column, value] of [
      ['run_id', q.runId],
      ['rollout_id', q.rolloutId],
      ['step', q.step],
    ] as const) {
      if (value === undefined) continue;
      where.push(`${column} = ?`);
      params.push(value);
    }
    if (q.limit !== undefined) params.push(pageLimit(q.limit));
    const sql = `SELECT data FROM transitions ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY step, ${ORDER_COLUMN[this.backend]}`;
    return (await this.select(q.limit === undefined ? sql : `${sql} LIMIT ?`, params)).map(rowToTransition);
  }

  // --- prompt optimization (prompt-records.ts) ----------------------------------------------------
  addPromptCandidate(input: PromptCandidateInput): Promise<PromptCandidate> {
    return this.records.addCandidate(input);
  }
  decidePromptCandidate(id: string, decision: CandidateDecision): Promise<PromptCandidate> {
    return this.records.decideCandidate(id, decision);
  }
  getPromptCandidate(id: string): Promise<PromptCandidate | null> {
    return this.records.getCandidate(id);
  }
  listPromptCandidates(runId: string): Promise<PromptCandidate[]> {
    return this.records.listCandidates(runId);
  }
  addOptimizerCall(input: OptimizerCallInput): Promise<OptimizerCall> {
    return this.records.addCall(input);
  }
  listOptimizerCalls(runId: string): Promise<OptimizerCall[]> {
    return this.records.listCalls(runId);
  }
  promotePrompt(input: PromotePromptInput): Promise<PromotedPrompt> {
    return this.records.promote(input);
  }
  listPromotedPrompts(agent?: string): Promise<PromotedPrompt[]> {
    return this.records.listPromoted(agent);
  }
  clearPromotedPrompt(input: ClearPromotedPromptInput): Promise<boolean> {
    return this.records.clear(input);
  }
  listPromptPromotions(agent: string, name: string): Promise<PromptPromotion[]> {
    return this.records.listPromotions(agent, name);
  }

  // --- health ------------------------------------------------------------------------------------
  async runHealthCheck(now: number = Date.now()): Promise<HealthCheckResult> {
    if (this.closed) throw new Error('store is closed');
    const result = await this.healthCheck(now);
    for (const id of result.failed) this.hub.ended(id);
    return result;
  }

  async statistics(): Promise<Statistics> {
    const rollouts = Object.fromEntries(ROLLOUT_STATUSES.map((s) => [s, 0])) as Statistics['rollouts'];
    for (const r of await this.select('SELECT status, COUNT(*) AS n FROM rollouts GROUP BY status')) rollouts[r.status as keyof typeof rollouts] = Number(r.n);
    const attempts = Object.fromEntries(ATTEMPT_STATUSES.map((s) => [s, 0])) as Statistics['attempts'];
    for (const r of await this.select('SELECT status, COUNT(*) AS n FROM attempts GROUP BY status')) attempts[r.status as keyof typeof attempts] = Number(r.n);
    const c = (
      await this.select(`SELECT (SELECT COUNT(*) FROM spans) AS spans, (SELECT COUNT(*) FROM resources) AS resources,
      (SELECT COUNT(*) FROM workers) AS workers, (SELECT COUNT(*) FROM training_runs) AS runs`)
    )[0]!;
    return { rollouts, attempts, spans: Number(c.spans), resources: Number(c.resources), workers: Number(c.workers), trainingRuns: Number(c.runs) };
  }
}
