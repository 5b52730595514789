/**
 * The runner: N worker slots, each claiming rollouts from the daemon's queue and running them in warm
 * worker processes (WorkerPool: one rollout per process by default, `jobsPerProcess` for more). Slots heartbeat as store workers; stop() stops
 * claiming, lets running attempts finish within a grace period, then kills what is left (those
 * attempts end failed and the store requeues them per their config).
 */
import { hostname } from 'node:os';
import type { AglClient } from '../../client/client.js';
import type { ResourcesCache } from '../store/resources-cache.js';
import { PromotedPromptsCache } from './attempt-prompts.js';
import { type ExecuteResult, executeClaim, runnerResourcesCache } from './execute.js';
import { WorkerPool } from './worker-process.js';

export interface RunnerOptions {
  client: AglClient;
  daemonUrl: string;
  token: string;
  workers: number;
  cwd?: string;
  /** Claim only rollouts of this agent (and those naming none, which it runs). */
  agent?: string;
  /** What to run for a stored agent id whose file its id alone may not find from `cwd` (execute.ts ExecuteOptions.agentSpecs). */
  agentSpecs?: Record<string, string>;
  defaultTimeoutSeconds?: number | null;
  /** Idle polling interval bounds (ms). */
  pollMs?: { min: number; max: number };
  python?: string;
  /**
   * Rollouts one TS/JS worker process runs at once (default 1: each rollout has a process to itself).
   * Raise it for many I/O-bound rollouts (hundreds of runners cannot each have a node process).
   */
  jobsPerProcess?: number;
  log?: (message: string) => void;
  onResult?: (result: ExecuteResult) => void;
}

class Slot {
  busy = false;
  constructor(readonly id: string) {}
}

export class Runner {
  private readonly slots: Slot[];
  private stopping = false;
  private loops: Promise<void>[] = [];
  private wake: (() => void)[] = [];
  /** The resources rollouts run with, and their agents' promoted prompts, cached across all slots. */
  private readonly resources: ResourcesCache;
  private readonly promoted: PromotedPromptsCache;
  private readonly pool: WorkerPool;
  completed = 0;
  failed = 0;

  constructor(private readonly opts: RunnerOptions) {
    const prefix = `${hostname()}-${process.pid}`;
    this.slots = Array.from({ length: opts.workers }, (_, i) => new Slot(`${prefix}-w${i}`));
    this.resources = runnerResourcesCache(opts.client);
    this.promoted = new PromotedPromptsCache(opts.client);
    this.pool = new WorkerPool({ daemonUrl: opts.daemonUrl, token: opts.token, cwd: opts.cwd ?? process.cwd(), python: opts.python }, opts.jobsPerProcess ?? 1);
  }

  /** Worker processes started so far (warm ones are reused). */
  get processCount(): number {
    return this.pool.size;
  }

  get workerIds(): string[] {
    return this.slots.map((s) => s.id);
  }

  start(): void {
    this.loops = this.slots.map((slot) => this.loop(slot));
  }

  private log(m: string): void {
    (this.opts.log ?? ((x) => console.error(x)))(m);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        const i = this.wake.indexOf(done);
        if (i >= 0) this.wake.splice(i, 1);
        resolve();
      };
      const t = setTimeout(done, ms);
      this.wake.push(done);
    });
  }

  private async loop(slot: Slot): Promise<void> {
    const { min, max } = this.opts.pollMs ?? { min: 50, max: 1000 };
    let idle = min;
    let lastBeat = 0;
    while (!this.stopping) {
      try {
        if (Date.now() - lastBeat > 5_000) {
          lastBeat = Date.now();
          await this.opts.client.heartbeatWorker(slot.id, { status: 'idle', currentRolloutId: null, currentAttemptId: null });
        }
        const claim = await this.opts.client.claimNextRollout(slot.id, this.opts.agent ? { agent: this.opts.agent } : {});
        if (!claim) {
          await this.sleep(idle + Math.random() * idle * 0.5);
          idle = Math.min(max, idle * 2);
          continue;
        }
        idle = min;
        slot.busy = true;
        void this.opts.client
          .heartbeatWorker(slot.id, { status: 'busy', currentRolloutId: claim.rollout.id, currentAttemptId: claim.attempt.id })
          .catch(() => {});
        const result = await executeClaim(claim, (kind) => this.pool.acquire(kind), {
          client: this.opts.client,
          daemonUrl: this.opts.daemonUrl,
          cwd: this.opts.cwd ?? process.cwd(),
          defaultAgent: this.opts.agent,
          agentSpecs: this.opts.agentSpecs,
          defaultTimeoutSeconds: this.opts.defaultTimeoutSeconds,
          log: (m) => this.log(m),
          resources: this.resources,
          promoted: this.promoted,
        });
        if (result.outcome.status === 'succeeded') this.completed++;
        else this.failed++;
        if (result.outcome.status === 'failed')
          this.log(`rollout ${claim.rollout.id} attempt ${claim.attempt.sequence} failed: ${result.outcome.error?.message.split('\n')[0]}`);
        this.opts.onResult?.(result);
      } catch (err) {
        this.log(`worker ${slot.id}: ${(err as Error).message}`);
        await this.sleep(max);
      } finally {
        slot.busy = false;
      }
    }
  }

  /** Stops claiming; waits up to graceMs for running attempts, then kills their processes. */
  async stop(graceMs = 30_000): Promise<void> {
    this.stopping = true;
    for (const w of this.wake.splice(0)) w();
    const all = Promise.all(this.loops);
    const timer = setTimeout(() => this.pool.killAll(), graceMs);
    await all;
    clearTimeout(timer);
    await this.pool.stopAll();
    await Promise.all(
      this.slots.map((s) => this.opts.client.heartbeatWorker(s.id, { status: 'offline', currentRolloutId: null, currentAttemptId: null }).catch(() => {})),
    );
  }
}
