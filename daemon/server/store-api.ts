/**
 * The store API under /v1/agl: every route declared in protocol/routes.ts joined with its handler from the
 * routes-*.ts files into the one route table (route.ts), and the express router that registers all of it behind
 * the token and the JSON body reader. Each request's body or query is parsed with the route's declared schema
 * (parseOr400) before its handler runs; a route that declares no body refuses one (bodyReader). The hot path
 * (hot-path.ts) serves the routes marked `hot` from this same table, so a route is declared in one place and
 * both answer it with the same work.
 */
import { Router, type RequestHandler } from 'express';
import { NoBody } from '../../protocol/api.js';
import { routes, type RouteDecl, type RouteName } from '../../protocol/routes.js';
import { requireToken } from './auth.js';
import { jsonBody } from './body.js';
import { parseOr400 } from './errors.js';
import type { ServerContext } from './server-context.js';
import type { ParsedRequest, Reply, RouteHandler, RouteHandlers, StoreRoute } from './route.js';
import { resourceRoutes } from './routes-resources.js';
import { rolloutRoutes } from './routes-rollouts.js';
import { spanRoutes } from './routes-spans.js';
import { trainingRoutes } from './routes-training.js';
import { viewRoutes } from './routes-views.js';
import { promptRoutes } from './routes-prompts.js';

/** `T`, with any key that names no declared route typed `never` (so a handler for an undeclared route does not compile). */
type OnlyDeclared<T> = T & { [K in Exclude<keyof T, RouteName>]: never };
/** Exactly one handler per declared route: a missing one fails `T extends RouteHandlers`, an extra one OnlyDeclared. */
const allHandlers = <T extends RouteHandlers>(handlers: OnlyDeclared<T>): RouteHandlers => handlers;

/** Every declared route's handler, keyed by route name. */
export function storeHandlers(ctx: ServerContext): { [K in RouteName]: RouteHandler<K> } {
  return allHandlers({ ...spanRoutes(ctx), ...rolloutRoutes(ctx), ...resourceRoutes(ctx), ...trainingRoutes(ctx), ...promptRoutes(ctx), ...viewRoutes(ctx) });
}

/**
 * How a declared route reads its body: with its schema (a request without one counts as `{}` where the route
 * says optionalBody), or, for a route that declares none (GET, `body: null`), as nothing: none or `{}` passes,
 * anything else is a 400 naming it (NoBody), never silently ignored.
 */
function bodyReader<K extends RouteName>(decl: RouteDecl, handler: RouteHandler<K>): (body: unknown) => unknown {
  if (handler.parseBody) return handler.parseBody;
  const schema = decl.method === 'POST' ? decl.body : null;
  if (!schema)
    return (body) => {
      if (body !== undefined) parseOr400(NoBody, body);
      return undefined;
    };
  const absent = decl.method === 'POST' && decl.optionalBody ? {} : undefined;
  return (body) => parseOr400(schema, body === undefined ? absent : body);
}

/** The declared route `name` with its handler as a table entry: the body or query parsed with the declared schema, then the handler. */
function storeRoute<K extends RouteName>(name: K, handler: RouteHandler<K>): StoreRoute {
  const decl: RouteDecl = routes[name];
  const parseBody = bodyReader(decl, handler);
  const querySchema = decl.method === 'GET' ? decl.query : undefined;
  return {
    name,
    method: decl.method,
    path: decl.path,
    ...(handler.hot && { hot: true }),
    handle: ({ body, params, query }) =>
      handler.handle({
        body: parseBody(body),
        params,
        query: querySchema ? parseOr400(querySchema, query, 'query') : undefined,
      } as ParsedRequest<K>),
  };
}

/** Every store API route, in the order express tries them: the declarations' order (hottest first). */
export function storeRoutes(ctx: ServerContext): StoreRoute[] {
  const handlers = storeHandlers(ctx);
  return (Object.keys(routes) as RouteName[]).map(<K extends RouteName>(name: K) => storeRoute(name, handlers[name] as RouteHandler<K>));
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
