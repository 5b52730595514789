/**
 * Exactly-once claims across OS processes: 8 processes race to claim 10,000 rollouts from one store.
 * Every rollout must be claimed by exactly one process and none may be left or lost. Runs on SQLite (one
 * file, BEGIN IMMEDIATE) and on PostgreSQL (SELECT ... FOR UPDATE SKIP LOCKED).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../daemon/store/index.js';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';

const WORKER = join(process.cwd(), 'test', 'store', 'claim-worker.ts');
const PROCESSES = 8;
const ROLLOUTS = 10_000;

function startWorker(spec: string, id: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, spec, id], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let markReady!: () => void;
  const ready = new Promise<void>((r) => (markReady = r));
  child.stdout.on('data', (d) => {
    out += d;
    if (out.startsWith('ready\n')) markReady();
  });
  child.stderr.on('data', (d) => {
    err += d;
  });
  const result = new Promise<string[]>((resolve, reject) =>
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`worker ${id} exited with ${code}: ${err}`));
      resolve(JSON.parse(out.slice('ready\n'.length)));
    }),
  );
  result.catch(() => markReady());
  return { ready, result, go: () => child.stdin.end('go\n') };
}

async function raceClaims(spec: string): Promise<void> {
  const store = await openStore(spec);
  try {
    const enqueued = new Set<string>();
    for (let i = 0; i < ROLLOUTS; i += 1000) {
      for (const r of await store.enqueueRollouts(Array.from({ length: 1000 }, (_, j) => ({ input: i + j })))) enqueued.add(r.id);
    }
    const workers = Array.from({ length: PROCESSES }, (_, i) => startWorker(spec, `proc-${i}`));
    await Promise.all(workers.map((w) => w.ready));
    workers.forEach((w) => w.go());
    const perWorker = await Promise.all(workers.map((w) => w.result));
    const all = perWorker.flat();
    assert.equal(all.length, ROLLOUTS, 'claims in total');
    assert.equal(new Set(all).size, ROLLOUTS, 'no rollout claimed twice');
    assert.ok(all.every((id) => enqueued.has(id)));
    assert.ok(perWorker.filter((ids) => ids.length > 0).length >= 2, 'several processes took part');
    const stats = await store.statistics();
    assert.equal(stats.rollouts.queuing, 0, 'none left behind');
    assert.equal(stats.rollouts.preparing, ROLLOUTS);
    assert.equal(stats.attempts.preparing, ROLLOUTS, 'one attempt per rollout');
  } finally {
    await store.close();
  }
}

describe(`${PROCESSES} processes claiming ${ROLLOUTS} rollouts`, () => {
  let pg: PostgresServer;
  before(async () => {
    pg = await startPostgres();
  });
  after(async () => {
    await pg?.stop();
  });

  it('SQLite: each rollout claimed exactly once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agl-claims-'));
    try {
      await raceClaims(join(dir, 'store.sqlite'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('PostgreSQL: each rollout claimed exactly once', async () => {
    await raceClaims(await pg.createDatabase());
  });
});
