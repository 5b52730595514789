/**
 * Moves SQLite WAL checkpoints off the daemon's event loop. better-sqlite3 is synchronous, and an automatic
 * checkpoint runs inside whichever COMMIT crosses the threshold: it copies the WAL into the database and
 * fsyncs both, stalling every request for tens to hundreds of milliseconds. Instead a worker thread with its
 * own connection runs PASSIVE checkpoints on a timer (writers keep going meanwhile); the main connection
 * keeps a large automatic threshold only as a backstop in case the worker dies.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.modulePath);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 1000');
const timer = setInterval(() => {
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ type: 'checkpoint', busy: r.busy, log: r.log, checkpointed: r.checkpointed });
  } catch (e) {
    parentPort.postMessage({ type: 'error', message: String(e && e.message || e) });
  }
}, workerData.intervalMs);
parentPort.on('message', (m) => {
  if (m === 'stop') { clearInterval(timer); db.close(); parentPort.close(); }
});
`;

export interface CheckpointStatus {
  busy: number;
  log: number;
  checkpointed: number;
}

/** Where better-sqlite3 lives, resolved the way this process loaded it (tsx, bundle or plain node). */
function betterSqlitePath(): string | null {
  const bases = [
    typeof require === 'function' ? require : null,
    createRequire(process.argv[1] ?? join(process.cwd(), 'index.js')),
    createRequire(join(process.cwd(), 'index.js')),
  ];
  for (const r of bases) {
    try {
      if (r) return r.resolve('better-sqlite3');
    } catch {
      /* try the next */
    }
  }
  return null;
}

export class WalCheckpointer {
  private readonly worker: Worker | null;
  last: CheckpointStatus | null = null;
  private failing = false;
  checkpoints = 0;

  /** `onError` hears about the first failure of a run of failures (not every tick). */
  constructor(path: string, intervalMs = 500, onError: (message: string) => void = () => {}) {
    const modulePath = betterSqlitePath();
    if (!modulePath) {
      this.worker = null;
      return;
    }
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, modulePath, intervalMs } });
    this.worker.unref();
    this.worker.on('message', (m: { type: string; message?: string } & CheckpointStatus) => {
      if (m.type === 'checkpoint') {
        this.last = { busy: m.busy, log: m.log, checkpointed: m.checkpointed };
        this.checkpoints++;
        this.failing = false;
      } else if (!this.failing) {
        this.failing = true;
        onError(m.message ?? 'checkpoint failed');
      }
    });
    this.worker.on('error', (e) => onError(e.message));
  }

  /** True when checkpoints run in the worker (false: the main connection's automatic checkpoints do it). */
  get active(): boolean {
    return this.worker !== null;
  }

  async stop(): Promise<void> {
    if (!this.worker) return;
    const exited = new Promise<void>((resolve) => this.worker!.once('exit', () => resolve()));
    this.worker.postMessage('stop');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 2000))]);
  }
}
