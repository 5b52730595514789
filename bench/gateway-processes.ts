/**
 * Processes the gateway and ingest benchmarks run against: a real `agl serve` daemon (SQLite in a temp
 * data dir) and the fake OpenAI-protocol upstream (test/helpers/fake-upstream.ts) in its own process,
 * so the load generator does not share an event loop with what it measures. Plus small stats helpers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { AglClient } from '../client/client.js';
import { SERVE_COMMAND } from '../protocol/cli-commands.js';
import { commandLine } from '../protocol/cli-options.js';

export interface Proc {
  proc: ChildProcess;
  url: string;
  stop(): Promise<void>;
}

function waitForLine(proc: ChildProcess, pattern: RegExp, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = pattern.exec(out);
      if (m) {
        proc.stdout?.off('data', onData);
        proc.stderr?.off('data', onData);
        resolve(m[1]);
      }
    };
    proc.stdout?.on('data', onData);
    proc.stderr?.on('data', onData);
    proc.once('exit', (code) => reject(new Error(`${what} exited (${code}) before it was ready:\n${out}`)));
  });
}

function stopper(proc: ChildProcess): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      if (proc.exitCode !== null) {
        resolve();
        return;
      }
      proc.once('exit', () => resolve());
      proc.kill('SIGTERM');
      setTimeout(() => proc.kill('SIGKILL'), 5000).unref();
    });
}

export async function startDaemonProcess(): Promise<Proc & { client: AglClient; token: string; pid: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'agl-bench-'));
  // AGL_BENCH_PROFILE=<dir> writes a CPU profile of the daemon there (to see where its time goes).
  const profile = process.env.AGL_BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', process.env.AGL_BENCH_PROFILE] : [];
  const proc = spawn(
    process.execPath,
    [...profile, '--import', 'tsx', join(process.cwd(), 'daemon', 'cli.ts'), ...commandLine(SERVE_COMMAND, { port: '0', 'data-dir': dataDir })],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const url = await waitForLine(proc, /listening on (http:\/\/\S+)/, 'agl serve');
  const token = readFileSync(join(dataDir, 'token'), 'utf8').trim();
  const stop = stopper(proc);
  return {
    proc,
    url,
    token,
    pid: proc.pid!,
    client: new AglClient({ url, token }),
    stop: async () => {
      await stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function startUpstreamProcess(): Promise<Proc> {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(process.cwd(), 'bench', 'fake-upstream-main.ts')], { stdio: ['ignore', 'pipe', 'pipe'] });
  const url = await waitForLine(proc, /upstream at (http:\/\/\S+)/, 'fake upstream');
  return { proc, url, stop: stopper(proc) };
}

/** Peak resident set size of a process, from /proc (Linux); null elsewhere. */
export function peakRssMb(pid: number): number | null {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/** CPU time (user + system) a process has used so far, in ms, from /proc (Linux); null elsewhere. */
export function cpuMs(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime in clock ticks (USER_HZ = 100)
  } catch {
    return null;
  }
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export function machine(): string {
  return `${cpus().length}x ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`;
}

export const round = (x: number, digits = 3) => Math.round(x * 10 ** digits) / 10 ** digits;
