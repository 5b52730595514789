/**
 * What every part of the server is built from: the ServerContext (store, token, data dir, metrics, log, the policies
 * it serves) and its defaults, all given when it is made. Its own module so that the app (app.ts), the route table
 * (store-api.ts, routes-*.ts) and the hot path (hot-path.ts) all import it from below, never from each other.
 */
import type { KnownAgent } from '../../protocol/api.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { RequestMetrics } from './request-metrics.js';
import type { ServedPolicies } from './served-policies.js';

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
   * The policies this daemon serves itself (served-policies.ts): the gateway's local backend, its routing by role and
   * the versions it records, GET/POST /v1/agl/policy. Absent: none (local calls are refused with 503).
   */
  readonly policies?: ServedPolicies;
  /** Host names answered besides loopback, IP literals and the bound host (`agl serve --allowed-host`; edge.ts). */
  allowedHosts?: string[];
  /**
   * Environment variables an upstream LLM resource may name as `apiKeyEnv` (`agl serve --upstream-key-env`);
   * default: OPENAI_API_KEY only. Any other name is refused, so a token holder cannot read the daemon's environment.
   */
  allowedKeyEnvs?: string[];
  /** The event stream's heartbeat and how much a subscriber may leave unread before it is dropped (events.ts). */
  events?: { heartbeatMs?: number; maxBufferedBytes?: number };
}

export type ServerContextInit = Pick<ServerContext, 'store' | 'token' | 'dataDir'> & Partial<ServerContext>;

export function createServerContext(init: ServerContextInit): ServerContext {
  return {
    version: '0.0.0',
    startedAt: Date.now(),
    url: '',
    bodyLimit: '16mb',
    metrics: new RequestMetrics(),
    log: (m) => console.error(m),
    ...init,
  };
}
