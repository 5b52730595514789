/**
 * What prompt optimization's tests and `npm run bench:apo` run on: the scripted LLM server of the order desk
 * (samples/apo/scripted-llm.ts), a real daemon (SQLite store, store API, gateway: test/helpers/daemon.ts) and one
 * runner pool for every optimization run against it, as `agl optimize --url` runs against a daemon whose runners
 * are `agl runner` processes. Several runs share the pool, so their rollouts interleave as on a busy machine.
 */
import { Runner } from '../../daemon/runner/runner.js';
import { runOptimization, type OptimizeConnection, type OptimizeOutcome, type RunOptions } from '../../daemon/optimize/optimize-run.js';
import { planFromFlags } from '../../daemon/optimize/run-plan.js';
import type { OptimizeFlags } from '../../protocol/optimize-options.js';
import type { PromptCandidate } from '../../protocol/prompts.js';
import { deskFlags as demoFlags } from '../../samples/apo/demo.js';
import { AGENT_MODEL, OPTIMIZER_MODEL, type ScriptedLlm, type ScriptedOptions, startScriptedLlm } from '../../samples/apo/scripted-llm.js';
import { type Harness, startDaemon } from './daemon.js';

export { DESK_AGENT } from '../../samples/apo/demo.js';
export const PLANNER_AGENT = 'samples/apo/agent.ts#plannerAgent';

export interface OptimizeStack {
  llm: ScriptedLlm;
  daemon: Harness;
  conn: OptimizeConnection;
  /** Runs one optimization to its end against the stack (flags as `agl optimize` takes them, workers none of its own). */
  optimize(agent: string, flags: OptimizeFlags, o?: Partial<RunOptions>): Promise<OptimizeOutcome>;
  close(): Promise<void>;
}

/** `agl optimize`'s flags for an order desk agent on the scripted server (budget 300, seed 0), then these; no workers of its own. */
export function deskFlags(llm: ScriptedLlm, flags: OptimizeFlags = {}): OptimizeFlags {
  const models = { upstream: llm.url, upstreamModel: AGENT_MODEL, optimizer: llm.url, optimizerModel: OPTIMIZER_MODEL };
  return { ...demoFlags({ ...models, budget: '300', seed: '0' }), ...flags, workers: '0' };
}

export async function startOptimizeStack(o: { workers?: number; perProcess?: number; llm?: ScriptedOptions } = {}): Promise<OptimizeStack> {
  const llm = await startScriptedLlm(o.llm);
  const daemon = await startDaemon();
  const runner = new Runner({
    client: daemon.client,
    daemonUrl: daemon.url,
    token: daemon.token,
    workers: o.workers ?? 8,
    jobsPerProcess: o.perProcess ?? 4,
    pollMs: { min: 10, max: 100 },
    log: () => {},
  });
  runner.start();
  const conn: OptimizeConnection = { store: daemon.store, dataDir: daemon.dataDir, daemon: { url: daemon.url, token: daemon.token } };
  return {
    llm,
    daemon,
    conn,
    async optimize(agent, flags, ro = {}) {
      const plan = planFromFlags(agent, flags);
      const outcome = await runOptimization(plan, conn, { signal: new AbortController().signal, report: { log: () => {} }, backoffMs: 5, ...ro });
      if (!outcome) throw new Error('the run was stopped');
      return outcome;
    },
    async close() {
      await runner.stop(5_000);
      await daemon.close();
      await llm.close();
    },
  };
}

/** A run's candidates as a replay must reproduce them: texts, lineage (by ordinal), status, reason, scores; ids and times aside. */
export function candidateShapes(cs: PromptCandidate[]) {
  return cs.map((c) => ({
    prompts: c.prompts,
    parents: c.parents.map((p) => p.split('-').at(-1)),
    origin: c.origin,
    status: c.status,
    reason: c.reason,
    scores: c.scores,
  }));
}
