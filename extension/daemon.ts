/**
 * Finding or starting the daemon: attach to the one recorded in `<dataDir>/daemon.json` when its pid is
 * alive and /health answers, else spawn the bundled `agl serve` and wait until it has recorded itself.
 * No vscode API here: Ctx (ctx.ts) owns the lifecycle and decides what to tell the user.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readDaemonState, resolveDataDir } from '../client/daemon-state.js';
import type { DaemonEndpoint } from '../protocol/lsp.js';
import { SERVE_COMMAND } from '../protocol/cli-commands.js';
import { commandLine } from '../protocol/cli-options.js';

export interface DaemonHandle {
  endpoint: DaemonEndpoint & { token: string };
  pid: number;
  dataDir: string;
  /** Set when this extension spawned it (then it also stops it). */
  child: ChildProcess | null;
}

export interface SpawnOptions {
  node: string;
  agl: string;
  port: number;
  dataDir: string;
  storeUrl: string;
  /** The policy the daemon's gateway serves to rollouts of local-model resources (`agl serve --model`). */
  model: string;
  cwd: string | undefined;
  onOutput: (line: string) => void;
}

/** GET /health within `timeoutMs`; true when it answers 200. */
export async function healthy(url: string, timeoutMs = 2000): Promise<boolean> {
  try {
    const res = await fetch(`${url.replace(/\/+$/, '')}/health`, { signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

/** The running daemon of this data dir, when one answers. */
export async function findRunningDaemon(dataDirSetting: string): Promise<DaemonHandle | null> {
  const dataDir = resolveDataDir(dataDirSetting || undefined);
  const reading = readDaemonState(dataDir);
  const state = reading.state;
  if (!reading.running || !state?.url || !state.pid) return null;
  if (!(await healthy(state.url))) return null;
  const token = readFileSync(state.tokenPath, 'utf8').trim();
  return { endpoint: { url: state.url, token }, pid: state.pid, dataDir, child: null };
}

/** Why a spawned daemon did not come up: its exit code and last output lines. */
export class DaemonStartError extends Error {
  constructor(
    message: string,
    readonly output: string,
    readonly portTaken: boolean,
  ) {
    super(message);
  }
}

/** Spawns `agl serve` and resolves once daemon.json names its pid and /health answers. */
export async function spawnDaemon(opts: SpawnOptions, timeoutMs = 60_000): Promise<DaemonHandle> {
  const dataDir = resolveDataDir(opts.dataDir || undefined);
  const args = [
    opts.agl,
    ...commandLine(SERVE_COMMAND, { port: String(opts.port), 'data-dir': dataDir, store: opts.storeUrl || undefined, model: opts.model || undefined }),
  ];
  opts.onOutput(`$ ${opts.node} ${args.join(' ')}`);
  const child = spawn(opts.node, args, { cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, AGL_DATA_DIR: dataDir } });
  const recent: string[] = [];
  const onData = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split(/\r?\n/)) {
      if (!line) continue;
      recent.push(line);
      if (recent.length > 20) recent.shift();
      opts.onOutput(line);
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const ended: { exit: { code: number | null; signal: string | null; error?: Error } | null } = { exit: null };
  child.once('exit', (code, signal) => {
    ended.exit ??= { code, signal };
  });
  child.once('error', (error) => {
    ended.exit ??= { code: null, signal: null, error };
  });

  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const exit = ended.exit;
    if (exit) {
      const output = recent.join('\n');
      const why = exit.error
        ? `could not run ${opts.node}: ${exit.error.message} (the daemon needs Node.js 20+: install it, or set agentLightning.nodePath)`
        : `exited with ${exit.signal ?? `code ${exit.code}`}`;
      throw new DaemonStartError(`agl serve ${why}${output ? `: ${recent[recent.length - 1]}` : ''}`, output, /already in use/.test(output));
    }
    const { running, state } = readDaemonState(dataDir);
    if (running && state && state.pid === child.pid && state.url && (await healthy(state.url))) {
      const token = readFileSync(state.tokenPath, 'utf8').trim();
      return { endpoint: { url: state.url, token }, pid: child.pid!, dataDir, child };
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  child.kill('SIGTERM');
  throw new DaemonStartError(`agl serve did not become ready within ${timeoutMs / 1000} s`, recent.join('\n'), false);
}

/** Stops a daemon: SIGTERM (graceful: it finishes requests and closes the store), SIGKILL after `graceMs`. */
export async function stopDaemon(handle: DaemonHandle, graceMs = 8000): Promise<void> {
  const alive = () => {
    try {
      process.kill(handle.pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (handle.child && handle.child.exitCode === null && handle.child.signalCode === null) {
    const exited = new Promise<void>((r) => handle.child!.once('exit', () => r()));
    handle.child.kill('SIGTERM');
    const timer = setTimeout(() => handle.child!.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
    return;
  }
  if (!alive()) return;
  process.kill(handle.pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (alive()) process.kill(handle.pid, 'SIGKILL');
}
