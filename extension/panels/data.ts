/**
 * What the panels answer to their webviews' requests, fetched from the daemon through the typed client
 * (client/client.ts). Free of the vscode API, so the webview tests drive exactly this code against a real
 * daemon. One handler table per webview, keyed by the protocol's method names.
 */
import { compareEvalRuns, evalRunInfo } from '../../protocol/eval-compare.js';
import { humanLabelOf, humanLabelSpan } from '../../protocol/human-label.js';
import { CompareProtocol } from '../../protocol/webview-compare.js';
import { DashboardProtocol } from '../../protocol/webview-dashboard.js';
import type { IpcRequestType } from '../../protocol/webview-ipc.js';
import { OptimizeProtocol } from '../../protocol/webview-optimize.js';
import { TrajectoryProtocol } from '../../protocol/webview-trajectory.js';
import type { AglClient } from '../../client/client.js';
import { addToDataset, type DatasetChooser } from './dataset-add.js';

export type RequestHandlers = Map<string, (params: unknown) => Promise<unknown>>;

function on<P, R>(handlers: RequestHandlers, type: IpcRequestType<P, R>, fn: (params: P) => Promise<R>): void {
  handlers.set(type.method, fn as (params: unknown) => Promise<unknown>);
}

/** `chooser`: how Add to dataset asks for its file (the extension's dialogs; a test's choice). */
export function trajectoryHandlers(client: AglClient, chooser?: DatasetChooser): RequestHandlers {
  const handlers: RequestHandlers = new Map();
  // One page of the list: the store filters, searches, sorts, counts and summarises (daemon/store/views-rollouts.ts).
  on(handlers, TrajectoryProtocol.listRollouts, (req) => client.getRolloutsView(req));
  // One rollout, its calls and answer: assembled by the daemon (daemon/store/views.ts rolloutView).
  on(handlers, TrajectoryProtocol.getRollout, (p) => client.getRolloutView({ rolloutId: p.rolloutId, ...(p.attemptId ? { attemptId: p.attemptId } : {}) }));
  on(handlers, TrajectoryProtocol.getGroups, (q) => client.getGroups(q));
  // Rows of a rollout (corrected or not), a selection or the filter, appended to the dataset the user picks.
  on(handlers, TrajectoryProtocol.addToDataset, (target) => {
    if (!chooser) throw new Error('Add to dataset needs the editor to pick a file');
    return addToDataset(client, target, chooser);
  });
  // A person's label of a rollout: a reward span of source human, written through the store API and read back.
  on(handlers, TrajectoryProtocol.labelRollout, async ({ rolloutId, attemptId, label }) => {
    await client.addSpans([humanLabelSpan({ rolloutId, attemptId }, label, Date.now())]);
    const stored = humanLabelOf(await client.querySpans({ rolloutId, attemptId }));
    if (!stored) throw new Error(`the label of rollout ${rolloutId} was not stored`);
    return stored;
  });
  return handlers;
}

export function dashboardHandlers(client: AglClient): RequestHandlers {
  const handlers: RequestHandlers = new Map();
  // The dashboard charts training runs: an optimization's or evaluation's records are not its metrics.
  on(handlers, DashboardProtocol.listRuns, async () => (await client.listTrainingRuns(undefined, 'train')).sort((a, b) => b.createdAt - a.createdAt));
  on(handlers, DashboardProtocol.getRunMetrics, async ({ runId }) => {
    const run = await client.getTrainingRun(runId);
    if (!run) throw new Error(`training run '${runId}' does not exist in this daemon's store`);
    return { run, points: await client.queryMetrics(runId) };
  });
  on(handlers, DashboardProtocol.getHeadline, ({ agent }) => client.agentHeadline(agent));
  on(handlers, DashboardProtocol.setRunLabel, ({ runId, label }) => client.updateTrainingRun(runId, { label: label.trim() === '' ? null : label }));
  return handlers;
}

export function optimizeHandlers(client: AglClient): RequestHandlers {
  const handlers: RequestHandlers = new Map();
  on(handlers, OptimizeProtocol.listRuns, async () => (await client.listTrainingRuns(undefined, 'optimize')).sort((a, b) => b.createdAt - a.createdAt));
  // The run, its candidates with their val scores, the front, the curve and the calls: assembled by the daemon (daemon/store/views-optimize.ts).
  on(handlers, OptimizeProtocol.getView, ({ runId }) => client.getOptimizationView(runId));
  return handlers;
}

export function compareHandlers(client: AglClient): RequestHandlers {
  const handlers: RequestHandlers = new Map();
  on(handlers, CompareProtocol.listRuns, async () =>
    (await client.listTrainingRuns(undefined, 'eval')).sort((a, b) => b.createdAt - a.createdAt).map(evalRunInfo),
  );
  // The paired test of `agl eval --baseline` (protocol/eval-stats.ts) on the two runs' recorded per-task results.
  on(handlers, CompareProtocol.getCompare, async ({ baseRunId, runId }) => {
    const [base, run] = await Promise.all([client.getTrainingRun(baseRunId), client.getTrainingRun(runId)]);
    for (const [id, r] of [
      [baseRunId, base],
      [runId, run],
    ] as const)
      if (!r) throw new Error(`eval run '${id}' does not exist in this daemon's store`);
    return compareEvalRuns(base!, run!);
  });
  return handlers;
}
