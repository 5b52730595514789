/**
 * What the editor's views need, one request each (daemon/store/views.ts assembles it from the store; routes
 * declared in protocol/routes.ts):
 *   viewHeadline   GET /views/headline?agent=   an agent's headline number and its words (CodeLens, dashboard)
 *   viewGroups     POST /views/groups           a training step's GRPO groups, or one rollout's group (the viewer's group view)
 */
import { agentHeadline, groupPage } from '../store/views.js';
import { HttpProblem } from './errors.js';
import { json, type RouteHandlers } from './route.js';
import type { ServerContext } from './server-context.js';

export function viewRoutes(ctx: ServerContext) {
  const { store } = ctx;
  return {
    viewHeadline: { handle: async ({ query }) => json(200, await agentHeadline(store, query.agent)) },
    viewGroups: {
      async handle({ body }) {
        try {
          return json(200, await groupPage(store, body));
        } catch (e) {
          // The one error groupPage throws itself: an unknown rollout.
          if (e instanceof Error && /does not exist in this daemon's store/.test(e.message)) throw new HttpProblem(404, 'not-found', e.message);
          throw e;
        }
      },
    },
  } satisfies Partial<RouteHandlers>;
}
