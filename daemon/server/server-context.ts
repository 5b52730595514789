/**
 * What every part of the server is built from: the ServerContext (store, token, data dir, metrics, log and
 * the hooks `agl serve` fills in) and its defaults. Its own module so that the app (app.ts), the route table
 * (store-api.ts, routes-*.ts) and the hot path (hot-path.ts) all import it from below, never from each other.
 */
import type { KnownAgent } from '../../protocol/api.js';
import type { PolicyInfo } from '../../protocol/api.js';
import type { PolicyModel } from '../model/policy-contract.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { RequestMetrics } from './request-metrics.js';

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
  /** A served policy's version (training updates so far), recorded with each call (agl train with policies:). */
  policyVersion?: (model: string) => number | null;
  /**
   * A checkpoint of one policy per role served by `agl serve --model` (serve-policies.ts): the routing given to local LLM
   * resources that carry none of their own (each role to its policy's name; a call naming no role refused or not).
   */
  servedRoles?: () => { roleModels: Record<string, string>; unassignedRole: 'refuse' | 'default' };
  /** The served policy's description and swap (agl serve --model): GET /v1/agl/policy, POST /v1/agl/policy/load. */
  policyControl?: { describe(): PolicyInfo; load(dir: string): Promise<PolicyInfo> };
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
