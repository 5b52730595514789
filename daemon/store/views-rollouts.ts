/**
 * The viewer's rollouts list, one page per request (POST /v1/agl/views/rollouts), assembled from the store on the
 * daemon's side like the other views (views.ts): the store filters, searches, sorts, counts and summarises (no span
 * is read), and the page carries what the list's filters offer (statuses, modes, agents, resources versions, runs of
 * every kind: an optimization's rollouts are found by its run too, and by their candidate), and whether a runner is
 * connected (a queued row says when none is).
 */
import { MAX_LIST_ROWS, type RolloutsViewRequest } from '../../protocol/api.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { ROLLOUT_MODES, ROLLOUT_STATUSES } from '../../protocol/store.js';
import type { RolloutPage } from '../../protocol/webview-trajectory.js';
import { connectedWorkers } from '../../protocol/runner-presence.js';

/** Resources versions read for the page at most (newest first): the filter's choices and the rows' versions. */
const RESOURCES_READ = 1000;

/**
 * One page of the list. `knownAgents`: the agents the daemon has seen rollouts enqueued for (its registry), offered
 * with those on the page and the one filtered on (the filter always shows what it filters by, so it can be cleared:
 * from the CodeLens it may match rollouts stored under older forms of the agent's id only, or none yet).
 */
export async function rolloutsPage(store: LightningStore, req: RolloutsViewRequest, knownAgents: string[] = []): Promise<RolloutPage> {
  const offset = req.offset ?? 0;
  const [page, resources, stats, runs, workers] = await Promise.all([
    store.queryRollouts({
      ...{ status: req.status, mode: req.mode, agent: req.agent, resourcesVersion: req.resourcesVersion, search: req.search || undefined },
      ...{ rewardMin: req.rewardMin, rewardMax: req.rewardMax, runId: req.runId, step: req.step, candidate: req.candidate, hasError: req.hasError },
      ...{ promptVersion: req.promptVersion, servedBy: req.servedBy },
      ...{ sort: req.sort, order: req.order, offset, limit: Math.min(req.limit ?? 50, MAX_LIST_ROWS), withTotal: true, withSummaries: true },
    }),
    store.listResources(RESOURCES_READ),
    store.statistics(),
    store.listTrainingRuns(),
    store.listWorkers(),
  ]);
  const runnerConnected = connectedWorkers(workers).length > 0;
  const versions = new Map(resources.map((r) => [r.id, r.version]));
  const items = page.items.map((rollout, i) => {
    const s = page.summaries![i]!;
    return {
      rollout,
      reward: s.finalReward,
      resourcesVersion: rollout.resourcesId ? (versions.get(rollout.resourcesId) ?? null) : null,
      durationMs: s.durationMs,
      startedAt: s.startedAt,
      error: s.error,
      errorSpans: s.errorSpans,
      served: s.served,
      runnerConnected,
    };
  });
  const agents = [...new Set([...knownAgents, ...page.items.map((r) => r.agent), req.agent].filter((a): a is string => !!a))].sort();
  return {
    items,
    offset,
    total: page.total!,
    storeTotal: Object.values(stats.rollouts).reduce((a, b) => a + b, 0),
    statuses: [...ROLLOUT_STATUSES],
    modes: [...ROLLOUT_MODES],
    agents,
    resourcesVersions: [...versions.values()].sort((a, b) => b - a),
    runs: runs.map((r) => ({ id: r.id, agent: r.agent, kind: r.kind, createdAt: r.createdAt })).sort((a, b) => b.createdAt - a.createdAt),
  };
}
