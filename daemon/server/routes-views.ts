/**
 * What the editor's views need, one request each (daemon/store/views.ts assembles it from the store):
 *   GET  /views/headline?agent=   an agent's headline number and its words (CodeLens, dashboard)
 *   POST /views/groups            a training step's GRPO groups, or one rollout's group (the viewer's group view)
 * Declared once for the route table (store-api.ts).
 */
import { GroupQueryRequest, HeadlineQuery } from '../../protocol/api.js';
import { agentHeadline, groupPage } from '../store/views.js';
import { HttpProblem, parseOr400 } from './errors.js';
import { json, type StoreRoute } from './route.js';
import type { ServerContext } from './server-context.js';

export function viewRoutes(ctx: ServerContext): StoreRoute[] {
  const { store } = ctx;
  return [
    {
      method: 'GET',
      path: '/views/headline',
      handle: async ({ query }) => json(200, await agentHeadline(store, parseOr400(HeadlineQuery, query, 'query').agent)),
    },
    {
      method: 'POST',
      path: '/views/groups',
      async handle({ body }) {
        try {
          return json(200, await groupPage(store, parseOr400(GroupQueryRequest, body ?? {})));
        } catch (e) {
          // The one error groupPage throws itself: an unknown rollout.
          if (e instanceof Error && /does not exist in this daemon's store/.test(e.message)) throw new HttpProblem(404, 'not-found', e.message);
          throw e;
        }
      },
    },
  ];
}
