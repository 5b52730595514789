/**
 * The daemon's side of its data dir: proving it writable, and writing the small state file
 * `<dataDir>/daemon.json` (lowdb; its format is protocol/daemon-state.ts, read by client/daemon-state.ts).
 * Only the daemon writes it (whole-file rewrites: never spans, never anything hot); the CLI, the client
 * and the extension read it to find the daemon.
 */
import { accessSync, chmodSync, constants, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LowSync } from 'lowdb';
import { JSONFileSync } from 'lowdb/node';
import type { KnownAgent } from '../protocol/api.js';
import { DAEMON_STATE_FILE, type DaemonState } from '../protocol/daemon-state.js';

/** Thrown when the data dir cannot be created or written; its message says what to do. */
export class DataDirError extends Error {}

/** Creates the data dir (mode 0700) and proves it writable by writing a probe file. */
export function ensureWritableDataDir(dataDir: string): void {
  const probe = join(dataDir, `.write-probe-${process.pid}`);
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    accessSync(dataDir, constants.W_OK);
    writeFileSync(probe, 'ok');
    rmSync(probe, { force: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new DataDirError(
      `data dir ${dataDir} is not writable (${code}: ${(err as Error).message}).\n` +
        `  Choose another with --data-dir <dir> (or the AGL_DATA_DIR environment variable), or fix its permissions.`,
    );
  }
}

/** Redacts a store spec for display and for daemon.json (no passwords in files). */
export function redactStoreSpec(spec: string): string {
  return spec.replace(/^(\w+:\/\/[^:/@]+):[^@]*@/, '$1:***@');
}

const AGENT_FLUSH_MS = 30_000;

/** The daemon's handle on daemon.json: the only writer. */
export class DaemonStateFile {
  private readonly db: LowSync<DaemonState>;
  private readonly agents = new Map<string, KnownAgent>();
  private dirty = false;
  private flushTimer: NodeJS.Timeout | null = null;
  private readonly file: string;

  constructor(
    readonly dataDir: string,
    defaults: Pick<DaemonState, 'tokenPath' | 'store' | 'version'>,
  ) {
    this.file = join(dataDir, DAEMON_STATE_FILE);
    const empty: DaemonState = { pid: null, url: null, host: null, port: null, startedAt: null, stoppedAt: null, agents: [], ...defaults };
    this.db = new LowSync<DaemonState>(new JSONFileSync(this.file), empty);
    try {
      this.db.read();
    } catch {
      this.db.data = empty; // a corrupt file is replaced: it holds nothing that cannot be rebuilt
    }
    this.db.data = { ...empty, ...this.db.data, ...defaults };
    for (const a of this.db.data.agents ?? []) this.agents.set(a.agent, a);
  }

  get data(): DaemonState {
    return this.db.data;
  }

  markRunning(info: { pid: number; url: string; host: string; port: number; startedAt: number }): void {
    Object.assign(this.db.data, info, { stoppedAt: null });
    this.write();
  }

  markStopped(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    Object.assign(this.db.data, { pid: null, url: null, stoppedAt: Date.now() });
    this.write();
  }

  /** Records an agent name seen in a rollout; new names are written at once, lastSeen at most every 30 s. */
  noteAgent(agent: string): void {
    const now = Date.now();
    const known = this.agents.get(agent);
    if (known) {
      known.lastSeen = now;
      this.dirty = true;
      if (!this.flushTimer) {
        this.flushTimer = setTimeout(() => {
          this.flushTimer = null;
          if (this.dirty) this.write();
        }, AGENT_FLUSH_MS);
        this.flushTimer.unref();
      }
      return;
    }
    this.agents.set(agent, { agent, firstSeen: now, lastSeen: now });
    this.write();
  }

  knownAgents(): KnownAgent[] {
    return [...this.agents.values()].sort((a, b) => b.lastSeen - a.lastSeen);
  }

  private write(): void {
    this.db.data.agents = this.knownAgents();
    this.dirty = false;
    this.db.write();
    // lowdb writes a new file and renames it over the old one, with the process's umask: keep it owner-only
    // like every other file in the data dir (it names the agents of this workspace).
    try {
      chmodSync(this.file, 0o600);
    } catch {
      /* a read-only or foreign file system: the 0700 dir still guards it */
    }
  }
}
