/**
 * The daemon's state file, `<dataDir>/daemon.json`: the boundary between the daemon (its only writer,
 * daemon/state.ts) and whoever looks for it (the CLI, the SDK's client, the extension: client/daemon-state.ts
 * reads it). Where the running daemon listens, its pid, the token's path, which store it uses, when it
 * started, and the registry of agents it has seen. A pid that no longer exists marks the state stale.
 */
import type { KnownAgent } from './api.js';

/** The state file's name in the data dir. */
export const DAEMON_STATE_FILE = 'daemon.json';
/** The bearer token's file in the data dir (mode 0600). */
export const TOKEN_FILE = 'token';
/** The environment variable naming the data dir; without it (or a --data-dir flag) it is `~/${DEFAULT_DATA_DIR_NAME}`. */
export const DATA_DIR_ENV = 'AGL_DATA_DIR';
export const DEFAULT_DATA_DIR_NAME = '.agent-lightning';

export interface DaemonState {
  /** null when the daemon stopped cleanly. */
  pid: number | null;
  url: string | null;
  host: string | null;
  port: number | null;
  tokenPath: string;
  /** Store spec, password removed: `sqlite:<path>` or `postgres://user@host/db`. */
  store: string;
  startedAt: number | null;
  stoppedAt: number | null;
  version: string;
  agents: KnownAgent[];
}

export interface DaemonStateReading {
  state: DaemonState | null;
  /** The recorded pid is alive (the daemon is probably up: confirm with GET /health). */
  running: boolean;
  /** The state says running but its pid is gone (killed, crashed). */
  stale: boolean;
}

/** The state from the file's text; null when it is not a JSON object (missing fields are the writer's defaults' job). */
export function parseDaemonState(text: string): DaemonState | null {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as DaemonState) : null;
  } catch {
    return null;
  }
}
