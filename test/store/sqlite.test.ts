/**
 * SqliteStore: the shared conformance suite on a fresh database file per test, plus what only a file-backed
 * store has: data surviving a reopen, schema versioning, and waits that notice another process's writes.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { openStore } from '../../daemon/store/index.js';
import { SQLITE_SCHEMA_VERSION } from '../../daemon/store/sqlite-schema.js';
import { storeConformance } from './conformance.js';
import { changeFeedConformance } from './conformance-changes.js';
import { checkSearchBuilt, seedBeforeSearch } from './conformance-search.js';
import { checkStepsRenumbered, seedZeroBasedRun } from './step-migration.js';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'agl-sqlite-'));
}

storeConformance('sqlite', async () => {
  const dir = tempDir();
  const store = new SqliteStore(join(dir, 'store.sqlite'), { waitPollMs: 50 });
  return {
    store,
    cleanup: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

// `other` is a second connection to the same file, as `agl train` (another process) opens it.
changeFeedConformance('sqlite', async () => {
  const dir = tempDir();
  const store = new SqliteStore(join(dir, 'store.sqlite'));
  const other = new SqliteStore(join(dir, 'store.sqlite'));
  return {
    store,
    other,
    cleanup: async () => {
      await other.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('SqliteStore on disk', () => {
  it('keeps committed data across a reopen, in WAL mode with 16 KB pages and a schema version', async () => {
    const dir = tempDir();
    try {
      const store = await openStore({ dataDir: dir });
      assert.equal(store.kind, 'sqlite');
      const { rollout, attempt } = await store.startRollout({ input: 'x' }, 'w');
      await store.addSpans([{ rolloutId: rollout.id, attemptId: attempt.id, name: 'a', startTime: 1 }]);
      await store.close();
      const db = new Database(join(dir, 'store.sqlite'), { readonly: true });
      assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
      assert.equal(db.pragma('page_size', { simple: true }), 16384);
      assert.equal(db.pragma('user_version', { simple: true }), SQLITE_SCHEMA_VERSION);
      db.close();
      const again = await openStore(join(dir, 'store.sqlite'));
      assert.equal((await again.getRollout(rollout.id))?.status, 'running');
      assert.equal((await again.querySpans({ rolloutId: rollout.id })).length, 1);
      await again.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('checkpoints the WAL in a background worker, off the event loop', async () => {
    const dir = tempDir();
    const store = new SqliteStore(join(dir, 'store.sqlite'));
    try {
      assert.ok(store.checkpointer?.active, 'a checkpoint worker runs');
      const { rollout, attempt } = await store.startRollout({ input: 1 });
      const big = 'x'.repeat(2000);
      for (let i = 0; i < 20; i++) {
        await store.addSpans(
          Array.from({ length: 50 }, () => ({ rolloutId: rollout.id, attemptId: attempt.id, name: 's', startTime: 1, attributes: { big } })),
        );
      }
      const deadline = Date.now() + 30_000;
      while (!(store.checkpointer!.last && store.checkpointer!.last.log > 0 && store.checkpointer!.last.checkpointed === store.checkpointer!.last.log)) {
        assert.ok(Date.now() < deadline, `WAL not checkpointed: ${JSON.stringify(store.checkpointer!.last)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal((await store.querySpans({ rolloutId: rollout.id })).length, 1000);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a database written by a newer schema version', async () => {
    const dir = tempDir();
    try {
      const file = join(dir, 'store.sqlite');
      await new SqliteStore(file).close();
      const db = new Database(file);
      db.pragma(`user_version = ${SQLITE_SCHEMA_VERSION + 1}`);
      db.close();
      assert.throws(() => new SqliteStore(file), /newer than this agl supports/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('builds the search index and summaries on opening a store written before they existed (schema 1)', async () => {
    const dir = tempDir();
    try {
      const file = join(dir, 'store.sqlite');
      const store = new SqliteStore(file);
      const seeded = await seedBeforeSearch(store);
      await store.close();
      const db = new Database(file);
      db.exec(`DROP TABLE rollout_search; DROP INDEX rollouts_reward; DROP INDEX rollouts_run_step;
        ALTER TABLE rollouts DROP COLUMN final_reward; ALTER TABLE rollouts DROP COLUMN reward_final;
        ALTER TABLE rollouts DROP COLUMN reward_time; ALTER TABLE rollouts DROP COLUMN error_spans;`);
      db.pragma('user_version = 1');
      db.close();
      const reopened = new SqliteStore(file);
      try {
        await checkSearchBuilt(reopened, seeded);
      } finally {
        await reopened.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('numbers the training steps of runs recorded before from 1 on opening a store of schema 3', async () => {
    const dir = tempDir();
    try {
      const file = join(dir, 'store.sqlite');
      const store = new SqliteStore(file);
      const seeded = await seedZeroBasedRun(store);
      await store.close();
      const db = new Database(file);
      db.pragma('user_version = 3');
      db.close();
      const reopened = new SqliteStore(file);
      try {
        await checkStepsRenumbered(reopened, seeded);
      } finally {
        await reopened.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('wakes a waiter when another connection (as another process would) ends the rollout', async () => {
    const dir = tempDir();
    const file = join(dir, 'store.sqlite');
    const a = new SqliteStore(file, { waitPollMs: 50 });
    const b = new SqliteStore(file, { waitPollMs: 50 });
    try {
      const r = await a.enqueueRollout({ input: 1 });
      const waiting = a.waitForRollouts([r.id], 30_000);
      const c = (await b.claimNextRollout('w'))!;
      await b.finishAttempt(c.attempt.id, { status: 'succeeded' });
      assert.equal((await waiting)[0]?.status, 'succeeded');
    } finally {
      await a.close();
      await b.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
