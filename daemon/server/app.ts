/**
 * The daemon's express app, built from a ServerContext: the store API under /v1/agl (token + JSON body
 * limit + validation), /health and /metrics, and the mount points where other parts of the daemon
 * attach their routers (the OpenAI-compatible gateway, the OTLP receiver). Errors from every router are
 * answered as application/problem+json by one handler (errors.ts).
 * `listen()` binds it (127.0.0.1 by default) behind the edge (edge.ts: Host/Origin allow-list, problem bodies
 * for requests node's parser refuses) and `closeGracefully()` stops it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { API_PREFIX, type KnownAgent } from '../../protocol/api.js';
import type { PolicyModel } from '../model/api.js';
import type { LightningStore } from '../store/types.js';
import { requireToken } from './auth.js';
import { jsonBody } from './body.js';
import { answerClientErrors, edgeListener, HostAllowList } from './edge.js';
import { gatewayRouter } from './gateway.js';
import { withHotPath } from './hot-path.js';
import { otlpRouter } from './otlp.js';
import { problemHandler, unknownRoute } from './errors.js';
import { RequestMetrics, healthRouter, storeCollector } from './routes-health.js';
import { resourcesRouter } from './routes-resources.js';
import { rolloutsRouter } from './routes-rollouts.js';
import { spansRouter } from './routes-spans.js';
import { trainingRouter } from './routes-training.js';

/** Everything a router needs. Built once by `agl serve` (daemon/commands/serve.ts), or by tests. */
export interface ServerContext {
  store: LightningStore;
  /** The bearer token every route except /health requires (see auth.ts; use `requireToken(ctx.token)`). */
  token: string;
  dataDir: string;
  /** The daemon's package version. */
  version: string;
  startedAt: number;
  /** `http://host:port` of this daemon; set by listen() once bound (empty before). */
  url: string;
  /** JSON body limit for the store API (express/bytes syntax: '16mb'); larger bodies get 413. */
  bodyLimit: string;
  /** Prometheus metrics; routers may add lines with ctx.metrics.addCollector(). */
  metrics: RequestMetrics;
  log: (message: string) => void;
  /** Told about each agent named by an enqueued or started rollout (feeds daemon.json's registry). */
  onAgentSeen?: (agent: string) => void;
  knownAgents?: () => KnownAgent[];
  /**
   * The policy model served by the gateway's local backend, by model name. Whoever loads a policy in the
   * daemon process assigns it (ctx is shared by reference, so it may be set after the app is built).
   */
  getPolicy?: (model: string) => PolicyModel | null | undefined | Promise<PolicyModel | null | undefined>;
  /** Host names answered besides loopback, IP literals and the bound host (`agl serve --allowed-host`; edge.ts). */
  allowedHosts?: string[];
  /**
   * Environment variables an upstream LLM resource may name as `apiKeyEnv` (`agl serve --upstream-key-env`);
   * default: OPENAI_API_KEY only. Any other name is refused, so a token holder cannot read the daemon's environment.
   */
  allowedKeyEnvs?: string[];
}

export type ServerContextInit = Pick<ServerContext, 'store' | 'token' | 'dataDir'> & Partial<ServerContext>;

export function createServerContext(init: ServerContextInit): ServerContext {
  return {
    version: '0.0.0', startedAt: Date.now(), url: '', bodyLimit: '16mb', metrics: new RequestMetrics(),
    log: (m) => console.error(m), ...init,
  };
}

export function createApp(ctx: ServerContext): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false); // no hashing of every response body on the hot path
  app.set('query parser', 'simple');
  app.use(ctx.metrics.middleware);
  ctx.metrics.addCollector(storeCollector(ctx));

  app.use(healthRouter(ctx)); // GET /health (no token), GET /metrics

  // The store API: token first (a 401 costs nothing), then the size-limited JSON parser, then routes.
  const api = express.Router();
  api.use((req, res, next) => { res.locals.routeBase = req.baseUrl; next(); }, requireToken(ctx.token), ...jsonBody(ctx.bodyLimit));
  api.use(spansRouter(ctx), rolloutsRouter(ctx), resourcesRouter(ctx), trainingRouter(ctx)); // hottest first
  app.use(API_PREFIX, api);

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
 * Stops accepting connections, lets requests in flight finish (idle keep-alive sockets close at once),
 * and cuts the rest after `graceMs` (long-polls end early; clients retry).
 */
export function closeGracefully(server: Server, graceMs = 5_000): Promise<void> {
  return new Promise((resolve) => {
    // Requests that still arrive on open keep-alive sockets are answered, then their socket is closed.
    server.prependListener('request', (_req, res) => { res.setHeader('connection', 'close'); });
    const timer = setTimeout(() => server.closeAllConnections(), graceMs);
    timer.unref();
    // Sockets busy at close() go idle once answered and would wait out the grace time: sweep them.
    const sweep = setInterval(() => server.closeIdleConnections(), 25);
    server.close(() => { clearTimeout(timer); clearInterval(sweep); resolve(); });
    server.closeIdleConnections();
  });
}
