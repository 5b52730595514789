/**
 * The training host: an `agl train` process serves the policy it trains. It binds the store API and
 * the OpenAI-compatible gateway (serving this very policy object, so every update is live for the next
 * rollouts) on 127.0.0.1, and starts runner workers that claim this run's rollouts and execute the agent
 * in worker processes. Remote `agl runner` processes can join through the same URL and token.
 */
import type { Server } from 'node:http';
import express from 'express';
import type { PolicyModel } from '../model/api.js';
import { closeGracefully, createApp, createServerContext, listen } from '../server/app.js';
import { gatewayRouter } from '../server/gateway.js';
import { Runner } from '../runner/runner.js';
import type { LightningStore } from '../store/types.js';
import { AglClient } from '../../sdk/client.js';

export interface TrainingHost { url: string; endpoint: string; runner: Runner | null; close(): Promise<void> }

export interface HostOptions {
  store: LightningStore;
  policy: PolicyModel;
  token: string;
  dataDir: string;
  /** Runner workers started in this process (0 = rely on external `agl runner` processes). */
  workers: number;
  agent: string;
  port?: number;
  log?: (m: string) => void;
}

export async function startTrainingHost(o: HostOptions): Promise<TrainingHost> {
  const ctx = createServerContext({ store: o.store, token: o.token, dataDir: o.dataDir, log: o.log ?? (() => {}) });
  const outer = express();
  outer.use(gatewayRouter({ store: o.store, token: o.token, getPolicy: () => o.policy }));
  outer.use(createApp(ctx));
  const server: Server = await listen(outer as unknown as express.Express, ctx, '127.0.0.1', o.port ?? 0);
  let runner: Runner | null = null;
  if (o.workers > 0) {
    runner = new Runner({
      client: new AglClient({ url: ctx.url, token: o.token }), daemonUrl: ctx.url, token: o.token, workers: o.workers,
      agent: o.agent, pollMs: { min: 20, max: 250 }, log: o.log,
    });
    runner.start();
  }
  return {
    url: ctx.url, endpoint: `${ctx.url}/v1`, runner,
    async close() {
      if (runner) await runner.stop(5_000);
      await closeGracefully(server, 1_000);
    },
  };
}
