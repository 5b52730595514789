/**
 * The daemon's event stream: what changed, pushed to whoever shows the store (the extension, the language server,
 * the webview panels through the extension) instead of each of them polling. Declared once here, imported by the
 * daemon (daemon/server/events.ts sends) and the client (client/events.ts receives and validates).
 *
 * `GET /v1/agl/events` (EVENTS_PATH under API_PREFIX) answers `text/event-stream` (server-sent events) and needs
 * `Authorization: Bearer <token>` like every store route (401 problem+json without it). Each message is
 * `event: <type>` and one `data:` line of JSON, `DaemonEvent` below:
 *   hello   first on every connection: the daemon's health and how often `health` follows. A client that was
 *           disconnected re-reads what it shows here: events are notifications, never the data itself, and
 *           nothing is replayed, so no acknowledged write can be missed by a client that re-reads on `hello`.
 *   store   what the store committed, from this daemon or any other process sharing its database (`agl train`, other
 *           daemons on one PostgreSQL): rollouts created or changed (status, metadata, an attempt started or ended),
 *           rollouts whose spans landed, runs created or moved (run progress: kind, status, step), runs with new
 *           metrics or transitions, new resources versions; a prompt optimization's candidates added or decided, its
 *           optimizer calls, prompts promoted or cleared (protocol/prompts.ts). Ids beyond MAX_LISTED_CHANGES are
 *           left out and `truncated` says so: re-read everything shown.
 *   health  every `heartbeatMs` (the daemon's /health answer): the daemon is alive and the stream is open.
 * A consumer that does not read what it is sent is dropped (the daemon never buffers without bound); it reconnects
 * and gets `hello`.
 */
import { z } from 'zod';
import { Health } from './api.js';
import { CandidateStatus } from './prompts.js';
import { RolloutStatus, RunKind, TrainingRunStatus } from './store.js';

/** The stream's path under API_PREFIX: `GET /v1/agl/events`. */
export const EVENTS_PATH = '/events';
/** Ids listed per kind of change in one `store` event at most; beyond it `truncated` is set. */
export const MAX_LISTED_CHANGES = 200;
/** How often a `health` event is sent by default (ms). */
export const DEFAULT_HEARTBEAT_MS = 5_000;

/** A rollout created or changed: its status and its latest attempt (an attempt starting or ending moves its rollout). */
export const RolloutChange = z.object({
  id: z.string(),
  agent: z.string().nullable(),
  status: RolloutStatus,
  /** The latest attempt (null before the first claim) and how many attempts it has had. */
  attemptId: z.string().nullable(),
  attempts: z.number().int().min(0),
});
export type RolloutChange = z.infer<typeof RolloutChange>;

/** A run created or moved: its progress as stored (a training run's dashboard follows kind 'train' only). */
export const RunProgress = z.object({
  id: z.string(),
  agent: z.string(),
  kind: RunKind.default('train'),
  status: TrainingRunStatus,
  step: z.number().int(),
  totalSteps: z.number().int(),
});
export type RunProgress = z.infer<typeof RunProgress>;

/** A prompt candidate added or decided: the optimization view follows its run. */
export const CandidateChange = z.object({ id: z.string(), runId: z.string(), status: CandidateStatus });
export type CandidateChange = z.infer<typeof CandidateChange>;

/** What the store committed since the last `store` event; every list may be empty. */
export const StoreChange = z.object({
  rollouts: z.array(RolloutChange).default([]),
  /** Rollouts with new spans. */
  spans: z.array(z.string()).default([]),
  runs: z.array(RunProgress).default([]),
  /** Training runs with new metric points, and the highest step among them. */
  metrics: z.array(z.object({ runId: z.string(), step: z.number().int() })).default([]),
  /** Training runs with new transitions. */
  transitions: z.array(z.string()).default([]),
  /** New resources versions. */
  resources: z.array(z.object({ id: z.string(), version: z.number().int() })).default([]),
  /** Prompt candidates added or decided. */
  candidates: z.array(CandidateChange).default([]),
  /** Runs with new optimizer calls, and the highest call sequence among them. */
  optimizerCalls: z.array(z.object({ runId: z.string(), seq: z.number().int() })).default([]),
  /** Agents' prompts promoted or cleared. */
  promotedPrompts: z.array(z.object({ agent: z.string(), name: z.string() })).default([]),
  /** More changed than is listed (or the daemon may have missed changes): re-read everything shown. */
  truncated: z.boolean().default(false),
});
export type StoreChange = z.infer<typeof StoreChange>;
export type StoreChangeInput = z.input<typeof StoreChange>;

export const DaemonEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('hello'), health: Health, heartbeatMs: z.number().int().positive() }),
  z.object({ type: z.literal('store'), change: StoreChange }),
  z.object({ type: z.literal('health'), health: Health }),
]);
export type DaemonEvent = z.infer<typeof DaemonEvent>;
export type DaemonEventType = DaemonEvent['type'];

export const emptyChange = (): StoreChange => StoreChange.parse({});

/** Nothing listed and nothing truncated. */
export function isEmptyChange(c: StoreChange): boolean {
  const lists = [c.rollouts, c.spans, c.runs, c.metrics, c.transitions, c.resources, c.candidates, c.optimizerCalls, c.promotedPrompts];
  return !c.truncated && lists.every((l) => l.length === 0);
}

/** `items` and `more` merged by `key` (a later entry replaces an earlier one), cut at MAX_LISTED_CHANGES. */
function mergeBy<T>(items: T[], more: T[], key: (t: T) => string, combine: (a: T, b: T) => T = (_a, b) => b): { list: T[]; cut: boolean } {
  const byKey = new Map(items.map((t) => [key(t), t]));
  for (const t of more) {
    const k = key(t);
    const had = byKey.get(k);
    byKey.set(k, had === undefined ? t : combine(had, t));
  }
  const list = [...byKey.values()];
  return { list: list.slice(0, MAX_LISTED_CHANGES), cut: list.length > MAX_LISTED_CHANGES };
}

/** Two changes as one (what a slow moment coalesces into one event): the later state of each listed item wins. */
export function mergeChanges(a: StoreChange, b: StoreChange): StoreChange {
  const rollouts = mergeBy(a.rollouts, b.rollouts, (r) => r.id);
  const spans = mergeBy(a.spans, b.spans, (id) => id);
  const runs = mergeBy(a.runs, b.runs, (r) => r.id);
  const metrics = mergeBy(
    a.metrics,
    b.metrics,
    (m) => m.runId,
    (x, y) => ({ runId: x.runId, step: Math.max(x.step, y.step) }),
  );
  const transitions = mergeBy(a.transitions, b.transitions, (id) => id);
  const resources = mergeBy(a.resources, b.resources, (r) => r.id);
  const candidates = mergeBy(a.candidates, b.candidates, (c) => c.id);
  const optimizerCalls = mergeBy(
    a.optimizerCalls,
    b.optimizerCalls,
    (c) => c.runId,
    (x, y) => ({ runId: x.runId, seq: Math.max(x.seq, y.seq) }),
  );
  const promotedPrompts = mergeBy(a.promotedPrompts, b.promotedPrompts, (p) => JSON.stringify([p.agent, p.name]));
  const cut = [rollouts, spans, runs, metrics, transitions, resources, candidates, optimizerCalls, promotedPrompts].some((m) => m.cut);
  return {
    rollouts: rollouts.list,
    spans: spans.list,
    runs: runs.list,
    metrics: metrics.list,
    transitions: transitions.list,
    resources: resources.list,
    candidates: candidates.list,
    optimizerCalls: optimizerCalls.list,
    promotedPrompts: promotedPrompts.list,
    truncated: a.truncated || b.truncated || cut,
  };
}

/** The rollouts a change concerns (created, changed, or with new spans); `truncated` means any may have. */
export function changedRolloutIds(c: StoreChange): string[] {
  return [...new Set([...c.rollouts.map((r) => r.id), ...c.spans])];
}

/** The training runs a change concerns (created, moved, new metrics or transitions). */
export function changedRunIds(c: StoreChange): string[] {
  return [...new Set([...c.runs.map((r) => r.id), ...c.metrics.map((m) => m.runId), ...c.transitions])];
}

/**
 * The prompt optimizations a change concerns (the run moved, its candidates or optimizer calls). Its rollouts' changes
 * name no run: a view of an optimization also re-reads on `changedRolloutIds` and on `truncated`.
 */
export function changedOptimizationIds(c: StoreChange): string[] {
  const runs = c.runs.filter((r) => r.kind === 'optimize').map((r) => r.id);
  return [...new Set([...runs, ...c.candidates.map((x) => x.runId), ...c.optimizerCalls.map((x) => x.runId)])];
}
