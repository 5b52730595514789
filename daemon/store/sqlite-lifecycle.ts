/**
 * The rollout/attempt state machine on SQLite: enqueueing, starting and claiming rollouts, liveness
 * (heartbeats and spans), finishing, cancelling, and the health check (timeout / unresponsive -> requeue or
 * fail). Every method runs inside the transaction the caller opened (SqliteStore.write), so it may read then
 * write. The rules are common.ts's, the statements both backends run lifecycle-sql.ts's; postgres-lifecycle.ts has the
 * same methods over PostgreSQL.
 */
import type Database from 'better-sqlite3';
import type { MovingTable } from './sqlite-changes.js';
import type { Attempt, AttemptStatus, Rollout, RolloutStatus, Span, SpanInput } from '../../protocol/store.js';
import {
  ConflictError,
  NotFoundError,
  type Claim,
  type ClaimOptions,
  type FinishAttemptInput,
  type HealthCheckResult,
} from '../../protocol/lightning-store.js';
import {
  CANCELLED_ATTEMPT_ERROR,
  cancelConflict,
  emptyHealthResult,
  finishConflict,
  livenessChange,
  materializeSpan,
  newId,
  type ParsedRollout,
  rowToAttempt,
  rowToRollout,
  tallyHealthChange,
  type Row,
} from './common.js';
import { digestSpans } from './search.js';
import { applySpanDigests, indexRolloutInput } from './sqlite-search.js';
import { RESET_SUMMARY_SQL } from './schema.js';
import { LIFECYCLE_SQL, STATUS_SQL, isCurrentRow, rolloutStatusValues, rowVerdict, statusAfterRow } from './lifecycle-sql.js';

export class SqliteLifecycle {
  constructor(
    private readonly db: Database.Database,
    private readonly st: (sql: string) => Database.Statement,
    /** Every row whose `updated_at` is set is told here (the change feed's log: sqlite-changes.ts). */
    private readonly moved: (table: MovingTable, id: string) => void,
  ) {}

  rolloutRow(id: string): Row | undefined {
    return this.st('SELECT * FROM rollouts WHERE id = ?').get(id) as Row | undefined;
  }
  attemptRow(id: string): Row | undefined {
    return this.st('SELECT * FROM attempts WHERE id = ?').get(id) as Row | undefined;
  }

  private resourcesVersion(id: string): number {
    const r = this.st('SELECT version FROM resources WHERE id = ?').get(id) as { version: number } | undefined;
    if (!r) throw new NotFoundError('resources', id);
    return r.version;
  }

  private insertRollout(p: ParsedRollout, now: number): { row: Row; rollout: Rollout } {
    const id = newId('ro');
    const status: RolloutStatus = 'queuing';
    const version = p.resourcesId === null ? null : this.resourcesVersion(p.resourcesId);
    const row: Row = {
      id,
      input: JSON.stringify(p.input ?? null),
      mode: p.mode,
      status,
      agent: p.agent,
      resources_id: p.resourcesId,
      resources_version: version,
      config: JSON.stringify(p.config),
      metadata: JSON.stringify(p.metadata),
      attempt_count: 0,
      latest_attempt_id: null,
      queued_at: now,
      created_at: now,
      updated_at: now,
      ended_at: null,
    };
    const info = this.st(
      `INSERT INTO rollouts (id, input, mode, status, agent, resources_id, resources_version, config, metadata,
      attempt_count, latest_attempt_id, queued_at, created_at, updated_at, ended_at)
      VALUES (@id, @input, @mode, @status, @agent, @resources_id, @resources_version, @config, @metadata,
      @attempt_count, @latest_attempt_id, @queued_at, @created_at, @updated_at, @ended_at)`,
    ).run(row);
    row.seq = Number(info.lastInsertRowid);
    indexRolloutInput(this.st, row.seq, p.input ?? null);
    const rollout: Rollout = {
      id,
      input: p.input ?? null,
      mode: p.mode,
      status,
      agent: p.agent,
      resourcesId: p.resourcesId,
      config: p.config,
      metadata: p.metadata,
      attemptCount: 0,
      createdAt: now,
      updatedAt: now,
      endedAt: null,
    };
    return { row, rollout };
  }

  enqueue(parsed: ParsedRollout[], now: number): Rollout[] {
    return parsed.map((p) => this.insertRollout(p, now).rollout);
  }

  /** Inserts a rollout and claims it at once (its first attempt starts `preparing`). */
  start(parsed: ParsedRollout, workerId: string | null, now: number): Claim {
    return this.claimRow(this.insertRollout(parsed, now).row, workerId, now);
  }

  /** The oldest claimable rollouts (requeued ones at the back), each with a new attempt. */
  claim(workerId: string, limit: number, opts: ClaimOptions, now: number): Claim[] {
    let sql = `SELECT * FROM rollouts INDEXED BY rollouts_queue WHERE status IN (${STATUS_SQL.claimable})`;
    const params: unknown[] = [];
    if (opts.agent !== undefined) {
      sql += ' AND (agent IS NULL OR agent = ?)';
      params.push(opts.agent);
    }
    if (opts.mode !== undefined) {
      sql += ' AND mode = ?';
      params.push(opts.mode);
    }
    sql += ' ORDER BY queued_at, seq LIMIT ?';
    params.push(limit);
    return (this.st(sql).all(...params) as Row[]).map((row) => this.claimRow(row, workerId, now));
  }

  /** Starts a new attempt on a claimable rollout row; fills in the latest resources when it has none. */
  private claimRow(row: Row, workerId: string | null, now: number): Claim {
    let resourcesId = row.resources_id as string | null;
    let version = row.resources_version as number | null;
    if (resourcesId === null) {
      const latest = this.st('SELECT id, version FROM resources ORDER BY version DESC LIMIT 1').get() as { id: string; version: number } | undefined;
      if (latest) {
        resourcesId = latest.id;
        version = latest.version;
      }
    }
    const attempt: Attempt = {
      id: newId('at'),
      rolloutId: row.id,
      sequence: row.attempt_count + 1,
      workerId,
      status: 'preparing',
      startedAt: now,
      endedAt: null,
      lastHeartbeat: now,
      error: null,
    };
    this.st(
      `INSERT INTO attempts (id, rollout_id, sequence, worker_id, status, started_at, ended_at, last_heartbeat, error)
      VALUES (?, ?, ?, ?, ?, ?, NULL, ?, NULL)`,
    ).run(attempt.id, row.id, attempt.sequence, workerId, attempt.status, now, now);
    this.st(
      `UPDATE rollouts SET status = ?, attempt_count = ?, latest_attempt_id = ?, resources_id = ?,
      resources_version = ?, updated_at = ?, ${RESET_SUMMARY_SQL} WHERE id = ?`,
    ).run(attempt.status, attempt.sequence, attempt.id, resourcesId, version, now, row.id);
    this.moved('rollouts', row.id);
    const rollout = rowToRollout({ ...row, status: attempt.status, attempt_count: attempt.sequence, resources_id: resourcesId, updated_at: now });
    return { rollout, attempt };
  }

  private setRolloutStatus(id: string, status: RolloutStatus, now: number): void {
    if (this.st(LIFECYCLE_SQL.setRolloutStatus).run(...rolloutStatusValues(id, status, now)).changes) this.moved('rollouts', id);
  }

  /** Liveness from a heartbeat or (`fromSpan`) a span: common.ts livenessChange. */
  private touch(attemptId: string, rolloutId: string | null, now: number, fromSpan: boolean): Attempt {
    const a = this.attemptRow(attemptId);
    if (!a || (rolloutId !== null && a.rollout_id !== rolloutId)) {
      throw new NotFoundError('attempt', rolloutId === null ? attemptId : `${attemptId}' of rollout '${rolloutId}`);
    }
    const change = livenessChange(a.status, a.status === 'unresponsive' && isCurrentRow(a, this.rolloutRow(a.rollout_id)!), fromSpan);
    if (!change) return rowToAttempt(a);
    this.st(LIFECYCLE_SQL.touchAttempt).run(change.status, now, change.revived ? 1 : 0, attemptId);
    if (change.rolloutRuns) {
      const info = this.st(
        `UPDATE rollouts SET status = 'running', updated_at = ?, ended_at = NULL
        WHERE id = ? AND latest_attempt_id = ? AND status IN (${STATUS_SQL.resumable})`,
      ).run(now, a.rollout_id, attemptId);
      if (info.changes) this.moved('rollouts', a.rollout_id);
    }
    return rowToAttempt({ ...a, status: change.status, last_heartbeat: now, ended_at: change.revived ? null : a.ended_at });
  }

  heartbeat(attemptId: string, now: number): Attempt {
    return this.touch(attemptId, null, now, false);
  }

  /** Ends an attempt with `status` and moves its rollout on (when it is the attempt the rollout waits on). */
  private endAttempt(a: Row, r: Row, status: AttemptStatus, error: unknown, now: number): RolloutStatus | null {
    this.st(LIFECYCLE_SQL.endAttempt).run(status, now, error ? JSON.stringify(error) : null, a.id);
    if (!isCurrentRow(a, r)) return null;
    const next = statusAfterRow(r, status);
    this.setRolloutStatus(r.id, next, now);
    return next;
  }

  finish(attemptId: string, input: FinishAttemptInput, now: number): { attempt: Attempt; rollout: Rollout } {
    const a = this.attemptRow(attemptId);
    if (!a) throw new NotFoundError('attempt', attemptId);
    const r = this.rolloutRow(a.rollout_id)!;
    const conflict = finishConflict(attemptId, a.status, isCurrentRow(a, r));
    if (conflict) throw new ConflictError(conflict);
    this.endAttempt(a, r, input.status, input.error ?? null, now);
    return { attempt: rowToAttempt(this.attemptRow(attemptId)!), rollout: rowToRollout(this.rolloutRow(a.rollout_id)!) };
  }

  cancel(id: string, now: number): Rollout {
    const r = this.rolloutRow(id);
    if (!r) throw new NotFoundError('rollout', id);
    const conflict = cancelConflict(id, r.status);
    if (conflict) throw new ConflictError(conflict);
    if (r.latest_attempt_id) {
      this.st(LIFECYCLE_SQL.cancelAttempt).run(now, JSON.stringify(CANCELLED_ATTEMPT_ERROR), r.latest_attempt_id);
    }
    this.setRolloutStatus(id, 'cancelled', now);
    return rowToRollout(this.rolloutRow(id)!);
  }

  /**
   * Inserts one caller's spans: sequence ids per rollout, liveness per attempt. (SQLite group-commits whole
   * calls, each in its savepoint, so this takes one call's spans; PostgreSQL's takes a turn's batches.)
   */
  insertSpans(inputs: SpanInput[], now: number): Span[] {
    const byRollout = new Map<string, true>();
    for (const s of inputs) byRollout.set(s.rolloutId, true);
    // Writes are serialised (one transaction at a time), so the next id is simply one past the highest.
    const next = new Map<string, number>();
    for (const rolloutId of byRollout.keys()) {
      if (!this.st('SELECT 1 FROM rollouts WHERE id = ?').get(rolloutId)) throw new NotFoundError('rollout', rolloutId);
      const { last } = this.st('SELECT MAX(sequence_id) AS last FROM spans WHERE rollout_id = ?').get(rolloutId) as { last: number | null };
      next.set(rolloutId, (last ?? 0) + 1);
    }
    const touched = new Set<string>();
    for (const s of inputs) {
      if (!touched.has(s.attemptId)) {
        touched.add(s.attemptId);
        this.touch(s.attemptId, s.rolloutId, now, true);
      }
    }
    const ins = this.st('INSERT INTO spans (rollout_id, sequence_id, attempt_id, name, data) VALUES (?, ?, ?, ?, ?)');
    const spans = inputs.map((s) => {
      const seq = next.get(s.rolloutId)!;
      next.set(s.rolloutId, seq + 1);
      const span = materializeSpan(s, seq);
      ins.run(span.rolloutId, seq, span.attemptId, span.name, JSON.stringify(span));
      return span;
    });
    applySpanDigests(this.st, digestSpans(spans).values());
    return spans;
  }

  /** A read-only look: would healthCheck(now) change anything? (Spares the write lock on quiet ticks.) */
  needsHealthCheck(now: number): boolean {
    for (const a of this.st(LIFECYCLE_SQL.liveAttempts).all() as Row[]) if (rowVerdict(a, JSON.parse(a.r_config), now)) return true;
    return this.st(`${LIFECYCLE_SQL.stuckRollouts} LIMIT 1`).get() !== undefined;
  }

  healthCheck(now: number): HealthCheckResult {
    const result = emptyHealthResult();
    const configs = new Map<string, { timeoutSeconds: number | null; unresponsiveSeconds: number | null }>();
    for (const a of this.st(LIFECYCLE_SQL.liveAttempts).all() as Row[]) {
      let limits = configs.get(a.r_config);
      if (!limits) configs.set(a.r_config, (limits = JSON.parse(a.r_config) as { timeoutSeconds: number | null; unresponsiveSeconds: number | null }));
      const found = rowVerdict(a, limits, now);
      if (!found) continue;
      const next = this.endAttempt(a, this.rolloutRow(a.rollout_id)!, found.verdict, found.error, now);
      tallyHealthChange(result, { attemptId: a.id, verdict: found.verdict, rolloutId: a.rollout_id, next });
    }
    // Safety net: a rollout waiting on an attempt that has already ended is moved on as well.
    for (const r of this.st(LIFECYCLE_SQL.stuckRollouts).all() as Row[]) {
      const next = statusAfterRow(r, r.a_status);
      this.setRolloutStatus(r.id, next, now);
      tallyHealthChange(result, { rolloutId: r.id, next });
    }
    return result;
  }
}
