/**
 * Starts a real daemon app for tests and benchmarks: SQLite store in a temp dir, the store API, the
 * LLM gateway and the OTLP receiver, bound to 127.0.0.1 on a free port; plus an AglClient for it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeGracefully, createApp, listen } from '../../daemon/server/app.js';
import { createServerContext } from '../../daemon/server/server-context.js';
import type { PolicyModel } from '../../daemon/model/policy-contract.js';
import { servedModels } from '../../daemon/server/served-policies.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { AglClient } from '../../client/client.js';
import type { Rollout, RolloutInput } from '../../protocol/store.js';
import { Runner } from '../../daemon/runner/runner.js';
import { type FakeUpstream, startFakeUpstream } from './fake-upstream.js';

export interface Harness {
  url: string;
  token: string;
  store: SqliteStore;
  client: AglClient;
  dataDir: string;
  close(): Promise<void>;
}

/**
 * `getPolicy`: the models the daemon serves itself, by name (as `agl serve --model` gives the gateway its policy);
 * `updates`: each one's training updates (what a served checkpoint records with each call), none when absent.
 */
export async function startDaemon(
  opts: { getPolicy?: (name: string) => PolicyModel | null; updates?: (name: string) => number | null } = {},
): Promise<Harness> {
  const dataDir = mkdtempSync(join(tmpdir(), 'agl-runner-test-'));
  const store = new SqliteStore(join(dataDir, 'store.sqlite'));
  const token = 'test-token-0123456789abcdef';
  const policies = opts.getPolicy ? { ...servedModels(opts.getPolicy), ...(opts.updates ? { version: opts.updates } : {}) } : undefined;
  const ctx = createServerContext({ store, token, dataDir, log: () => {}, ...(policies ? { policies } : {}) });
  const server = await listen(createApp(ctx), ctx, '127.0.0.1', 0);
  const client = new AglClient({ url: ctx.url, token });
  return {
    url: ctx.url,
    token,
    store,
    client,
    dataDir,
    async close() {
      await closeGracefully(server, 1000);
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * The daemon above, its LLM resource forwarding to a fake OpenAI-protocol upstream, and runner workers
 * claiming its rollouts: what every "agent through the runner" test starts with.
 */
export interface RunnerStack {
  daemon: Harness;
  upstream: FakeUpstream;
  /** The runner workers; a test may replace it (close() stops the current one). */
  runner: Runner;
  /** Enqueues a rollout and waits until it has ended. */
  runToEnd(input: RolloutInput): Promise<Rollout>;
  close(): Promise<void>;
}

export async function startRunnerStack(workers = 1): Promise<RunnerStack> {
  const upstream = await startFakeUpstream();
  const daemon = await startDaemon();
  await daemon.client.addResources({
    resources: { llm: { type: 'llm', endpoint: `${daemon.url}/v1`, model: 'fake-model', backend: 'upstream', upstreamUrl: upstream.url } },
  });
  const runner = new Runner({ client: daemon.client, daemonUrl: daemon.url, token: daemon.token, workers, pollMs: { min: 20, max: 200 }, log: () => {} });
  runner.start();
  const stack: RunnerStack = {
    daemon,
    upstream,
    runner,
    async runToEnd(input) {
      const r = await daemon.client.enqueueRollout(input);
      for (let i = 0; i < 100; i++) {
        const [done] = await daemon.client.waitForRollouts([r.id], 2000);
        if (done) return done;
      }
      throw new Error(`rollout ${r.id} did not end`);
    },
    // Stops the runner the stack holds now (a test may have replaced it).
    async close() {
      await stack.runner.stop(5000);
      await daemon.close();
      await upstream.close();
    },
  };
  return stack;
}
