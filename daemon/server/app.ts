/**
 * The daemon's express app, built from a ServerContext (server-context.ts): the store API under /v1/agl (the route
 * table of store-api.ts: token + JSON body limit + validation), the event stream /v1/agl/events (events.ts), /health and /metrics, and the mount points where other parts of the daemon
 * attach their routers (the OpenAI-compatible gateway, the OTLP receiver). Errors from every router are
 * answered as application/problem+json by one handler (errors.ts).
 * `listen()` binds it (127.0.0.1 by default) behind the edge (edge.ts: Host/Origin allow-list, problem bodies
 * for requests node's parser refuses) and `closeGracefully()` stops it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { API_PREFIX } from '../../protocol/api.js';
import type { ServerContext } from './server-context.js';
import { answerClientErrors, edgeListener, HostAllowList } from './edge.js';
import { gatewayRouter } from './gateway.js';
import { withHotPath } from './hot-path.js';
import { otlpRouter } from './otlp.js';
import { problemHandler, unknownRoute } from './errors.js';
import { healthRouter, storeCollector } from './routes-health.js';
import { EventHub, eventsRouter } from './events.js';
import { policyRouter } from './routes-policy.js';
import { storeApiRouter } from './store-api.js';

/** Each app's event stream, closed with the server it is served by (closeGracefully). */
const eventHubs = new WeakMap<express.Express | Server, EventHub>();

export function createApp(ctx: ServerContext): express.Express {
  const app = express();
  const events = new EventHub(ctx, ctx.events);
  eventHubs.set(app, events);
  app.disable('x-powered-by');
  app.set('etag', false); // no hashing of every response body on the hot path
  app.set('query parser', 'simple');
  app.use(ctx.metrics.middleware);
  ctx.metrics.addCollector(storeCollector(ctx));
  ctx.metrics.addCollector(() => events.metrics());

  app.use(healthRouter(ctx)); // GET /health (no token), GET /metrics

  app.use(API_PREFIX, eventsRouter(ctx, events)); // GET /v1/agl/events: what changed, as server-sent events (events.ts)
  app.use(API_PREFIX, policyRouter(ctx)); // GET /policy, POST /policy/load: agl serve --model's served policy (routes-policy.ts)
  app.use(API_PREFIX, storeApiRouter(ctx)); // the store API: one route table (store-api.ts)

  // ---- Mount points for other owners' routers: add ONE line each, e.g. -------------------------------
  // `app.use(gatewayRouter(ctx));`  runner: /v1/chat/completions, /v1/completions, /v1/models,
  //                                         /rollout/:rid/attempt/:aid/v1/*   (daemon/server/gateway*.ts)
  // `app.use(otlpRouter(ctx));`     runner: POST /v1/traces (OTLP/HTTP protobuf + JSON) (daemon/server/otlp*.ts)
  // Each router parses its own bodies (the JSON parser above covers /v1/agl only) and guards itself with
  // `requireToken(ctx.token)` where it should; thrown errors become problem+json below.
  // ------------------------------------------------------------------------------------------------------
  app.use(gatewayRouter(ctx));
  app.use(otlpRouter(ctx));

  app.use(unknownRoute);
  app.use(problemHandler(ctx.log));
  return app;
}

/**
 * Binds the app, with the store API's hottest routes answered beside express (hot-path.ts); rejects with the
 * listen error (EADDRINUSE, EACCES...) so callers can explain it.
 */
export function listen(app: express.Express, ctx: ServerContext, host: string, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer(edgeListener(new HostAllowList(host, ctx.allowedHosts), withHotPath(ctx, app), ctx.log));
    const events = eventHubs.get(app);
    if (events) eventHubs.set(server, events);
    answerClientErrors(server);
    server.listen(port, host);
    server.once('error', reject);
    server.once('listening', () => {
      server.off('error', reject);
      const addr = server.address() as AddressInfo;
      const shownHost = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      ctx.url = `http://${shownHost}:${addr.port}`;
      server.keepAliveTimeout = 65_000; // longer than clients' idle keep-alive, so reuse never races a close
      server.headersTimeout = 66_000;
      resolve(server);
    });
  });
}

/**
 * Stops accepting connections, ends the event streams, lets requests in flight finish (idle keep-alive sockets
 * close at once), and cuts the rest after `graceMs` (long-polls end early; clients retry).
 */
export function closeGracefully(server: Server, graceMs = 5_000): Promise<void> {
  eventHubs.get(server)?.close(); // event streams never finish on their own
  return new Promise((resolve) => {
    // Requests that still arrive on open keep-alive sockets are answered, then their socket is closed.
    server.prependListener('request', (_req, res) => {
      res.setHeader('connection', 'close');
    });
    const timer = setTimeout(() => server.closeAllConnections(), graceMs);
    timer.unref();
    // Sockets busy at close() go idle once answered and would wait out the grace time: sweep them.
    const sweep = setInterval(() => server.closeIdleConnections(), 25);
    server.close(() => {
      clearTimeout(timer);
      clearInterval(sweep);
      resolve();
    });
    server.closeIdleConnections();
  });
}
