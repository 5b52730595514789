/**
 * Backend-independent pieces of the LightningStore: id generation, input normalisation (defaults applied
 * without a zod pass on the hot span path), row <-> object mapping shared by SQLite and PostgreSQL (both use
 * the same column names), the rules of the rollout/attempt state machine both lifecycles decide with (status
 * lists, health-check verdicts, liveness, conflicts and their messages), paging cursors, and the in-process
 * wakeups behind waitForRollouts.
 */
import {
  RolloutConfig,
  RolloutInput,
  TERMINAL_ROLLOUT_STATUSES,
  withSpanDefaults,
  type Attempt,
  type AttemptStatus,
  type MetricPoint,
  type Resources,
  type Rollout,
  type RolloutStatus,
  type Span,
  type SpanInput,
  type TrainingRun,
  type Transition,
  type Worker,
} from '../../protocol/store.js';
import { newSpanId, newTraceId, randomHex } from '../../protocol/ids.js';
import type { HealthCheckResult, TrainingRunPatch } from '../../protocol/lightning-store.js';

/**
 * Store ids: the creation time (ms, 12 hex digits) then 64 random bits. Time first makes ids made together
 * sort together, so the indexes keyed by them (rollouts, attempts, spans by rollout) grow at their right
 * edge instead of at random pages: a commit dirties a few pages, not one per row.
 */
export function newId(prefix: string): string {
  return `${prefix}-${idTime(Date.now())}${randomHex(8)}`;
}
/** The time part of an id made at `ms` (12 hex digits). */
export function idTime(ms: number): string {
  return Math.floor(ms).toString(16).padStart(12, '0');
}

const TERMINAL = new Set<string>(TERMINAL_ROLLOUT_STATUSES);
export function isTerminalRollout(status: string): boolean {
  return TERMINAL.has(status);
}

// --- the state machine's rules ---------------------------------------------------------------------
// Both lifecycles (sqlite-lifecycle.ts, postgres-lifecycle.ts) decide with these; only their SQL differs.
// The status lists go into SQL through sqlList (our constants, never input).

/** Rollout statuses a claim picks from. */
export const CLAIMABLE_STATUSES = ['queuing', 'requeuing'] as const satisfies readonly RolloutStatus[];
/** Attempt statuses of an attempt under way: the health check watches these. */
export const LIVE_ATTEMPT_STATUSES = ['preparing', 'running'] as const satisfies readonly AttemptStatus[];
/** Attempt statuses cancelling a rollout still ends (an unresponsive attempt could come back). */
export const UNENDED_ATTEMPT_STATUSES = ['preparing', 'running', 'unresponsive'] as const satisfies readonly AttemptStatus[];
/** Rollout statuses while it waits on its latest attempt (the health check's safety net looks at these). */
export const WAITING_ROLLOUT_STATUSES = ['preparing', 'running'] as const satisfies readonly RolloutStatus[];
/** Rollout statuses that become `running` when their latest attempt runs: its first span, or its revival
 *  (a requeued rollout its revived attempt takes back from the queue). */
export const RESUMABLE_ROLLOUT_STATUSES = ['preparing', 'requeuing'] as const satisfies readonly RolloutStatus[];

/** `'a','b'`: a status list for an SQL `IN (...)`. */
export function sqlList(statuses: readonly string[]): string {
  return statuses.map((s) => `'${s}'`).join(', ');
}

const numberedCache = new Map<string, string>();
/**
 * `?` placeholders numbered `$1, $2, ...` (PostgreSQL's): the statements both backends share (sql-store.ts,
 * lifecycle-sql.ts) are written with `?` and hold no other `?`.
 */
export function numbered(sql: string): string {
  let out = numberedCache.get(sql);
  if (out === undefined) {
    let n = 0;
    numberedCache.set(sql, (out = sql.replace(/\?/g, () => `$${++n}`)));
  }
  return out;
}

export function isLiveAttempt(status: string): boolean {
  return (LIVE_ATTEMPT_STATUSES as readonly string[]).includes(status);
}

/** The attempt is still the one its rollout waits on: its latest, and the rollout has not ended. */
export function isCurrentAttempt(attemptId: string, rollout: { latestAttemptId: string | null; status: string }): boolean {
  return rollout.latestAttemptId === attemptId && !isTerminalRollout(rollout.status);
}

export interface AttemptTimes {
  status: string;
  startedAt: number;
  lastHeartbeat: number;
}
export interface AttemptLimits {
  timeoutSeconds: number | null;
  unresponsiveSeconds: number | null;
}

/** The health check's verdict on an attempt at `now`: `timeout` before `unresponsive`; null when neither. */
export function attemptVerdict(a: AttemptTimes, limits: AttemptLimits, now: number): 'timeout' | 'unresponsive' | null {
  if (!isLiveAttempt(a.status)) return null;
  if (limits.timeoutSeconds !== null && now - a.startedAt > limits.timeoutSeconds * 1000) return 'timeout';
  if (limits.unresponsiveSeconds !== null && now - a.lastHeartbeat > limits.unresponsiveSeconds * 1000) return 'unresponsive';
  return null;
}

/** The error an attempt ended by the health check records. */
export function verdictError(verdict: 'timeout' | 'unresponsive', limits: AttemptLimits): { message: string } {
  return {
    message:
      verdict === 'timeout'
        ? `attempt exceeded timeoutSeconds=${limits.timeoutSeconds}`
        : `no heartbeat or span for unresponsiveSeconds=${limits.unresponsiveSeconds}`,
  };
}

/**
 * What a heartbeat (or a span, `fromSpan`) does to an attempt: null when nothing changes (it has ended, or
 * it is unresponsive and its rollout has moved on), else its status afterwards, whether that revived it, and
 * whether its rollout moves to `running` (first span, or revival).
 */
export function livenessChange(
  status: AttemptStatus,
  current: boolean,
  fromSpan: boolean,
): { status: AttemptStatus; revived: boolean; rolloutRuns: boolean } | null {
  if (status === 'unresponsive') return current ? { status: 'running', revived: true, rolloutRuns: true } : null;
  if (!isLiveAttempt(status)) return null; // ended: spans are still kept, nothing else changes
  if (status === 'preparing' && fromSpan) return { status: 'running', revived: false, rolloutRuns: true };
  return { status, revived: false, rolloutRuns: false };
}

/** Why an attempt cannot be finished, or null when it can (under way, or unresponsive but still current). */
export function finishConflict(attemptId: string, status: AttemptStatus, current: boolean): string | null {
  if (isLiveAttempt(status) || (status === 'unresponsive' && current)) return null;
  return `attempt '${attemptId}' already ended with status '${status}'`;
}

/** Callers end attempts `succeeded` or `failed` (the other endings are the health check's): throws otherwise. */
export function checkFinishInput(input: { status: string }): void {
  if (input.status !== 'succeeded' && input.status !== 'failed') throw new TypeError(`status must be 'succeeded' or 'failed', got '${input.status}'`);
}

/** Why a rollout cannot be cancelled, or null when it can. */
export function cancelConflict(rolloutId: string, status: string): string | null {
  return isTerminalRollout(status) ? `rollout '${rolloutId}' already ended with status '${status}'` : null;
}

/** The error of the attempt a cancel ends. */
export const CANCELLED_ATTEMPT_ERROR = { message: 'rollout cancelled' } as const;

/** The columns a rollout status change sets: ended rollouts get their end time, a requeued one goes to the back. */
export function rolloutStatusColumns(
  status: RolloutStatus,
  now: number,
): { status: RolloutStatus; updatedAt: number; endedAt: number | null; queuedAt: number | null } {
  return { status, updatedAt: now, endedAt: isTerminalRollout(status) ? now : null, queuedAt: status === 'requeuing' ? now : null };
}

/** Adds one change the health check made to its result. */
export function tallyHealthChange(
  result: HealthCheckResult,
  change: { attemptId?: string; verdict?: 'timeout' | 'unresponsive'; rolloutId: string; next: RolloutStatus | null },
): void {
  if (change.verdict && change.attemptId) (change.verdict === 'timeout' ? result.timedOut : result.unresponsive).push(change.attemptId);
  if (change.next === 'requeuing') result.requeued.push(change.rolloutId);
  if (change.next === 'failed') result.failed.push(change.rolloutId);
}

export function emptyHealthResult(): HealthCheckResult {
  return { timedOut: [], unresponsive: [], requeued: [], failed: [] };
}

/** What becomes of a rollout when its latest attempt ends with `status`. */
export function rolloutStatusAfter(rollout: Pick<Rollout, 'config' | 'attemptCount'>, status: AttemptStatus): RolloutStatus {
  if (status === 'succeeded') return 'succeeded';
  const retry = (rollout.config.retryOn as string[]).includes(status) && rollout.attemptCount < rollout.config.maxAttempts;
  return retry ? 'requeuing' : 'failed';
}

/** A validated, defaulted rollout input. */
export function parseRolloutInput(input: RolloutInput) {
  const parsed = RolloutInput.parse(input);
  return { ...parsed, config: RolloutConfig.parse(parsed.config) };
}
export type ParsedRollout = ReturnType<typeof parseRolloutInput>;

/** Applies SpanInput's defaults (trusting types: the HTTP edge validated them), issues missing ids and a sequence id. */
export function materializeSpan(input: SpanInput, sequenceId: number): Span {
  return { ...withSpanDefaults(input), sequenceId, traceId: input.traceId ?? newTraceId(), spanId: input.spanId ?? newSpanId() };
}

/**
 * A guard against untyped callers (a span without its keys would otherwise reach SQL), not a check of the
 * span's shape: that is done once, at the edge (daemon/server/span-input.ts); in-process writers are typed.
 */
export function checkSpanInput(s: SpanInput): void {
  if (!s || typeof s.rolloutId !== 'string' || typeof s.attemptId !== 'string') throw new TypeError('span needs rolloutId and attemptId');
  if (typeof s.name !== 'string' || typeof s.startTime !== 'number') throw new TypeError(`span of rollout '${s.rolloutId}' needs name and startTime`);
}

// --- rows ------------------------------------------------------------------------------------------
// Both backends store JSON as text and times as float milliseconds, so one mapping serves both.
/** A row as the database driver returns it: column values are typed by the schema (common.ts maps them), not by TypeScript. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the one untyped boundary, mapped to typed records right here
export type Row = Record<string, any>;
const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v));
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : num(v));

export function rowToRollout(r: Row): Rollout {
  return {
    id: r.id,
    input: JSON.parse(r.input),
    mode: r.mode,
    status: r.status,
    agent: r.agent ?? null,
    resourcesId: r.resources_id ?? null,
    config: JSON.parse(r.config),
    metadata: JSON.parse(r.metadata),
    attemptCount: num(r.attempt_count),
    createdAt: num(r.created_at),
    updatedAt: num(r.updated_at),
    endedAt: numOrNull(r.ended_at),
  };
}
export function rowToAttempt(r: Row): Attempt {
  return {
    id: r.id,
    rolloutId: r.rollout_id,
    sequence: num(r.sequence),
    workerId: r.worker_id ?? null,
    status: r.status,
    startedAt: num(r.started_at),
    endedAt: numOrNull(r.ended_at),
    lastHeartbeat: num(r.last_heartbeat),
    error: r.error ? JSON.parse(r.error) : null,
  };
}
export function rowToSpan(r: Row): Span {
  return JSON.parse(r.data);
}
export function rowToResources(r: Row): Resources {
  return { id: r.id, version: num(r.version), createdAt: num(r.created_at), resources: JSON.parse(r.resources), metadata: JSON.parse(r.metadata) };
}
export function rowToWorker(r: Row): Worker {
  return {
    id: r.id,
    status: r.status,
    lastHeartbeat: num(r.last_heartbeat),
    currentRolloutId: r.current_rollout_id ?? null,
    currentAttemptId: r.current_attempt_id ?? null,
    metadata: JSON.parse(r.metadata),
  };
}
export function rowToTrainingRun(r: Row): TrainingRun {
  return {
    id: r.id,
    agent: r.agent,
    kind: r.kind ?? 'train',
    status: r.status,
    config: JSON.parse(r.config),
    step: num(r.step),
    totalSteps: num(r.total_steps),
    checkpointDir: r.checkpoint_dir ?? null,
    summary: JSON.parse(r.summary),
    createdAt: num(r.created_at),
    updatedAt: num(r.updated_at),
  };
}
/** Longest run label kept (a legend name, not a note). */
export const MAX_RUN_LABEL = 120;

/**
 * A training run after `patch` (protocol/lightning-store.ts TrainingRunPatch): fields given replace the stored ones;
 * a new summary keeps the stored label (`summary.label`, the user's) unless `label` sets or clears it.
 */
export function patchTrainingRun(current: TrainingRun, patch: TrainingRunPatch, now = Date.now()): TrainingRun {
  const { label, ...fields } = patch;
  const next = { ...current, ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)), updatedAt: now } as TrainingRun;
  const kept = label === undefined ? current.summary.label : label === null ? undefined : label.trim().slice(0, MAX_RUN_LABEL) || undefined;
  const { label: _dropped, ...rest } = next.summary;
  next.summary = typeof kept === 'string' ? { ...rest, label: kept } : rest;
  return next;
}
export function rowToMetric(r: Row): MetricPoint {
  return { runId: r.run_id, step: num(r.step), name: r.name, value: num(r.value), time: num(r.time) };
}
export function rowToTransition(r: Row): Transition {
  return JSON.parse(r.data);
}

// --- paging ----------------------------------------------------------------------------------------
export function encodeCursor(seq: number): string {
  return Buffer.from(`s${seq}`).toString('base64url');
}
export function decodeCursor(cursor: string): number {
  const text = Buffer.from(cursor, 'base64url').toString();
  const seq = Number(text.slice(1));
  if (!text.startsWith('s') || !Number.isSafeInteger(seq)) throw new TypeError(`invalid cursor '${cursor}'`);
  return seq;
}
export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 10_000;
export function pageLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_PAGE;
  if (!Number.isInteger(limit) || limit < 1) throw new TypeError(`limit must be a positive integer, got ${limit}`);
  return Math.min(limit, MAX_PAGE);
}

// --- waits -----------------------------------------------------------------------------------------
/** One waitForRollouts call's subscription: collects ids ended in this process and wakes its loop. */
class EndWaiter {
  readonly endedIds: string[] = [];
  private wake: (() => void) | null = null;
  notify(id: string): void {
    this.endedIds.push(id);
    const w = this.wake;
    this.wake = null;
    w?.();
  }
  /** Resolves when an id is announced or after `ms`. */
  wait(ms: number): Promise<void> {
    if (this.endedIds.length) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(
        () => {
          this.wake = null;
          resolve();
        },
        Math.max(0, ms),
      );
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

/**
 * In-process wakeups for waitForRollouts: writers call `ended(id)` after committing. A waiter subscribes
 * once for its whole call (cheap even for thousands of ids) and is told exactly which ids ended, so it
 * re-reads only those; it also re-reads everything pending every poll interval, because another process
 * may end a rollout in the same database.
 */
export class RolloutEndHub {
  private readonly waiters = new Map<string, Set<EndWaiter>>();
  ended(id: string): void {
    const set = this.waiters.get(id);
    if (set) for (const w of set) w.notify(id);
  }
  subscribe(ids: string[]): EndWaiter {
    const w = new EndWaiter();
    for (const id of ids) {
      let set = this.waiters.get(id);
      if (!set) this.waiters.set(id, (set = new Set()));
      set.add(w);
    }
    return w;
  }
  unsubscribe(ids: string[], w: EndWaiter): void {
    for (const id of ids) {
      const set = this.waiters.get(id);
      if (set && set.delete(w) && set.size === 0) this.waiters.delete(id);
    }
  }
}

/** The waitForRollouts loop shared by both backends; `endedAmong` returns those of `ids` that have ended. */
export async function waitLoop(
  hub: RolloutEndHub,
  ids: string[],
  timeoutMs: number,
  endedAmong: (ids: string[]) => Promise<Rollout[]>,
  pollMs: number,
): Promise<Rollout[]> {
  const unique = [...new Set(ids)];
  const deadline = Date.now() + Math.max(0, timeoutMs);
  const done = new Map<string, Rollout>();
  const waiter = hub.subscribe(unique);
  try {
    const pending = new Set(unique);
    const absorb = (rollouts: Rollout[]) => {
      for (const r of rollouts) {
        done.set(r.id, r);
        pending.delete(r.id);
      }
    };
    absorb(await endedAmong(unique));
    let nextPoll = Date.now() + pollMs;
    while (pending.size > 0) {
      const now = Date.now();
      if (now >= deadline) break;
      await waiter.wait(Math.min(deadline, nextPoll) - now);
      if (Date.now() >= nextPoll) {
        absorb(await endedAmong([...pending]));
        nextPoll = Date.now() + pollMs;
      } else if (waiter.endedIds.length) {
        await new Promise((r) => setImmediate(r)); // let a burst of endings gather into one read
        const announced = waiter.endedIds.splice(0).filter((id) => pending.has(id));
        if (announced.length) absorb(await endedAmong(announced));
      }
    }
  } finally {
    hub.unsubscribe(unique, waiter);
  }
  return unique.filter((id) => done.has(id)).map((id) => done.get(id)!);
}

/**
 * Every distinct agent name of the rollouts table with one index probe per name (a loose index scan over
 * rollouts_agent): what a query by agent expands into that agent's stored forms (protocol/agent-id.ts).
 */
export const DISTINCT_AGENTS_SQL = {
  sqlite: 'SELECT MIN(agent) AS agent FROM rollouts WHERE agent > ?',
  postgres: `WITH RECURSIVE t(agent) AS (
      SELECT MIN(agent) FROM rollouts
      UNION ALL SELECT (SELECT MIN(agent) FROM rollouts WHERE agent > t.agent) FROM t WHERE t.agent IS NOT NULL)
    SELECT agent FROM t WHERE agent IS NOT NULL`,
};
