/**
 * Test helper: runs the real `agl` CLI as a child process (node + tsx, as `npm test` loads TypeScript)
 * and a real daemon (`agl serve --port 0`) in a temp data dir, with an AglClient for it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AglClient } from '../../client/client.js';

/** The CLI entry, run the way scripts/run-tests.mjs runs tests: node --import tsx. */
const CLI = join(process.cwd(), 'daemon', 'cli.ts');

const created: string[] = [];
process.once('exit', () => {
  for (const dir of created) rmSync(dir, { recursive: true, force: true });
});

/** A fresh temp dir, removed when the test process exits. */
export function tempDataDir(label = 'server'): string {
  const dir = mkdtempSync(join(tmpdir(), `agl-${label}-test-`));
  created.push(dir);
  return dir;
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `agl <args>` to completion (in `cwd`, by default the test's). */
export function runCli(args: string[], env: Record<string, string> = {}, cwd?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

export interface DaemonProcess {
  child: ChildProcess;
  url: string;
  token: string;
  dataDir: string;
  client: AglClient;
  output(): { stdout: string; stderr: string };
  /** Sends a signal and resolves with the exit code / signal once the process has exited. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `agl serve --port 0 --data-dir <dataDir> ...extra` and waits for its "listening on" line. */
export function startDaemonProcess(dataDir = tempDataDir(), extra: string[] = []): Promise<DaemonProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve', '--port', '0', '--data-dir', dataDir, ...extra], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.once('exit', (code, signal) => res({ code, signal })));
    const onEarlyExit = (code: number | null) => reject(new Error(`agl serve exited (${code}) before listening:\n${stdout}\n${stderr}`));
    child.once('exit', onEarlyExit);
    child.stderr!.on('data', (d) => {
      stderr += d;
    });
    child.stdout!.on('data', (d) => {
      stdout += d;
      const m = /listening on (http:\/\/\S+)/.exec(stdout);
      if (!m || (child as { aglReady?: boolean }).aglReady) return;
      (child as { aglReady?: boolean }).aglReady = true;
      child.off('exit', onEarlyExit);
      const url = m[1];
      const token = readFileSync(join(dataDir, 'token'), 'utf8').trim();
      resolve({
        child,
        url,
        token,
        dataDir,
        client: new AglClient({ url, token }),
        output: () => ({ stdout, stderr }),
        async stop(signal = 'SIGTERM') {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          return exited;
        },
      });
    });
  });
}
