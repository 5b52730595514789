/**
 * One warm worker process for one agent language: a forked node (with tsx) for TS/JS agents, or
 * `python3 agl_runner.py --serve` for Python. Runs one job at a time, reports spans as they come,
 * and is killed (then respawned on the next job) when a job times out or the process crashes.
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

interface Pending { attemptId: string; resolve: (o: JobOutcome) => void; onSpans: (spans: SpanInput[]) => void }


export class WorkerProcess {
  private child: ChildProcess | null = null;
  private pending: Pending | null = null;
  private stderrTail = '';
  /** Jobs run by this process (a warm process serves many). */
  jobsRun = 0;
  spawned = 0;

  constructor(readonly kind: WorkerKind, private readonly env: WorkerEnv) {}

  private start(): ChildProcess {
    this.spawned++;
    const env = { ...process.env, AGL_DAEMON_URL: this.env.daemonUrl, AGL_TOKEN: this.env.token, AGL_WORKER: '1' };
    const child = this.kind === 'js'
      ? fork(JS_WORKER_ENTRY, [], { cwd: this.env.cwd, env, execArgv: ['--import', tsxLoaderUrl()], stdio: ['ignore', 'inherit', 'pipe', 'ipc'] })
      : spawn(this.env.python ?? 'python3', [PY_RUNNER, '--serve'], { cwd: this.env.cwd, env: { ...env, PYTHONPATH: [this.env.cwd, process.env.PYTHONPATH].filter(Boolean).join(':'), PYTHONUNBUFFERED: '1' }, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stderr?.on('data', (d: Buffer) => {
      process.stderr.write(d);
      this.stderrTail = (this.stderrTail + d.toString()).slice(-4000);
    });
    const onMessage = (msg: FromWorker) => {
      const p = this.pending;
      if (!p) return;
      if (msg.type === 'spans') p.onSpans(msg.spans);
      else if (msg.type === 'done' && msg.attemptId === p.attemptId) { this.pending = null; this.jobsRun++; p.resolve(msg.outcome); }
    };
    if (this.kind === 'js') child.on('message', onMessage);
    else {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        if (!line.startsWith('{')) { process.stdout.write(line + '\n'); return; }
        try { onMessage(JSON.parse(line) as FromWorker); } catch { process.stdout.write(line + '\n'); }
      });
    }
    child.on('exit', (code, signal) => {
      if (this.child === child) this.child = null;
      const p = this.pending;
      if (p) {
        this.pending = null;
        const tail = this.stderrTail.trim().split('\n').slice(-8).join('\n');
        p.resolve({ status: 'failed', reward: null, error: { message: `agent process exited (${signal ?? `code ${code}`}) during the rollout${tail ? `:\n${tail}` : ''}` } });
      }
    });
    child.on('error', (err) => {
      const p = this.pending;
      if (p) { this.pending = null; p.resolve({ status: 'failed', reward: null, error: { message: `could not start the ${this.kind} worker: ${err.message}` } }); }
    });
    return child;
  }

  /** Runs a job; resolves with its outcome (a crash or timeout is a failed outcome, never a throw). */
  run(job: RunJob, onSpans: (spans: SpanInput[]) => void, timeoutMs: number | null): Promise<JobOutcome> {
    if (this.pending) throw new Error('worker busy');
    if (!this.child || this.child.exitCode !== null) this.child = this.start();
    this.stderrTail = '';
    const child = this.child;
    return new Promise<JobOutcome>((resolve) => {
      let timer: NodeJS.Timeout | null = null;
      this.pending = { attemptId: job.attemptId, onSpans, resolve: (o) => { if (timer) clearTimeout(timer); resolve(o); } };
      if (timeoutMs !== null) {
        timer = setTimeout(() => {
          const p = this.pending;
          if (!p || p.attemptId !== job.attemptId) return;
          this.pending = null;
          this.kill();
          resolve({ status: 'failed', reward: null, error: { message: `rollout timed out after ${Math.round(timeoutMs / 1000)} s: the agent process was killed` } });
        }, timeoutMs);
      }
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

  /** Asks the process to exit after its current job; kills it after graceMs. */
  async stop(graceMs = 2000): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise<void>((r) => c.once('exit', () => r()));
    try { if (this.kind === 'js') c.send({ type: 'shutdown' }); else c.stdin!.end(); } catch { /* already gone */ }
    const timer = setTimeout(() => c.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
    if (this.child === c) this.child = null;
  }
}
