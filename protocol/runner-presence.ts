/**
 * Whether any runner is connected to the store, from its workers' heartbeats (protocol/store.ts Worker): a queued
 * rollout with none says "queuing: no runner is connected" (the list, the rollout view, `agl rollouts list`) instead
 * of "queuing" forever. A worker counts while it has not said it went offline and its last heartbeat is recent: an
 * idle runner heartbeats on every poll (at most a second apart), a busy one with its attempt's heartbeat.
 */
import type { RolloutStatus, Worker } from './store.js';

/** A worker silent this long is gone (a runner killed without saying so). */
export const WORKER_SILENT_MS = 60_000;

/** The workers that are connected at `now`. */
export function connectedWorkers(workers: readonly Worker[], now = Date.now()): Worker[] {
  return workers.filter((w) => w.status !== 'offline' && now - w.lastHeartbeat <= WORKER_SILENT_MS);
}

export const NO_RUNNER = 'no runner is connected';

/** A rollout's status in words: "queuing: no runner is connected" (or requeuing) when nothing can claim it, else the status. */
export function statusWords(status: RolloutStatus, runnerConnected: boolean): string {
  return (status === 'queuing' || status === 'requeuing') && !runnerConnected ? `${status}: ${NO_RUNNER}` : status;
}
