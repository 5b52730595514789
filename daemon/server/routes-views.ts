/**
 * What the editor's views need, one request each (daemon/store/views.ts assembles it from the store; routes
 * declared in protocol/routes.ts):
 *   viewHeadline   GET /views/headline?agent=   an agent's headline number and its words (CodeLens, dashboard)
 *   viewGroups     POST /views/groups           a training step's GRPO groups, or one rollout's group (the viewer's group view)
 *   viewRollout    POST /views/rollout          one rollout with its calls and answer (the viewer's rollout view)
 *   viewRollouts   POST /views/rollouts         one page of the rollouts list (the viewer's list; store/views-rollouts.ts)
 *   viewOptimization  GET /views/optimization?runId=  a prompt optimization (the optimization view; store/views-optimize.ts)
 */
import { agentHeadline, groupPage, rolloutView } from '../store/views.js';
import { rolloutsPage } from '../store/views-rollouts.js';
import { optimizationView } from '../store/views-optimize.js';
import { HttpProblem } from './errors.js';
import { json, type RouteHandlers } from './route.js';
import type { ServerContext } from './server-context.js';

/** The one error the views throw themselves, an unknown rollout or run, as a 404. */
async function orNotFound<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof Error && /does not exist in this daemon's store/.test(e.message)) throw new HttpProblem(404, 'not-found', e.message);
    throw e;
  }
}

export function viewRoutes(ctx: ServerContext) {
  const { store } = ctx;
  return {
    viewHeadline: { handle: async ({ query }) => json(200, await agentHeadline(store, query.agent)) },
    viewGroups: { handle: async ({ body }) => json(200, await orNotFound(() => groupPage(store, body))) },
    viewRollout: { handle: async ({ body }) => json(200, await orNotFound(() => rolloutView(store, body))) },
    viewRollouts: {
      handle: async ({ body }) =>
        json(
          200,
          await rolloutsPage(
            store,
            body,
            ctx.knownAgents?.().map((a) => a.agent),
          ),
        ),
    },
    viewOptimization: { handle: async ({ query }) => json(200, await orNotFound(() => optimizationView(store, query.runId))) },
  } satisfies Partial<RouteHandlers>;
}
