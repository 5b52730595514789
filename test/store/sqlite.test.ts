/**
 * SqliteStore: the shared conformance suite on a fresh database file per test, plus what only a file-backed
 * store has: data surviving a reopen, schema versioning, and waits that notice another process's writes.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { openStore } from '../../daemon/store/index.js';
import { SQLITE_SCHEMA_VERSION } from '../../daemon/store/sqlite-schema.js';
import { storeConformance } from './conformance.js';
import { changeFeedConformance } from './conformance-changes.js';
import { checkSearchBuilt, seedBeforeSearch } from './conformance-search.js';
import { checkStepsRenumbered, seedZeroBasedRun } from './step-migration.js';
import { checkPolicyGaps, seedPolicyZeros } from './policy-gaps-migration.js';
import { SCHEMA_7_ADDED, checkKindsMigrated, seedBeforeKinds } from './kinds-migration.js';
import { checkServedBuilt, seedBeforeServed } from './conformance-served.js';
import type { StoreChange } from '../../protocol/events.js';

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

  it("turns a policy's made-up 0s of steps without its update into gaps on opening a store of schema 5", async () => {
    const dir = tempDir();
    try {
      const file = join(dir, 'store.sqlite');
      const store = new SqliteStore(file);
      const seeded = await seedPolicyZeros(store);
      await store.close();
      const db = new Database(file);
      db.pragma('user_version = 5');
      db.close();
      const reopened = new SqliteStore(file);
      try {
        await checkPolicyGaps(reopened, seeded);
      } finally {
        await reopened.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('makes every run stored before kinds a training run, and adds prompt optimization, on opening a store of schema 6', async () => {
    const dir = tempDir();
    try {
      const file = join(dir, 'store.sqlite');
      const store = new SqliteStore(file);
      const seeded = await seedBeforeKinds(store);
      await store.close();
      const db = new Database(file);
      db.exec(SCHEMA_7_ADDED);
      db.pragma('user_version = 6');
      db.close();
      const reopened = new SqliteStore(file);
      try {
        await checkKindsMigrated(reopened, seeded);
      } finally {
        await reopened.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("fills in what answered each rollout of a store written before schema 8, from its latest attempt's calls", async () => {
    const dir = tempDir();
    try {
      const file = join(dir, 'store.sqlite');
      const store = new SqliteStore(file);
      const seeded = await seedBeforeServed(store);
      await store.close();
      const db = new Database(file);
      db.exec('ALTER TABLE rollouts DROP COLUMN served;');
      db.pragma('user_version = 7');
      db.close();
      const reopened = new SqliteStore(file);
      try {
        await checkServedBuilt(reopened, seeded);
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

/** Waits until `ready` holds (the feed is a notification: a test waits for what it expects, never for a time). */
async function until(ready: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!ready()) {
    assert.ok(Date.now() < deadline, `not seen: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('SqliteStore change log (what the change feed reads)', () => {
  const count = (db: Database.Database, table: string) => (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;

  it('is written only while a feed watches, and no index on updated_at costs every update', async () => {
    const dir = tempDir();
    const store = new SqliteStore(join(dir, 'store.sqlite'));
    try {
      assert.equal(store.db.prepare("SELECT name FROM sqlite_master WHERE name = 'rollouts_updated'").get(), undefined);
      const run = async (input: number) => {
        const { attempt } = await store.startRollout({ input });
        await store.finishAttempt(attempt.id, { status: 'succeeded' });
      };
      await run(1);
      assert.equal(count(store.db, 'change_log'), 0, 'nobody watches: a rollout that moved is not logged');
      const unwatch = await store.watchChanges(() => {});
      assert.equal(count(store.db, 'change_watchers'), 1);
      await run(2);
      assert.equal(count(store.db, 'change_log'), 2, 'a feed watches: the claim and the finish are logged (the insert is read by rowid)');
      unwatch();
      assert.equal(count(store.db, 'change_watchers'), 0, 'the feed unregisters');
      assert.equal(count(store.db, 'change_log'), 0, 'the last feed takes the log with it');
      await run(3);
      assert.equal(count(store.db, 'change_log'), 0);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('says truncated when entries past its mark were pruned (a feed that fell behind)', async () => {
    const dir = tempDir();
    const file = join(dir, 'store.sqlite');
    const store = new SqliteStore(file);
    const raw = new Database(file);
    try {
      const seen: StoreChange[] = [];
      const unwatch = await store.watchChanges((c) => seen.push(c));
      const [a, b] = await store.enqueueRollouts([{ input: 'a' }, { input: 'b' }]);
      await until(() => seen.some((c) => c.rollouts.some((r) => r.id === b!.id)), 'the enqueued rollouts');
      // Another process logs both rollouts as moved, and the first entry is pruned before the feed looks.
      raw.transaction(() => {
        raw.prepare("INSERT INTO change_log (tbl, key) VALUES ('rollouts', ?), ('rollouts', ?)").run(a!.id, b!.id);
        raw.prepare('DELETE FROM change_log WHERE seq = (SELECT MIN(seq) FROM change_log)').run();
      })();
      await until(() => seen.some((c) => c.truncated), 'truncated');
      unwatch();
    } finally {
      raw.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("removes a feed's registration left by a process of this machine that died, when the store opens", async () => {
    const dir = tempDir();
    const file = join(dir, 'store.sqlite');
    try {
      await new SqliteStore(file).close();
      const gone = Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString());
      const raw = new Database(file);
      const add = raw.prepare('INSERT INTO change_watchers (host, pid, since) VALUES (?, ?, 0)');
      add.run(hostname(), gone);
      add.run('another-machine.example', gone);
      raw.close();
      const reopened = new SqliteStore(file);
      assert.deepEqual(reopened.db.prepare('SELECT host FROM change_watchers').all(), [{ host: 'another-machine.example' }], 'only ours can be checked');
      await reopened.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('forgets a feed whose process died, when the store opens: writers stop logging for nobody', async () => {
    const dir = tempDir();
    const file = join(dir, 'store.sqlite');
    try {
      const worker = fileURLToPath(new URL('./abandoned-watch.ts', import.meta.url));
      const child = spawnSync(process.execPath, ['--import', 'tsx', worker, file], { encoding: 'utf8' });
      assert.equal(child.status, 0, child.stderr);
      const raw = new Database(file, { readonly: true });
      assert.equal(count(raw, 'change_watchers'), 1, 'it left its registration');
      raw.close();
      const opened = new SqliteStore(file);
      try {
        assert.equal(count(opened.db, 'change_watchers'), 0);
        const { attempt } = await opened.startRollout({ input: 1 });
        await opened.finishAttempt(attempt.id, { status: 'succeeded' });
        assert.equal(count(opened.db, 'change_log'), 0);
      } finally {
        await opened.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('opens a store of schema 4 (rollouts indexed by updated_at): the index goes, the feed reads the log', async () => {
    const dir = tempDir();
    const file = join(dir, 'store.sqlite');
    try {
      const store = new SqliteStore(file);
      const r = await store.enqueueRollout({ input: 'before the upgrade' });
      await store.close();
      const db = new Database(file);
      db.exec('DROP TABLE change_log; DROP TABLE change_watchers; CREATE INDEX rollouts_updated ON rollouts(updated_at);');
      db.pragma('user_version = 4');
      db.close();
      const reopened = new SqliteStore(file);
      try {
        assert.equal(reopened.db.pragma('user_version', { simple: true }), SQLITE_SCHEMA_VERSION);
        assert.equal(reopened.db.prepare("SELECT name FROM sqlite_master WHERE name = 'rollouts_updated'").get(), undefined);
        const seen: StoreChange[] = [];
        const unwatch = await reopened.watchChanges((c) => seen.push(c));
        await reopened.claimRollouts('w', 1);
        await until(() => seen.some((c) => c.rollouts.some((x) => x.id === r.id && x.status === 'preparing')), 'the claim');
        unwatch();
      } finally {
        await reopened.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
