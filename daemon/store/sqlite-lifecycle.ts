/**
 * The rollout/attempt state machine on SQLite: inserting and claiming rollouts, liveness (heartbeats and
 * spans), finishing, cancelling, and the health check (timeout / unresponsive -> requeue or fail).
 * Every method runs inside a transaction the caller opened (SqliteStore.write), so it may read then write.
 *
 * Rules (shared with PostgreSQL): a rollout "has moved on" from an attempt when that attempt is no longer its
 * latest one or the rollout has ended; only then is an `unresponsive` attempt beyond revival.
 */
import type Database from 'better-sqlite3';
import type { Attempt, AttemptStatus, Rollout, RolloutStatus, Span, SpanInput } from '../../protocol/store.js';
import { ConflictError, NotFoundError, type Claim, type FinishAttemptInput, type HealthCheckResult } from './types.js';
import { isTerminalRollout, materializeSpan, newId, parseRolloutInput, rolloutStatusAfter, rowToAttempt, rowToRollout } from './common.js';

type Row = Record<string, any>;

export class SqliteLifecycle {
  constructor(private readonly db: Database.Database, private readonly st: (sql: string) => Database.Statement) {}

  rolloutRow(id: string): Row | undefined { return this.st('SELECT * FROM rollouts WHERE id = ?').get(id) as Row | undefined; }
  attemptRow(id: string): Row | undefined { return this.st('SELECT * FROM attempts WHERE id = ?').get(id) as Row | undefined; }

  private resourcesVersion(id: string): number {
    const r = this.st('SELECT version FROM resources WHERE id = ?').get(id) as { version: number } | undefined;
    if (!r) throw new NotFoundError('resources', id);
    return r.version;
  }

  insertRollout(p: ReturnType<typeof parseRolloutInput>, status: RolloutStatus, now: number): { row: Row; rollout: Rollout } {
    const id = newId('ro');
    const version = p.resourcesId === null ? null : this.resourcesVersion(p.resourcesId);
    const row: Row = {
      id, input: JSON.stringify(p.input ?? null), mode: p.mode, status, agent: p.agent, resources_id: p.resourcesId,
      resources_version: version, config: JSON.stringify(p.config), metadata: JSON.stringify(p.metadata), attempt_count: 0,
      latest_attempt_id: null, queued_at: now, created_at: now, updated_at: now, ended_at: null,
    };
    const info = this.st(`INSERT INTO rollouts (id, input, mode, status, agent, resources_id, resources_version, config, metadata,
      attempt_count, latest_attempt_id, queued_at, created_at, updated_at, ended_at)
      VALUES (@id, @input, @mode, @status, @agent, @resources_id, @resources_version, @config, @metadata,
      @attempt_count, @latest_attempt_id, @queued_at, @created_at, @updated_at, @ended_at)`).run(row);
    row.seq = Number(info.lastInsertRowid);
    const rollout: Rollout = {
      id, input: p.input ?? null, mode: p.mode, status, agent: p.agent, resourcesId: p.resourcesId, config: p.config,
      metadata: p.metadata, attemptCount: 0, createdAt: now, updatedAt: now, endedAt: null,
    };
    return { row, rollout };
  }

  /** Starts a new attempt on a claimable rollout row; fills in the latest resources when it has none. */
  claimRow(row: Row, workerId: string | null, now: number): Claim {
    let resourcesId = row.resources_id as string | null;
    let version = row.resources_version as number | null;
    if (resourcesId === null) {
      const latest = this.st('SELECT id, version FROM resources ORDER BY version DESC LIMIT 1').get() as { id: string; version: number } | undefined;
      if (latest) { resourcesId = latest.id; version = latest.version; }
    }
    const attempt: Attempt = {
      id: newId('at'), rolloutId: row.id, sequence: row.attempt_count + 1, workerId, status: 'preparing',
      startedAt: now, endedAt: null, lastHeartbeat: now, error: null,
    };
    this.st(`INSERT INTO attempts (id, rollout_id, sequence, worker_id, status, started_at, ended_at, last_heartbeat, error)
      VALUES (?, ?, ?, ?, 'preparing', ?, NULL, ?, NULL)`).run(attempt.id, row.id, attempt.sequence, workerId, now, now);
    this.st(`UPDATE rollouts SET status = 'preparing', attempt_count = ?, latest_attempt_id = ?, resources_id = ?,
      resources_version = ?, updated_at = ? WHERE id = ?`).run(attempt.sequence, attempt.id, resourcesId, version, now, row.id);
    const rollout = rowToRollout({ ...row, status: 'preparing', attempt_count: attempt.sequence, resources_id: resourcesId, updated_at: now });
    return { rollout, attempt };
  }

  private setRolloutStatus(row: Row, status: RolloutStatus, now: number): void {
    const ended = isTerminalRollout(status) ? now : null;
    if (status === 'requeuing') {
      this.st('UPDATE rollouts SET status = ?, updated_at = ?, ended_at = NULL, queued_at = ? WHERE id = ?').run(status, now, now, row.id);
    } else {
      this.st('UPDATE rollouts SET status = ?, updated_at = ?, ended_at = ? WHERE id = ?').run(status, now, ended, row.id);
    }
  }

  /** The attempt is still the one its rollout is waiting on. */
  private isCurrent(attempt: Row, rollout: Row): boolean {
    return rollout.latest_attempt_id === attempt.id && !isTerminalRollout(rollout.status);
  }

  /**
   * Liveness from a heartbeat (or a span, `fromSpan`): refreshes lastHeartbeat, moves a preparing attempt to
   * running on its first span, and revives an unresponsive attempt whose rollout has not moved on.
   */
  touchAttempt(attemptId: string, rolloutId: string | null, now: number, fromSpan: boolean): Attempt {
    const a = this.attemptRow(attemptId);
    if (!a || (rolloutId !== null && a.rollout_id !== rolloutId)) {
      throw new NotFoundError('attempt', rolloutId === null ? attemptId : `${attemptId}' of rollout '${rolloutId}`);
    }
    let status: AttemptStatus = a.status;
    let revived = false;
    if (status === 'unresponsive') {
      const r = this.rolloutRow(a.rollout_id)!;
      if (!this.isCurrent(a, r)) return rowToAttempt(a);
      status = 'running';
      revived = true;
    } else if (status === 'preparing' && fromSpan) {
      status = 'running';
    } else if (status !== 'preparing' && status !== 'running') {
      return rowToAttempt(a); // ended: spans are still kept, nothing else changes
    }
    this.st('UPDATE attempts SET status = ?, last_heartbeat = ?, ended_at = CASE WHEN ? THEN NULL ELSE ended_at END WHERE id = ?')
      .run(status, now, revived ? 1 : 0, attemptId);
    if (status === 'running' && (revived || a.status === 'preparing')) {
      this.st(`UPDATE rollouts SET status = 'running', updated_at = ?, ended_at = NULL
        WHERE id = ? AND latest_attempt_id = ? AND status IN ('preparing', 'requeuing', 'running')`).run(now, a.rollout_id, attemptId);
    }
    return rowToAttempt({ ...a, status, last_heartbeat: now, ended_at: revived ? null : a.ended_at });
  }

  /** Ends an attempt with `status` and moves its rollout on (when it is the attempt the rollout waits on). */
  private endAttempt(a: Row, r: Row, status: AttemptStatus, error: unknown, now: number): RolloutStatus | null {
    this.st('UPDATE attempts SET status = ?, ended_at = ?, error = ? WHERE id = ?')
      .run(status, now, error ? JSON.stringify(error) : null, a.id);
    if (!this.isCurrent(a, r)) return null;
    const next = rolloutStatusAfter({ config: JSON.parse(r.config), attemptCount: r.attempt_count }, status);
    this.setRolloutStatus(r, next, now);
    return next;
  }

  finish(attemptId: string, input: FinishAttemptInput, now: number): { attempt: Attempt; rollout: Rollout } {
    const a = this.attemptRow(attemptId);
    if (!a) throw new NotFoundError('attempt', attemptId);
    const r = this.rolloutRow(a.rollout_id)!;
    if (a.status !== 'preparing' && a.status !== 'running' && !(a.status === 'unresponsive' && this.isCurrent(a, r))) {
      throw new ConflictError(`attempt '${attemptId}' already ended with status '${a.status}'`);
    }
    this.endAttempt(a, r, input.status, input.error ?? null, now);
    return { attempt: rowToAttempt(this.attemptRow(attemptId)!), rollout: rowToRollout(this.rolloutRow(a.rollout_id)!) };
  }

  cancel(id: string, now: number): Rollout {
    const r = this.rolloutRow(id);
    if (!r) throw new NotFoundError('rollout', id);
    if (isTerminalRollout(r.status)) throw new ConflictError(`rollout '${id}' already ended with status '${r.status}'`);
    if (r.latest_attempt_id) {
      this.st(`UPDATE attempts SET status = 'failed', ended_at = ?, error = ? WHERE id = ? AND status IN ('preparing', 'running', 'unresponsive')`)
        .run(now, JSON.stringify({ message: 'rollout cancelled' }), r.latest_attempt_id);
    }
    this.setRolloutStatus(r, 'cancelled', now);
    return rowToRollout(this.rolloutRow(id)!);
  }

  /** Inserts one caller's spans: sequence ids per rollout, liveness per attempt. */
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
      if (!touched.has(s.attemptId)) { touched.add(s.attemptId); this.touchAttempt(s.attemptId, s.rolloutId, now, true); }
    }
    const ins = this.st('INSERT INTO spans (rollout_id, sequence_id, attempt_id, name, data) VALUES (?, ?, ?, ?, ?)');
    return inputs.map((s) => {
      const seq = next.get(s.rolloutId)!;
      next.set(s.rolloutId, seq + 1);
      const span = materializeSpan(s, seq);
      ins.run(span.rolloutId, seq, span.attemptId, span.name, JSON.stringify(span));
      return span;
    });
  }

  /** A read-only look: would healthCheck(now) change anything? (Spares the write lock on quiet ticks.) */
  needsHealthCheck(now: number): boolean {
    for (const a of this.st(`SELECT a.started_at, a.last_heartbeat, r.config FROM attempts a JOIN rollouts r ON r.id = a.rollout_id
      WHERE a.status IN ('preparing', 'running')`).all() as Row[]) {
      const cfg = JSON.parse(a.config);
      if (cfg.timeoutSeconds !== null && now - a.started_at > cfg.timeoutSeconds * 1000) return true;
      if (cfg.unresponsiveSeconds !== null && now - a.last_heartbeat > cfg.unresponsiveSeconds * 1000) return true;
    }
    return this.st(`SELECT 1 FROM rollouts r JOIN attempts a ON a.id = r.latest_attempt_id
      WHERE r.status IN ('preparing', 'running') AND a.status NOT IN ('preparing', 'running') LIMIT 1`).get() !== undefined;
  }

  healthCheck(now: number): HealthCheckResult {
    const result: HealthCheckResult = { timedOut: [], unresponsive: [], requeued: [], failed: [] };
    const live = this.st(`SELECT a.*, r.config AS r_config FROM attempts a JOIN rollouts r ON r.id = a.rollout_id
      WHERE a.status IN ('preparing', 'running')`).all() as Row[];
    const configs = new Map<string, { timeoutSeconds: number | null; unresponsiveSeconds: number | null }>();
    for (const a of live) {
      let cfg = configs.get(a.r_config);
      if (!cfg) configs.set(a.r_config, (cfg = JSON.parse(a.r_config)));
      let status: AttemptStatus | null = null;
      if (cfg!.timeoutSeconds !== null && now - a.started_at > cfg!.timeoutSeconds * 1000) status = 'timeout';
      else if (cfg!.unresponsiveSeconds !== null && now - a.last_heartbeat > cfg!.unresponsiveSeconds * 1000) status = 'unresponsive';
      if (!status) continue;
      (status === 'timeout' ? result.timedOut : result.unresponsive).push(a.id);
      const message = status === 'timeout'
        ? `attempt exceeded timeoutSeconds=${cfg!.timeoutSeconds}`
        : `no heartbeat or span for unresponsiveSeconds=${cfg!.unresponsiveSeconds}`;
      const next = this.endAttempt(a, this.rolloutRow(a.rollout_id)!, status, { message }, now);
      if (next === 'requeuing') result.requeued.push(a.rollout_id);
      if (next === 'failed') result.failed.push(a.rollout_id);
    }
    // Safety net: a rollout waiting on an attempt that has already ended is moved on as well.
    const stuck = this.st(`SELECT r.*, a.status AS a_status FROM rollouts r JOIN attempts a ON a.id = r.latest_attempt_id
      WHERE r.status IN ('preparing', 'running') AND a.status NOT IN ('preparing', 'running')`).all() as Row[];
    for (const r of stuck) {
      const next = rolloutStatusAfter({ config: JSON.parse(r.config), attemptCount: r.attempt_count }, r.a_status);
      this.setRolloutStatus(r, next, now);
      if (next === 'requeuing') result.requeued.push(r.id);
      if (next === 'failed') result.failed.push(r.id);
    }
    return result;
  }
}
