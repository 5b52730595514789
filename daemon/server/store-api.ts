/**
 * The store API under /v1/agl: the one route table (each routes-*.ts declares its routes once, route.ts)
 * and the express router that registers all of it behind the token and the JSON body reader. The hot path
 * (hot-path.ts) serves the routes marked `hot` from this same table, so a route is declared in one place
 * and both answer it with the same work.
 */
import { Router, type RequestHandler } from 'express';
import { requireToken } from './auth.js';
import { jsonBody } from './body.js';
import type { ServerContext } from './server-context.js';
import type { Reply, StoreRoute } from './route.js';
import { resourceRoutes } from './routes-resources.js';
import { rolloutRoutes } from './routes-rollouts.js';
import { spanRoutes } from './routes-spans.js';
import { trainingRoutes } from './routes-training.js';
import { viewRoutes } from './routes-views.js';

/** Every store API route, in the order express tries them (hottest first). */
export function storeRoutes(ctx: ServerContext): StoreRoute[] {
  return [...spanRoutes(ctx), ...rolloutRoutes(ctx), ...resourceRoutes(ctx), ...trainingRoutes(ctx), ...viewRoutes(ctx)];
}

export function sendReply(res: Parameters<RequestHandler>[1], reply: Reply): void {
  res.status(reply.status).type('application/json').send(reply.body);
}

/** The store API as an express router (mounted at API_PREFIX by app.ts): token first (a 401 costs nothing), then the size-limited JSON parser, then the table. */
export function storeApiRouter(ctx: ServerContext): Router {
  const api = Router();
  api.use(
    (req, res, next) => {
      res.locals.routeBase = req.baseUrl;
      next();
    },
    requireToken(ctx.token),
    ...jsonBody(ctx.bodyLimit),
  );
  for (const route of storeRoutes(ctx)) {
    const handler: RequestHandler = async (req, res) => {
      sendReply(res, await route.handle({ body: req.body, params: req.params as Record<string, string>, query: req.query }));
    };
    if (route.method === 'GET') api.get(route.path, handler);
    else api.post(route.path, handler);
  }
  return api;
}
