/**
 * What every sample test runs a rollout on: a real daemon (SQLite store, store API, gateway) whose LLM
 * resource forwards to a scripted upstream LLM, and a runner with one worker claiming from its queue.
 */
import type { Rollout } from '../../protocol/store.js';
import { Runner } from '../../daemon/runner/runner.js';
import { type Harness, startDaemon } from '../helpers/daemon.js';
import { type ChatBody, type ScriptedLlm, startScriptedLlm } from './scripted-llm.js';

export interface SampleDaemon {
  daemon: Harness;
  llm: ScriptedLlm;
  /** Enqueues one rollout of `agent` (with `metadata`, e.g. the training run and step it belongs to) and waits until it ends. */
  runToEnd(input: unknown, agent: string, metadata?: Record<string, unknown>): Promise<Rollout>;
  close(): Promise<void>;
}

export async function startSampleDaemon(reply: (body: ChatBody) => string): Promise<SampleDaemon> {
  const llm = await startScriptedLlm(reply);
  const daemon = await startDaemon();
  await daemon.client.addResources({
    resources: { llm: { type: 'llm', endpoint: `${daemon.url}/v1`, model: 'scripted', backend: 'upstream', upstreamUrl: llm.url } },
  });
  const runner = new Runner({ client: daemon.client, daemonUrl: daemon.url, token: daemon.token, workers: 1, pollMs: { min: 20, max: 200 }, log: () => {} });
  runner.start();
  return {
    daemon,
    llm,
    async runToEnd(input, agent, metadata = {}) {
      const r = await daemon.client.enqueueRollout({ input, agent, metadata });
      for (let i = 0; i < 60; i++) {
        const [done] = await daemon.client.waitForRollouts([r.id], 2000);
        if (done) return done;
      }
      throw new Error(`rollout ${r.id} did not end`);
    },
    async close() {
      await runner.stop(5000);
      await daemon.close();
      await llm.close();
    },
  };
}
