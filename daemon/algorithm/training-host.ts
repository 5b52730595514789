/**
 * The training host: an `agl train` process serves the policies it trains. It binds the daemon's app (store
 * API, and the OpenAI-compatible gateway serving these very policy objects, as the run's ServedPolicies: each call by
 * the model its resource names, so every update is live for the next rollouts) on 127.0.0.1, runs the store's
 * watchdog (timeouts and retries on a timer), and starts runner workers that claim this run's rollouts and
 * execute the agent in worker processes. Remote `agl runner` processes can join through the same URL and token.
 * `startHost` is the same without a training run's policies (`agl optimize` hosts its rollouts with it).
 */
import type { Server } from 'node:http';
import { AglClient } from '../../client/client.js';
import type { PolicyInfo } from '../../protocol/api.js';
import type { OpenPolicySet } from './open-policy-set.js';
import { Runner } from '../runner/runner.js';
import { closeGracefully, createApp, listen } from '../server/app.js';
import { createServerContext } from '../server/server-context.js';
import type { ServedPolicies } from '../server/served-policies.js';
import { Watchdog } from '../store/index.js';
import type { LightningStore } from '../../protocol/lightning-store.js';

export interface TrainingHost {
  url: string;
  endpoint: string;
  runner: Runner | null;
  close(): Promise<void>;
}

export interface HostOptions {
  store: LightningStore;
  /** The run's policies: the gateway serves each by its name, and every other name by the set's fallback. */
  policies: OpenPolicySet;
  token: string;
  dataDir: string;
  /** Runner workers started in this process (0 = rely on external `agl runner` processes). */
  workers: number;
  /** The agent's stable id (what its rollouts name). */
  agent: string;
  /** The agent as the user named it, resolved (an absolute file): what the workers run, from any working directory. */
  agentSpec?: string;
  port?: number;
  log?: (m: string) => void;
  /** Environment variables an upstream LLM resource of this run may name for its key (engine.sampler.apiKeyEnv). */
  allowedKeyEnvs?: string[];
  /** The run being trained (what GET /v1/agl/policy names); absent for a host started before its run is recorded. */
  runId?: string;
  /** A served policy's version, recorded with each call (the trainer's count of its updates); absent: not recorded. */
  policyVersion?: (model: string) => number | null;
}

/** A training run's policies as the gateway serves them: live, versioned by the trainer, never swapped from outside. */
export function trainingPolicies(set: OpenPolicySet, runId: string | null, version: (name: string) => number | null): ServedPolicies {
  const loadedAt = Date.now();
  return {
    model: (name) => set.model(name),
    routing: () => set.routing(),
    version,
    describe: (): PolicyInfo => ({
      spec: set.plan.base,
      engine: set.fallback.engineFacts.engine,
      name: set.fallback.name,
      backend: set.fallback.backend,
      loadedAt,
      reloads: 0,
      training: { runId, policies: set.trained.map((p) => ({ name: p.name, roles: p.roles, updates: version(p.name) ?? 0 })) },
    }),
  };
}

export async function startTrainingHost(o: HostOptions): Promise<TrainingHost> {
  const { policies, runId, policyVersion, ...rest } = o;
  return startHost({ ...rest, served: trainingPolicies(policies, runId ?? null, policyVersion ?? (() => null)) });
}

/**
 * The same host for any policies the gateway serves itself (none: it serves only LLM resources that forward upstream):
 * `agl optimize`, whose candidates are prompts, not weights, hosts its rollouts this way.
 */
export async function startHost(o: Omit<HostOptions, 'policies' | 'runId' | 'policyVersion'> & { served?: ServedPolicies }): Promise<TrainingHost> {
  const log = o.log ?? (() => {});
  const ctx = createServerContext({
    store: o.store,
    token: o.token,
    dataDir: o.dataDir,
    log,
    allowedKeyEnvs: o.allowedKeyEnvs,
    ...(o.served ? { policies: o.served } : {}),
  });
  const server: Server = await listen(createApp(ctx), ctx, '127.0.0.1', o.port ?? 0);
  const watchdog = new Watchdog(o.store, { onError: (e) => log(`watchdog: ${(e as Error)?.message ?? e}`) }).start();
  const runner = startRunner({ ...o, url: ctx.url });
  return {
    url: ctx.url,
    endpoint: `${ctx.url}/v1`,
    runner,
    async close() {
      if (runner) await runner.stop(5_000);
      await watchdog.stop();
      await closeGracefully(server, 1_000);
    },
  };
}

/** Runner workers (none for 0) claiming the agent's rollouts from the daemon at `url`, started. */
export function startRunner(o: Pick<HostOptions, 'token' | 'workers' | 'agent' | 'agentSpec' | 'log'> & { url: string }): Runner | null {
  if (o.workers <= 0) return null;
  const runner = new Runner({
    client: new AglClient({ url: o.url, token: o.token }),
    daemonUrl: o.url,
    token: o.token,
    workers: o.workers,
    agent: o.agent,
    ...(o.agentSpec ? { agentSpecs: { [o.agent]: o.agentSpec } } : {}),
    pollMs: { min: 20, max: 250 },
    log: o.log,
  });
  runner.start();
  return runner;
}
