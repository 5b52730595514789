/**
 * One warm worker process for one agent language: a forked node (with tsx) for TS/JS agents, or
 * `python3 agl_runner.py --serve` for Python. It stays alive across rollouts. A JS process may run
 * several jobs at once (`capacity`; async agents share the event loop, AsyncLocalStorage keeps their
 * contexts apart); a Python process runs one. A crash fails every job it held; a timed-out job fails at
 * once and its process is killed as soon as no other job is running in it (or at once when alone).
 */
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { SpanInput } from '../../protocol/store.js';
import { JS_WORKER_ENTRY, PY_RUNNER, tsxLoaderUrl } from './paths.js';
import type { FromWorker, JobOutcome, RunJob } from './protocol.js';

export type WorkerKind = 'js' | 'python';

export interface WorkerEnv {
  /** Daemon URL and token, for Python workers that post spans over HTTP themselves. */
  daemonUrl: string;
  token: string;
  cwd: string;
  python?: string;
}

interface Pending {
  resolve: (o: JobOutcome) => void;
  onSpans: (spans: SpanInput[]) => void;
  timer: NodeJS.Timeout | null;
}

export class WorkerProcess {
  private child: ChildProcess | null = null;
  private readonly pending = new Map<string, Pending>();
  /** Set when a job timed out while others ran: the process is killed once it is idle. */
  private tainted = false;
  private stderrTail = '';
  /** Jobs run by this process (a warm process serves many). */
  jobsRun = 0;
  spawned = 0;
  readonly capacity: number;

  constructor(
    readonly kind: WorkerKind,
    private readonly env: WorkerEnv,
    capacity = 1,
  ) {
    this.capacity = kind === 'python' ? 1 : Math.max(1, capacity);
  }

  get active(): number {
    return this.pending.size;
  }
  get hasRoom(): boolean {
    return this.pending.size < this.capacity;
  }

  private start(): ChildProcess {
    this.spawned++;
    this.tainted = false;
    this.stderrTail = '';
    const env = { ...process.env, AGL_DAEMON_URL: this.env.daemonUrl, AGL_TOKEN: this.env.token, AGL_WORKER: '1' };
    const child =
      this.kind === 'js'
        ? fork(JS_WORKER_ENTRY, [], { cwd: this.env.cwd, env, execArgv: ['--import', tsxLoaderUrl()], stdio: ['ignore', 'inherit', 'pipe', 'ipc'] })
        : spawn(this.env.python ?? 'python3', [PY_RUNNER, '--serve'], {
            cwd: this.env.cwd,
            env: { ...env, PYTHONPATH: [this.env.cwd, process.env.PYTHONPATH].filter(Boolean).join(':'), PYTHONUNBUFFERED: '1' },
            stdio: ['pipe', 'pipe', 'pipe'],
          });
    child.stderr?.on('data', (d: Buffer) => {
      process.stderr.write(d);
      this.stderrTail = (this.stderrTail + d.toString()).slice(-4000);
    });
    const onMessage = (msg: FromWorker) => {
      if (msg.type === 'spans') {
        // The worker batched them (one batch per attempt, sdk/runner/sink.ts): hand each attempt its spans as one batch.
        const byAttempt = new Map<string, SpanInput[]>();
        for (const span of msg.spans) {
          let batch = byAttempt.get(span.attemptId);
          if (!batch) byAttempt.set(span.attemptId, (batch = []));
          batch.push(span);
        }
        for (const [attemptId, batch] of byAttempt) this.pending.get(attemptId)?.onSpans(batch);
      } else if (msg.type === 'done') {
        this.settle(msg.attemptId, msg.outcome);
        this.jobsRun++;
      }
    };
    if (this.kind === 'js') child.on('message', onMessage);
    else {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        if (!line.startsWith('{')) {
          process.stdout.write(line + '\n');
          return;
        }
        try {
          onMessage(JSON.parse(line) as FromWorker);
        } catch {
          process.stdout.write(line + '\n');
        }
      });
    }
    child.on('exit', (code, signal) => {
      if (this.child === child) this.child = null;
      const tail = this.stderrTail.trim().split('\n').slice(-8).join('\n');
      for (const id of [...this.pending.keys()]) {
        this.settle(id, {
          status: 'failed',
          reward: null,
          error: { message: `agent process exited (${signal ?? `code ${code}`}) during the rollout${tail ? `:\n${tail}` : ''}` },
          unrecorded: true,
        });
      }
    });
    child.on('error', (err) => {
      for (const id of [...this.pending.keys()])
        this.settle(id, { status: 'failed', reward: null, error: { message: `could not start the ${this.kind} worker: ${err.message}` }, unrecorded: true });
    });
    return child;
  }

  private settle(attemptId: string, outcome: JobOutcome): void {
    const p = this.pending.get(attemptId);
    if (!p) return;
    this.pending.delete(attemptId);
    if (p.timer) clearTimeout(p.timer);
    p.resolve(outcome);
    if (this.tainted && this.pending.size === 0) this.kill();
  }

  /** Runs a job; resolves with its outcome (a crash or timeout is a failed outcome, never a throw). */
  run(job: RunJob, onSpans: (spans: SpanInput[]) => void, timeoutMs: number | null): Promise<JobOutcome> {
    if (!this.hasRoom) throw new Error(`worker process full (${this.capacity} jobs)`);
    if (!this.child || this.child.exitCode !== null) this.child = this.start();
    const child = this.child;
    return new Promise<JobOutcome>((resolve) => {
      const timer =
        timeoutMs === null
          ? null
          : setTimeout(() => {
              if (!this.pending.has(job.attemptId)) return;
              // Alone in the process: kill it now. Otherwise kill it once the others are done.
              if (this.pending.size === 1) this.kill();
              else this.tainted = true;
              this.settle(job.attemptId, {
                status: 'failed',
                reward: null,
                error: { message: `rollout timed out after ${Math.round(timeoutMs / 1000)} s: the agent process was killed` },
                unrecorded: true,
              });
            }, timeoutMs);
      this.pending.set(job.attemptId, { onSpans, resolve, timer });
      const msg = { type: 'run', job };
      if (this.kind === 'js') child.send(msg);
      else child.stdin!.write(JSON.stringify(msg) + '\n');
    });
  }

  kill(): void {
    const c = this.child;
    this.child = null;
    if (c && c.exitCode === null) c.kill('SIGKILL');
  }

  /** Asks the process to exit; kills it after graceMs. */
  async stop(graceMs = 2000): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise<void>((r) => c.once('exit', () => r()));
    try {
      if (this.kind === 'js') c.send({ type: 'shutdown' });
      else c.stdin!.end();
    } catch {
      /* already gone */
    }
    const timer = setTimeout(() => c.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
    if (this.child === c) this.child = null;
  }
}

/** Warm processes shared by a runner's slots: a job goes to a process of its kind with room, else a new one. */
export class WorkerPool {
  private readonly processes: WorkerProcess[] = [];

  constructor(
    private readonly env: WorkerEnv,
    private readonly jobsPerProcess = 1,
  ) {}

  acquire(kind: WorkerKind): WorkerProcess {
    const free = this.processes.find((p) => p.kind === kind && p.hasRoom);
    if (free) return free;
    const p = new WorkerProcess(kind, this.env, this.jobsPerProcess);
    this.processes.push(p);
    return p;
  }

  get size(): number {
    return this.processes.length;
  }

  killAll(): void {
    for (const p of this.processes) p.kill();
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.stop()));
  }
}
