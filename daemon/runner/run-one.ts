/**
 * One rollout of an agent, run now in this process's own worker processes against a daemon (`agl rollout`): enqueued
 * and claimed at once, executed as a runner worker executes it, then read back (its attempts and spans).
 */
import type { Claim } from '../../protocol/api.js';
import type { Attempt, RolloutMode, Span } from '../../protocol/store.js';
import type { AglClient } from '../../client/client.js';
import { executeClaim, type ExecuteResult } from './execute.js';
import { WorkerProcess } from './worker-process.js';

export interface OneRollout {
  claim: Claim;
  result: ExecuteResult;
  attempts: Attempt[];
  spans: Span[];
}

/** Runs `agent` (its stable id) on `task` once; `python` runs a Python agent, `log` says what the worker says. */
export async function runOneRollout(
  conn: { client: AglClient; url: string; token: string },
  o: { agent: string; task: unknown; mode: RolloutMode; timeoutSeconds: number | null; python?: string; cwd: string; log: (m: string) => void },
): Promise<OneRollout> {
  const claim = await conn.client.startRollout(
    { input: o.task, agent: o.agent, mode: o.mode, config: o.timeoutSeconds ? { timeoutSeconds: o.timeoutSeconds } : {} },
    `agl-rollout-${process.pid}`,
  );
  const workers = new Map<string, WorkerProcess>();
  let result: ExecuteResult;
  try {
    result = await executeClaim(
      claim,
      (kind) => {
        let w = workers.get(kind);
        if (!w) {
          w = new WorkerProcess(kind, { daemonUrl: conn.url, token: conn.token, cwd: o.cwd, python: o.python });
          workers.set(kind, w);
        }
        return w;
      },
      { client: conn.client, daemonUrl: conn.url, cwd: o.cwd, log: o.log },
    );
  } finally {
    await Promise.all([...workers.values()].map((w) => w.stop()));
  }
  const [spans, attempts] = await Promise.all([conn.client.querySpans({ rolloutId: claim.rollout.id }), conn.client.getAttempts(claim.rollout.id)]);
  return { claim, result, attempts, spans };
}
