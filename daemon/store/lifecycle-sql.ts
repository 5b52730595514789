/**
 * What both lifecycles (sqlite-lifecycle.ts, postgres-lifecycle.ts) run as written: the health check's two reads,
 * the single-row changes of an attempt or a rollout, and common.ts's rules applied to rows as they are read. The
 * statements have `?` placeholders (PostgreSQL numbers them: common.ts `numbered`); each comment lists the values.
 */
import { TERMINAL_ROLLOUT_STATUSES, type AttemptStatus, type RolloutStatus } from '../../protocol/store.js';
import {
  CLAIMABLE_STATUSES,
  LIVE_ATTEMPT_STATUSES,
  RESUMABLE_ROLLOUT_STATUSES,
  UNENDED_ATTEMPT_STATUSES,
  WAITING_ROLLOUT_STATUSES,
  attemptVerdict,
  isCurrentAttempt,
  rolloutStatusAfter,
  rolloutStatusColumns,
  sqlList,
  verdictError,
  type AttemptLimits,
  type Row,
} from './common.js';

/** common.ts's status lists as SQL lists, for `IN (...)`. */
export const STATUS_SQL = {
  live: sqlList(LIVE_ATTEMPT_STATUSES),
  claimable: sqlList(CLAIMABLE_STATUSES),
  resumable: sqlList(RESUMABLE_ROLLOUT_STATUSES),
  waiting: sqlList(WAITING_ROLLOUT_STATUSES),
  unended: sqlList(UNENDED_ATTEMPT_STATUSES),
  terminal: sqlList(TERMINAL_ROLLOUT_STATUSES),
} as const;

/** The statements; each comment lists the values they take, in order. */
export const LIFECYCLE_SQL = {
  /** Attempts under way, with their rollout's limits (`r_config`). */
  liveAttempts: `SELECT a.*, r.config AS r_config FROM attempts a JOIN rollouts r ON r.id = a.rollout_id WHERE a.status IN (${STATUS_SQL.live})`,
  /** Rollouts waiting on a latest attempt that has already ended (`a_status`): the health check's safety net. */
  stuckRollouts: `SELECT r.*, a.status AS a_status FROM rollouts r JOIN attempts a ON a.id = r.latest_attempt_id
  WHERE r.status IN (${STATUS_SQL.waiting}) AND a.status NOT IN (${STATUS_SQL.live})`,
  /** An attempt ends: status, end time, error (JSON text or null), id. */
  endAttempt: 'UPDATE attempts SET status = ?, ended_at = ?, error = ? WHERE id = ?',
  /** A cancel ends its rollout's latest attempt unless it has ended: end time, error, id. */
  cancelAttempt: `UPDATE attempts SET status = 'failed', ended_at = ?, error = ? WHERE id = ? AND status IN (${STATUS_SQL.unended})`,
  /** A heartbeat or span's liveness (common.ts livenessChange): status, heartbeat time, revived (true: not ended any more), id. */
  touchAttempt: 'UPDATE attempts SET status = ?, last_heartbeat = ?, ended_at = CASE WHEN ? THEN NULL ELSE ended_at END WHERE id = ?',
  /** A rollout's status change (common.ts rolloutStatusColumns): `rolloutStatusValues`. */
  setRolloutStatus: 'UPDATE rollouts SET status = ?, updated_at = ?, ended_at = ?, queued_at = COALESCE(?, queued_at) WHERE id = ?',
} as const;

/** The values of LIFECYCLE_SQL.setRolloutStatus. */
export function rolloutStatusValues(id: string, status: RolloutStatus, now: number): unknown[] {
  const c = rolloutStatusColumns(status, now);
  return [c.status, c.updatedAt, c.endedAt, c.queuedAt, id];
}

// --- the rules on rows --------------------------------------------------------------------------------------------
/** The attempt row `a` is the one its rollout row `r` waits on (common.ts isCurrentAttempt). */
export const isCurrentRow = (a: Row, r: Row): boolean => isCurrentAttempt(a.id, { latestAttemptId: r.latest_attempt_id, status: r.status });

/** The health check's verdict on an attempt row under `limits` at `now` (common.ts attemptVerdict), with the error it records. */
export function rowVerdict(a: Row, limits: AttemptLimits, now: number): { verdict: 'timeout' | 'unresponsive'; error: { message: string } } | null {
  const times = { status: a.status, startedAt: Number(a.started_at), lastHeartbeat: Number(a.last_heartbeat) };
  const verdict = attemptVerdict(times, limits, now);
  return verdict ? { verdict, error: verdictError(verdict, limits) } : null;
}

/** What becomes of the rollout row `r` when its latest attempt ends with `status` (common.ts rolloutStatusAfter). */
export const statusAfterRow = (r: Row, status: AttemptStatus): RolloutStatus =>
  rolloutStatusAfter({ config: JSON.parse(r.config), attemptCount: Number(r.attempt_count) }, status);
