/**
 * Finding the local daemon from its data dir without a network call: which data dir (flag, AGL_DATA_DIR,
 * ~/.agent-lightning), and what `daemon.json` says (protocol/daemon-state.ts) with whether its pid is
 * alive. Shared by the client (AglClient.fromDataDir), the CLI and the extension; only the daemon writes
 * the file (daemon/state.ts).
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { DAEMON_STATE_FILE, DATA_DIR_ENV, DEFAULT_DATA_DIR_NAME, type DaemonStateReading, parseDaemonState } from '../protocol/daemon-state.js';

/** --data-dir, else AGL_DATA_DIR, else ~/.agent-lightning; always absolute. */
export function resolveDataDir(flag?: string): string {
  return resolve(flag || process.env[DATA_DIR_ENV] || join(homedir(), DEFAULT_DATA_DIR_NAME));
}

export function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by someone else
  }
}

/** Reads daemon.json without locking (the daemon rewrites it atomically with a rename). */
export function readDaemonState(dataDir: string): DaemonStateReading {
  let text: string;
  try {
    text = readFileSync(join(dataDir, DAEMON_STATE_FILE), 'utf8');
  } catch {
    return { state: null, running: false, stale: false };
  }
  const state = parseDaemonState(text);
  if (state?.pid == null) return { state, running: false, stale: false };
  const alive = state.pid === process.pid || isPidAlive(state.pid);
  return { state, running: alive, stale: !alive };
}
