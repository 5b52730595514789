/**
 * The rollout/attempt state machine on PostgreSQL: the same methods as sqlite-lifecycle.ts, deciding with
 * the same rules (common.ts), each in its own transaction. Concurrency rule: every change to an attempt
 * first locks its rollout row (FOR UPDATE), so claims, spans, heartbeats, finishes and health checks from
 * any number of daemons serialise per rollout and never deadlock on lock order (span ticks lock their
 * rollouts sorted by id). Claims pick with SELECT ... FOR UPDATE SKIP LOCKED in one statement.
 */
import type pg from 'pg';
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
  WAITING_ROLLOUT_STATUSES,
  cancelConflict,
  emptyHealthResult,
  finishConflict,
  idTime,
  isLiveAttempt,
  livenessChange,
  materializeSpan,
  newId,
  numbered,
  type ParsedRollout,
  rowToAttempt,
  rowToRollout,
  tallyHealthChange,
  type Row,
} from './common.js';
import { digestSpans } from './search.js';
import { INSERT_TEXT_SQL, applySpanDigests, inputBodies } from './postgres-search.js';
import { RESET_SUMMARY_SQL } from './schema.js';
import { LIFECYCLE_SQL, STATUS_SQL, isCurrentRow, rolloutStatusValues, rowVerdict, statusAfterRow } from './lifecycle-sql.js';

type Client = pg.PoolClient;
type Query = (sql: string, params?: unknown[]) => Promise<pg.QueryResult<Row>>;
/** Runs `fn` in a transaction (retried on serialization failures and deadlocks). */
export type Tx = <T>(fn: (c: Client) => Promise<T>) => Promise<T>;

async function one(c: Client, sql: string, params: unknown[]): Promise<Row | undefined> {
  return (await c.query(sql, params)).rows[0];
}

/** Locks the rollout an attempt belongs to, then reads both (fresh, under the lock). */
async function lockAttempt(c: Client, attemptId: string): Promise<{ a: Row; r: Row }> {
  const ref = await one(c, 'SELECT rollout_id FROM attempts WHERE id = $1', [attemptId]);
  if (!ref) throw new NotFoundError('attempt', attemptId);
  const r = (await one(c, 'SELECT * FROM rollouts WHERE id = $1 FOR UPDATE', [ref.rollout_id]))!;
  const a = (await one(c, 'SELECT * FROM attempts WHERE id = $1', [attemptId]))!;
  return { a, r };
}

async function setRolloutStatus(c: Client, id: string, status: RolloutStatus, now: number): Promise<void> {
  await c.query(numbered(LIFECYCLE_SQL.setRolloutStatus), rolloutStatusValues(id, status, now));
}

/** Ends an attempt with `status` and moves its rollout on (when it is the attempt the rollout waits on). */
async function endAttempt(c: Client, a: Row, r: Row, status: AttemptStatus, error: unknown, now: number): Promise<RolloutStatus | null> {
  await c.query(numbered(LIFECYCLE_SQL.endAttempt), [status, now, error ? JSON.stringify(error) : null, a.id]);
  if (!isCurrentRow(a, r)) return null;
  const next = statusAfterRow(r, status);
  await setRolloutStatus(c, r.id, next, now);
  return next;
}

export class PostgresLifecycle {
  constructor(
    private readonly query: Query,
    private readonly tx: Tx,
  ) {}

  async enqueue(parsed: ParsedRollout[], now: number): Promise<Rollout[]> {
    const wanted = [...new Set(parsed.map((p) => p.resourcesId).filter((x): x is string => x !== null))];
    const versions = new Map<string, number>();
    if (wanted.length) for (const r of (await this.query('SELECT id, version FROM resources WHERE id = ANY($1)', [wanted])).rows) versions.set(r.id, r.version);
    for (const id of wanted) if (!versions.has(id)) throw new NotFoundError('resources', id);
    const rollouts: Rollout[] = parsed.map((p) => ({
      id: newId('ro'),
      input: p.input ?? null,
      mode: p.mode,
      status: 'queuing',
      agent: p.agent,
      resourcesId: p.resourcesId,
      config: p.config,
      metadata: p.metadata,
      attemptCount: 0,
      createdAt: now,
      updatedAt: now,
      endedAt: null,
    }));
    for (let i = 0; i < rollouts.length; i += 2000) {
      const chunk = rollouts.slice(i, i + 2000);
      // One statement: the rollouts and their search text commit together.
      await this.query(
        `WITH ins AS (INSERT INTO rollouts (id, input, mode, status, agent, resources_id, resources_version, config, metadata, queued_at, created_at, updated_at)
        SELECT id, input, mode, 'queuing', agent, rid, rv, config, metadata, $8, $8, $8
        FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $9::text[])
          WITH ORDINALITY AS t(id, input, mode, agent, rid, rv, config, metadata, ord) ORDER BY ord)
        ${INSERT_TEXT_SQL('$1', '$10')}`,
        [
          chunk.map((r) => r.id),
          chunk.map((r) => JSON.stringify(r.input)),
          chunk.map((r) => r.mode),
          chunk.map((r) => r.agent),
          chunk.map((r) => r.resourcesId),
          chunk.map((r) => (r.resourcesId ? versions.get(r.resourcesId)! : null)),
          chunk.map((r) => JSON.stringify(r.config)),
          now,
          chunk.map((r) => JSON.stringify(r.metadata)),
          inputBodies(chunk.map((r) => r.input)),
        ],
      );
    }
    return rollouts;
  }

  /** Inserts a rollout and claims it at once (its first attempt starts `preparing`). */
  start(p: ParsedRollout, workerId: string | null, now: number): Promise<Claim> {
    return this.tx(async (c) => {
      const res =
        p.resourcesId === null
          ? await one(c, 'SELECT id, version FROM resources ORDER BY version DESC LIMIT 1', [])
          : await one(c, 'SELECT id, version FROM resources WHERE id = $1', [p.resourcesId]);
      if (p.resourcesId !== null && !res) throw new NotFoundError('resources', p.resourcesId);
      const rollout: Rollout = {
        id: newId('ro'),
        input: p.input ?? null,
        mode: p.mode,
        status: 'preparing',
        agent: p.agent,
        resourcesId: res?.id ?? null,
        config: p.config,
        metadata: p.metadata,
        attemptCount: 1,
        createdAt: now,
        updatedAt: now,
        endedAt: null,
      };
      const attempt: Attempt = {
        id: newId('at'),
        rolloutId: rollout.id,
        sequence: 1,
        workerId,
        status: 'preparing',
        startedAt: now,
        endedAt: null,
        lastHeartbeat: now,
        error: null,
      };
      await c.query(
        `INSERT INTO rollouts (id, input, mode, status, agent, resources_id, resources_version, config, metadata,
        attempt_count, latest_attempt_id, queued_at, created_at, updated_at) VALUES ($1, $2, $3, $11, $4, $5, $6, $7, $8, 1, $9, $10, $10, $10)`,
        [
          rollout.id,
          JSON.stringify(rollout.input),
          p.mode,
          p.agent,
          rollout.resourcesId,
          res?.version ?? null,
          JSON.stringify(p.config),
          JSON.stringify(p.metadata),
          attempt.id,
          now,
          rollout.status,
        ],
      );
      await c.query(
        `INSERT INTO attempts (id, rollout_id, sequence, worker_id, status, started_at, last_heartbeat)
        VALUES ($1, $2, 1, $3, $5, $4, $4)`,
        [attempt.id, rollout.id, attempt.workerId, now, attempt.status],
      );
      await c.query(INSERT_TEXT_SQL('$1', '$2'), [[rollout.id], inputBodies([rollout.input])]);
      return { rollout, attempt };
    });
  }

  /**
   * One statement: pick the oldest claimable (skipping rows other claimers hold), start attempts, fill in latest
   * resources. Attempt ids are made in SQL in newId's form (common.ts): the time, then 64 random bits.
   */
  async claim(workerId: string, limit: number, opts: ClaimOptions, now: number): Promise<Claim[]> {
    const params: unknown[] = [limit, now, workerId, idTime(now)];
    let filter = '';
    if (opts.agent !== undefined) {
      params.push(opts.agent);
      filter += ` AND (agent IS NULL OR agent = $${params.length})`;
    }
    if (opts.mode !== undefined) {
      params.push(opts.mode);
      filter += ` AND mode = $${params.length}`;
    }
    const { rows } = await this.query(
      `
      WITH picked AS (
        SELECT seq FROM rollouts WHERE status IN (${STATUS_SQL.claimable})${filter}
        ORDER BY queued_at, seq LIMIT $1 FOR UPDATE SKIP LOCKED
      ), latest AS (SELECT id, version FROM resources ORDER BY version DESC LIMIT 1),
      upd AS (
        UPDATE rollouts r SET status = 'preparing', attempt_count = r.attempt_count + 1, updated_at = $2, ${RESET_SUMMARY_SQL},
          latest_attempt_id = 'at-' || $4 || substr(md5(random()::text || clock_timestamp()::text || r.id), 1, 16),
          resources_id = COALESCE(r.resources_id, (SELECT id FROM latest)),
          resources_version = CASE WHEN r.resources_id IS NULL THEN (SELECT version FROM latest) ELSE r.resources_version END
        FROM picked WHERE r.seq = picked.seq RETURNING r.*
      ), ins AS (
        INSERT INTO attempts (id, rollout_id, sequence, worker_id, status, started_at, ended_at, last_heartbeat, error)
        SELECT latest_attempt_id, id, attempt_count, $3, 'preparing', $2, NULL, $2, NULL FROM upd
      )
      SELECT * FROM upd ORDER BY queued_at, seq`,
      params,
    );
    return rows.map((r) => ({
      rollout: rowToRollout(r),
      attempt: {
        id: r.latest_attempt_id,
        rolloutId: r.id,
        sequence: r.attempt_count,
        workerId,
        status: 'preparing',
        startedAt: now,
        endedAt: null,
        lastHeartbeat: now,
        error: null,
      },
    }));
  }

  /** Liveness from a heartbeat: common.ts livenessChange (spans change liveness in insertSpans, in bulk). */
  heartbeat(attemptId: string, now: number): Promise<Attempt> {
    return this.tx(async (c) => {
      const { a, r } = await lockAttempt(c, attemptId);
      const change = livenessChange(a.status, isCurrentRow(a, r), false);
      if (!change) return rowToAttempt(a);
      await c.query(numbered(LIFECYCLE_SQL.touchAttempt), [change.status, now, change.revived, a.id]);
      if (change.rolloutRuns) await c.query(`UPDATE rollouts SET status = 'running', updated_at = $1, ended_at = NULL WHERE id = $2`, [now, r.id]);
      return rowToAttempt({ ...a, status: change.status, last_heartbeat: now, ended_at: change.revived ? null : a.ended_at });
    });
  }

  finish(attemptId: string, input: FinishAttemptInput, now: number): Promise<{ attempt: Attempt; rollout: Rollout }> {
    return this.tx(async (c) => {
      const { a, r } = await lockAttempt(c, attemptId);
      const conflict = finishConflict(attemptId, a.status, isCurrentRow(a, r));
      if (conflict) throw new ConflictError(conflict);
      await endAttempt(c, a, r, input.status, input.error ?? null, now);
      const attempt = rowToAttempt((await one(c, 'SELECT * FROM attempts WHERE id = $1', [attemptId]))!);
      const rollout = rowToRollout((await one(c, 'SELECT * FROM rollouts WHERE id = $1', [r.id]))!);
      return { attempt, rollout };
    });
  }

  cancel(id: string, now: number): Promise<Rollout> {
    return this.tx(async (c) => {
      const r = await one(c, 'SELECT * FROM rollouts WHERE id = $1 FOR UPDATE', [id]);
      if (!r) throw new NotFoundError('rollout', id);
      const conflict = cancelConflict(id, r.status);
      if (conflict) throw new ConflictError(conflict);
      if (r.latest_attempt_id) {
        await c.query(numbered(LIFECYCLE_SQL.cancelAttempt), [now, JSON.stringify(CANCELLED_ATTEMPT_ERROR), r.latest_attempt_id]);
      }
      await setRolloutStatus(c, id, 'cancelled', now);
      return rowToRollout((await one(c, 'SELECT * FROM rollouts WHERE id = $1', [id]))!);
    });
  }

  /**
   * One group commit of a turn's span batches: validates every caller's batch (rollout exists, attempt belongs
   * to it), then for the valid ones allocates sequence ids, refreshes liveness (livenessChange, as SQL over all
   * touched attempts at once) and inserts all spans with one multi-row INSERT. Returns per batch either its
   * spans or the error that rejects it alone.
   */
  insertSpans(batches: SpanInput[][], now: number): Promise<Array<Span[] | Error>> {
    return this.tx((c) => insertSpanBatches(c, batches, now));
  }

  /** Timeouts, unresponsiveness and the stuck-rollout safety net; each change in its own short transaction. */
  async healthCheck(now: number): Promise<HealthCheckResult> {
    const result = emptyHealthResult();
    const live = (await this.query(LIFECYCLE_SQL.liveAttempts)).rows;
    for (const cand of live.filter((a) => rowVerdict(a, JSON.parse(a.r_config), now) !== null)) {
      await this.tx(async (c) => {
        // SKIP LOCKED: another daemon (or a writer) holds this rollout right now; the next check will see it.
        const r = await one(c, 'SELECT * FROM rollouts WHERE id = $1 FOR UPDATE SKIP LOCKED', [cand.rollout_id]);
        if (!r) return;
        const a = (await one(c, 'SELECT * FROM attempts WHERE id = $1', [cand.id]))!;
        const found = rowVerdict(a, JSON.parse(r.config), now);
        if (!found) return;
        const next = await endAttempt(c, a, r, found.verdict, found.error, now);
        tallyHealthChange(result, { attemptId: a.id, verdict: found.verdict, rolloutId: r.id, next });
      });
    }
    const stuck = (await this.query(LIFECYCLE_SQL.stuckRollouts)).rows;
    for (const { id } of stuck) {
      await this.tx(async (c) => {
        const r = await one(c, 'SELECT * FROM rollouts WHERE id = $1 FOR UPDATE SKIP LOCKED', [id]);
        if (!r || !(WAITING_ROLLOUT_STATUSES as readonly string[]).includes(r.status)) return;
        const a = (await one(c, 'SELECT status FROM attempts WHERE id = $1', [r.latest_attempt_id]))!;
        if (isLiveAttempt(a.status)) return;
        const next = statusAfterRow(r, a.status);
        await setRolloutStatus(c, id, next, now);
        tallyHealthChange(result, { rolloutId: id, next });
      });
    }
    return result;
  }
}

async function insertSpanBatches(c: Client, batches: SpanInput[][], now: number): Promise<Array<Span[] | Error>> {
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
  const allocated = await c.query(
    `UPDATE rollouts r SET span_seq = r.span_seq + v.n FROM unnest($1::text[], $2::int[]) AS v(id, n)
    WHERE r.id = v.id RETURNING r.id, r.span_seq`,
    [ids, ids.map((id) => counts.get(id)!)],
  );
  for (const row of allocated.rows) next.set(row.id, row.span_seq - counts.get(row.id)! + 1);

  // livenessChange(status, current, fromSpan = true) for every touched attempt, one statement per case.
  const touched = [...new Set(valid.flat().map((s) => s.attemptId))];
  const statuses = new Set(touched.map((id) => attempts.get(id)!.status));
  if (statuses.has('preparing') || statuses.has('running')) {
    await c.query(`UPDATE attempts SET last_heartbeat = $2, status = 'running' WHERE id = ANY($1) AND status IN (${STATUS_SQL.live})`, [touched, now]);
  }
  if (statuses.has('unresponsive')) {
    await c.query(
      `UPDATE attempts a SET status = 'running', last_heartbeat = $2, ended_at = NULL FROM rollouts r
      WHERE a.id = ANY($1) AND a.status = 'unresponsive' AND r.id = a.rollout_id AND r.latest_attempt_id = a.id
      AND r.status NOT IN (${STATUS_SQL.terminal})`,
      [touched, now],
    );
  }
  if (statuses.has('preparing') || statuses.has('unresponsive')) {
    await c.query(
      `UPDATE rollouts r SET status = 'running', updated_at = $2, ended_at = NULL FROM attempts a
      WHERE a.id = r.latest_attempt_id AND a.id = ANY($1) AND a.status = 'running' AND r.status IN (${STATUS_SQL.resumable})`,
      [touched, now],
    );
  }

  const cols: [string[], number[], string[], string[], string[]] = [[], [], [], [], []];
  batches.forEach((batch, i) => {
    if (outcome[i] instanceof Error) return;
    outcome[i] = batch.map((s) => {
      const seq = next.get(s.rolloutId)!;
      next.set(s.rolloutId, seq + 1);
      const span = materializeSpan(s, seq);
      cols[0].push(span.rolloutId);
      cols[1].push(seq);
      cols[2].push(span.attemptId);
      cols[3].push(span.name);
      cols[4].push(JSON.stringify(span));
      return span;
    });
  });
  await c.query(
    `INSERT INTO spans (rollout_id, sequence_id, attempt_id, name, data)
    SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[])`,
    cols,
  );
  await applySpanDigests(c, [...digestSpans(outcome.flatMap((o) => (o instanceof Error ? [] : o))).values()]);
  return outcome;
}
