/**
 * The rollout/attempt state machine on PostgreSQL, the same rules as sqlite-lifecycle.ts. Concurrency rule:
 * every change to an attempt first locks its rollout row (FOR UPDATE), so claims, spans, heartbeats, finishes
 * and health checks from any number of daemons serialise per rollout and never deadlock on lock order
 * (span ticks lock their rollouts sorted by id).
 */
import type pg from 'pg';
import type { Attempt, AttemptStatus, RolloutStatus, Span, SpanInput } from '../../protocol/store.js';
import { ConflictError, NotFoundError, type FinishAttemptInput, type HealthCheckResult } from './types.js';
import { isTerminalRollout, materializeSpan, rolloutStatusAfter, rowToAttempt, rowToRollout } from './common.js';

type Row = Record<string, any>;
type Client = pg.PoolClient;

async function one(c: Client, sql: string, params: unknown[]): Promise<Row | undefined> { return (await c.query(sql, params)).rows[0]; }

/** Locks the rollout an attempt belongs to, then reads both (fresh, under the lock). */
export async function lockAttempt(c: Client, attemptId: string): Promise<{ a: Row; r: Row }> {
  const ref = await one(c, 'SELECT rollout_id FROM attempts WHERE id = $1', [attemptId]);
  if (!ref) throw new NotFoundError('attempt', attemptId);
  const r = (await one(c, 'SELECT * FROM rollouts WHERE id = $1 FOR UPDATE', [ref.rollout_id]))!;
  const a = (await one(c, 'SELECT * FROM attempts WHERE id = $1', [attemptId]))!;
  return { a, r };
}

const isCurrent = (a: Row, r: Row) => r.latest_attempt_id === a.id && !isTerminalRollout(r.status);

async function setRolloutStatus(c: Client, id: string, status: RolloutStatus, now: number): Promise<void> {
  if (status === 'requeuing') {
    await c.query('UPDATE rollouts SET status = $1, updated_at = $2, ended_at = NULL, queued_at = $2 WHERE id = $3', [status, now, id]);
  } else {
    await c.query('UPDATE rollouts SET status = $1, updated_at = $2, ended_at = $3 WHERE id = $4', [status, now, isTerminalRollout(status) ? now : null, id]);
  }
}

export async function heartbeat(c: Client, attemptId: string, now: number): Promise<Attempt> {
  const { a, r } = await lockAttempt(c, attemptId);
  if (a.status === 'unresponsive') {
    if (!isCurrent(a, r)) return rowToAttempt(a);
    await c.query(`UPDATE attempts SET status = 'running', last_heartbeat = $1, ended_at = NULL WHERE id = $2`, [now, a.id]);
    await c.query(`UPDATE rollouts SET status = 'running', updated_at = $1, ended_at = NULL WHERE id = $2`, [now, r.id]);
    return rowToAttempt({ ...a, status: 'running', last_heartbeat: now, ended_at: null });
  }
  if (a.status !== 'preparing' && a.status !== 'running') return rowToAttempt(a);
  await c.query('UPDATE attempts SET last_heartbeat = $1 WHERE id = $2', [now, a.id]);
  return rowToAttempt({ ...a, last_heartbeat: now });
}

async function endAttempt(c: Client, a: Row, r: Row, status: AttemptStatus, error: unknown, now: number): Promise<RolloutStatus | null> {
  await c.query('UPDATE attempts SET status = $1, ended_at = $2, error = $3 WHERE id = $4', [status, now, error ? JSON.stringify(error) : null, a.id]);
  if (!isCurrent(a, r)) return null;
  const next = rolloutStatusAfter({ config: JSON.parse(r.config), attemptCount: r.attempt_count }, status);
  await setRolloutStatus(c, r.id, next, now);
  return next;
}

export async function finish(c: Client, attemptId: string, input: FinishAttemptInput, now: number) {
  const { a, r } = await lockAttempt(c, attemptId);
  if (a.status !== 'preparing' && a.status !== 'running' && !(a.status === 'unresponsive' && isCurrent(a, r))) {
    throw new ConflictError(`attempt '${attemptId}' already ended with status '${a.status}'`);
  }
  await endAttempt(c, a, r, input.status, input.error ?? null, now);
  const attempt = rowToAttempt((await one(c, 'SELECT * FROM attempts WHERE id = $1', [attemptId]))!);
  const rollout = rowToRollout((await one(c, 'SELECT * FROM rollouts WHERE id = $1', [r.id]))!);
  return { attempt, rollout };
}

export async function cancel(c: Client, id: string, now: number) {
  const r = await one(c, 'SELECT * FROM rollouts WHERE id = $1 FOR UPDATE', [id]);
  if (!r) throw new NotFoundError('rollout', id);
  if (isTerminalRollout(r.status)) throw new ConflictError(`rollout '${id}' already ended with status '${r.status}'`);
  if (r.latest_attempt_id) {
    await c.query(`UPDATE attempts SET status = 'failed', ended_at = $1, error = $2 WHERE id = $3 AND status IN ('preparing', 'running', 'unresponsive')`,
      [now, JSON.stringify({ message: 'rollout cancelled' }), r.latest_attempt_id]);
  }
  await setRolloutStatus(c, id, 'cancelled', now);
  return rowToRollout((await one(c, 'SELECT * FROM rollouts WHERE id = $1', [id]))!);
}

/**
 * One group commit: validates every caller's batch (rollout exists, attempt belongs to it), then for the
 * valid ones allocates sequence ids, refreshes liveness and inserts all spans with one multi-row INSERT.
 * Returns per batch either its spans or the error that rejects it alone.
 */
export async function insertSpanTick(c: Client, batches: SpanInput[][], now: number): Promise<Array<Span[] | Error>> {
  const rolloutIds = [...new Set(batches.flat().map((s) => s.rolloutId))].sort();
  const attemptIds = [...new Set(batches.flat().map((s) => s.attemptId))];
  const locked = new Set((await c.query('SELECT id FROM rollouts WHERE id = ANY($1) ORDER BY id FOR UPDATE', [rolloutIds])).rows.map((r) => r.id));
  const attempts = new Map<string, Row>();
  for (const a of (await c.query('SELECT id, rollout_id, status FROM attempts WHERE id = ANY($1)', [attemptIds])).rows) attempts.set(a.id, a);
  const outcome: Array<Span[] | Error> = batches.map((batch) => {
    for (const s of batch) {
      if (!locked.has(s.rolloutId)) return new NotFoundError('rollout', s.rolloutId);
      if (attempts.get(s.attemptId)?.rollout_id !== s.rolloutId) return new NotFoundError('attempt', `${s.attemptId}' of rollout '${s.rolloutId}`);
    }
    return [];
  });
  const valid = batches.filter((_, i) => !(outcome[i] instanceof Error));
  if (valid.length === 0) return outcome;

  const counts = new Map<string, number>();
  for (const s of valid.flat()) counts.set(s.rolloutId, (counts.get(s.rolloutId) ?? 0) + 1);
  const ids = [...counts.keys()];
  const next = new Map<string, number>();
  const allocated = await c.query(`UPDATE rollouts r SET span_seq = r.span_seq + v.n FROM unnest($1::text[], $2::int[]) AS v(id, n)
    WHERE r.id = v.id RETURNING r.id, r.span_seq`, [ids, ids.map((id) => counts.get(id)!)]);
  for (const row of allocated.rows) next.set(row.id, row.span_seq - counts.get(row.id)! + 1);

  const touched = [...new Set(valid.flat().map((s) => s.attemptId))];
  const statuses = new Set(touched.map((id) => attempts.get(id)!.status));
  if (statuses.has('preparing') || statuses.has('running')) {
    await c.query(`UPDATE attempts SET last_heartbeat = $2, status = 'running' WHERE id = ANY($1) AND status IN ('preparing', 'running')`, [touched, now]);
  }
  if (statuses.has('unresponsive')) {
    await c.query(`UPDATE attempts a SET status = 'running', last_heartbeat = $2, ended_at = NULL FROM rollouts r
      WHERE a.id = ANY($1) AND a.status = 'unresponsive' AND r.id = a.rollout_id AND r.latest_attempt_id = a.id
      AND r.status IN ('preparing', 'running', 'requeuing')`, [touched, now]);
  }
  if (statuses.has('preparing') || statuses.has('unresponsive')) {
    await c.query(`UPDATE rollouts r SET status = 'running', updated_at = $2, ended_at = NULL FROM attempts a
      WHERE a.id = r.latest_attempt_id AND a.id = ANY($1) AND a.status = 'running' AND r.status IN ('preparing', 'requeuing')`, [touched, now]);
  }

  const cols: [string[], number[], string[], string[], string[]] = [[], [], [], [], []];
  batches.forEach((batch, i) => {
    if (outcome[i] instanceof Error) return;
    outcome[i] = batch.map((s) => {
      const seq = next.get(s.rolloutId)!;
      next.set(s.rolloutId, seq + 1);
      const span = materializeSpan(s, seq);
      cols[0].push(span.rolloutId); cols[1].push(seq); cols[2].push(span.attemptId); cols[3].push(span.name); cols[4].push(JSON.stringify(span));
      return span;
    });
  });
  await c.query(`INSERT INTO spans (rollout_id, sequence_id, attempt_id, name, data)
    SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[])`, cols);
  return outcome;
}

type Tx = <T>(fn: (c: Client) => Promise<T>) => Promise<T>;

/** Timeouts, unresponsiveness and the stuck-rollout safety net; each change in its own short transaction. */
export async function healthCheck(pool: pg.Pool, tx: Tx, now: number): Promise<HealthCheckResult> {
  const result: HealthCheckResult = { timedOut: [], unresponsive: [], requeued: [], failed: [] };
  const verdict = (a: Row, config: string): AttemptStatus | null => {
    const cfg = JSON.parse(config);
    if (a.status !== 'preparing' && a.status !== 'running') return null;
    if (cfg.timeoutSeconds !== null && now - a.started_at > cfg.timeoutSeconds * 1000) return 'timeout';
    if (cfg.unresponsiveSeconds !== null && now - a.last_heartbeat > cfg.unresponsiveSeconds * 1000) return 'unresponsive';
    return null;
  };
  const live = (await pool.query(`SELECT a.*, r.config AS r_config FROM attempts a JOIN rollouts r ON r.id = a.rollout_id
    WHERE a.status IN ('preparing', 'running')`)).rows;
  for (const cand of live.filter((a) => verdict(a, a.r_config) !== null)) {
    await tx(async (c) => {
      // SKIP LOCKED: another daemon (or a writer) holds this rollout right now; the next check will see it.
      const r = await one(c, 'SELECT * FROM rollouts WHERE id = $1 FOR UPDATE SKIP LOCKED', [cand.rollout_id]);
      if (!r) return;
      const a = (await one(c, 'SELECT * FROM attempts WHERE id = $1', [cand.id]))!;
      const status = verdict(a, r.config);
      if (!status) return;
      (status === 'timeout' ? result.timedOut : result.unresponsive).push(a.id);
      const cfg = JSON.parse(r.config);
      const message = status === 'timeout' ? `attempt exceeded timeoutSeconds=${cfg.timeoutSeconds}` : `no heartbeat or span for unresponsiveSeconds=${cfg.unresponsiveSeconds}`;
      const next = await endAttempt(c, a, r, status, { message }, now);
      if (next === 'requeuing') result.requeued.push(r.id);
      if (next === 'failed') result.failed.push(r.id);
    });
  }
  const stuck = (await pool.query(`SELECT r.id FROM rollouts r JOIN attempts a ON a.id = r.latest_attempt_id
    WHERE r.status IN ('preparing', 'running') AND a.status NOT IN ('preparing', 'running')`)).rows;
  for (const { id } of stuck) {
    await tx(async (c) => {
      const r = await one(c, 'SELECT * FROM rollouts WHERE id = $1 FOR UPDATE SKIP LOCKED', [id]);
      if (!r || (r.status !== 'preparing' && r.status !== 'running')) return;
      const a = (await one(c, 'SELECT status FROM attempts WHERE id = $1', [r.latest_attempt_id]))!;
      if (a.status === 'preparing' || a.status === 'running') return;
      const next = rolloutStatusAfter({ config: JSON.parse(r.config), attemptCount: r.attempt_count }, a.status);
      await setRolloutStatus(c, id, next, now);
      if (next === 'requeuing') result.requeued.push(id);
      if (next === 'failed') result.failed.push(id);
    });
  }
  return result;
}
