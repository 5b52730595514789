/**
 * What the panels answer to their webviews' requests, fetched from the daemon through the typed client
 * (sdk/tools/client.ts). Free of the vscode API, so the webview tests drive exactly this code against a real
 * daemon. One handler table per webview, keyed by the protocol's method names.
 */
import type { MetricPoint, TrainingRun } from '../../protocol/store.js';
import { DashboardProtocol } from '../../protocol/webview-dashboard.js';
import type { IpcRequestType } from '../../protocol/webview-ipc.js';
import { TrajectoryProtocol } from '../../protocol/webview-trajectory.js';
import type { AglClient } from '../../sdk/tools/client.js';

export type RequestHandlers = Map<string, (params: unknown) => Promise<unknown>>;

function on<P, R>(handlers: RequestHandlers, type: IpcRequestType<P, R>, fn: (params: P) => Promise<R>): void {
  handlers.set(type.method, fn as (params: unknown) => Promise<unknown>);
}

export function trajectoryHandlers(client: AglClient): RequestHandlers {
  const handlers: RequestHandlers = new Map();
  // One page of the list: the store filters, searches, sorts, counts and summarises (daemon/store/views-rollouts.ts).
  on(handlers, TrajectoryProtocol.listRollouts, (req) => client.getRolloutsView(req));
  // One rollout, its calls and answer: assembled by the daemon (daemon/store/views.ts rolloutView).
  on(handlers, TrajectoryProtocol.getRollout, (p) => client.getRolloutView({ rolloutId: p.rolloutId, ...(p.attemptId ? { attemptId: p.attemptId } : {}) }));
  on(handlers, TrajectoryProtocol.getGroups, (q) => client.getGroups(q));
  return handlers;
}

export function dashboardHandlers(client: AglClient): RequestHandlers {
  const handlers: RequestHandlers = new Map();
  on(handlers, DashboardProtocol.listRuns, async () => (await client.listTrainingRuns()).sort((a, b) => b.createdAt - a.createdAt));
  on(handlers, DashboardProtocol.getRunMetrics, async ({ runId }) => {
    const run = await client.getTrainingRun(runId);
    if (!run) throw new Error(`training run '${runId}' does not exist in this daemon's store`);
    return { run, points: await client.queryMetrics(runId) };
  });
  on(handlers, DashboardProtocol.getHeadline, ({ agent }) => client.agentHeadline(agent));
  on(handlers, DashboardProtocol.setRunLabel, ({ runId, label }) => client.updateTrainingRun(runId, { label: label.trim() === '' ? null : label }));
  return handlers;
}

/**
 * Polls a running training run and hands on the metric points after the ones already sent, and the
 * run's new state, until the run ends or `stop()` is called.
 */
export function watchRunMetrics(
  client: AglClient,
  runId: string,
  send: (run: TrainingRun, points: MetricPoint[]) => void,
  intervalMs = 2000,
): { stop(): void } {
  let lastStep = -1;
  let lastUpdated = 0;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = async (): Promise<void> => {
    try {
      const run = await client.getTrainingRun(runId);
      if (stopped || !run) return;
      // Validation writes a point at the current step after the training point: re-read the last step.
      const points = await client.queryMetrics(runId, lastStep >= 0 ? lastStep - 1 : undefined);
      if (points.length || run.updatedAt !== lastUpdated) send(run, points);
      lastUpdated = run.updatedAt;
      for (const p of points) lastStep = Math.max(lastStep, p.step);
      if (run.status !== 'running') return;
    } catch {
      /* daemon restarting: try again next tick */
    }
    if (!stopped) timer = setTimeout(() => void tick(), intervalMs);
  };
  void tick();
  return {
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}

/**
 * Polls the store's statistics (one cheap request: rollouts per status, span count) while an open viewer
 * is visible, and calls `onChange` when they move (a rollout added, claimed or ended, spans landed): how a
 * trajectory viewer learns that it should reload its list. The first reading is the baseline; a daemon that
 * is down or restarting is simply asked again next tick.
 */
export function watchStore(client: () => Promise<AglClient>, onChange: () => void, intervalMs = 2000): { stop(): void } {
  let last: string | null = null;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = async (): Promise<void> => {
    try {
      const s = await (await client()).statistics();
      const signature = JSON.stringify([s.rollouts, s.spans]);
      if (!stopped && last !== null && signature !== last) onChange();
      last = signature;
    } catch {
      /* daemon down or restarting: try again next tick */
    }
    if (!stopped) timer = setTimeout(() => void tick(), intervalMs);
  };
  void tick();
  return {
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
