/**
 * PostgresStore: the shared conformance suite, unchanged, on a throwaway PostgreSQL cluster (a fresh
 * database per test), plus what only PostgreSQL has: several daemons running the health check at once.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { PostgresStore } from '../../daemon/store/postgres.js';
import { CHANGES_CHANNEL } from '../../daemon/store/postgres-changes.js';
import { openStore } from '../../daemon/store/index.js';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { storeConformance } from './conformance.js';
import { changeFeedConformance } from './conformance-changes.js';
import { checkSearchBuilt, seedBeforeSearch } from './conformance-search.js';
import { checkStepsRenumbered, seedZeroBasedRun } from './step-migration.js';
import { checkPolicyGaps, seedPolicyZeros } from './policy-gaps-migration.js';
import { SCHEMA_7_ADDED, checkKindsMigrated, seedBeforeKinds } from './kinds-migration.js';
import { checkServedBuilt, seedBeforeServed } from './conformance-served.js';
import { changeTriggersSql } from '../../daemon/store/postgres-changes.js';
import { CHANGE_SOURCES_SCHEMA_5 } from '../../daemon/store/changes.js';
import { candidateId } from '../../protocol/prompts.js';
import type { StoreChange } from '../../protocol/events.js';

let server: PostgresServer;
before(async () => {
  server = await startPostgres();
});
after(async () => {
  await server?.stop();
});

storeConformance('postgres', async () => {
  const store = await PostgresStore.connect(await server.createDatabase(), { waitPollMs: 50 });
  return { store, cleanup: () => store.close() };
});

// `other` is a second pool on the same database, as another daemon (or `agl train --store`) opens it.
changeFeedConformance('postgres', async () => {
  const url = await server.createDatabase();
  const store = await PostgresStore.connect(url);
  const other = await PostgresStore.connect(url);
  return {
    store,
    other,
    cleanup: async () => {
      await other.close();
      await store.close();
    },
  };
});

describe('PostgresStore with several daemons', () => {
  it('opens through openStore with a postgres:// URL and migrates once when daemons start together', async () => {
    const url = await server.createDatabase();
    const stores = await Promise.all([openStore(url), openStore(url), openStore(url)]);
    try {
      assert.ok(stores.every((s) => s.kind === 'postgres'));
      const r = await stores[0]!.enqueueRollout({ input: 1 });
      assert.equal((await stores[2]!.getRollout(r.id))?.id, r.id);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('builds the search index and summaries on opening a store written before they existed (schema 1)', async () => {
    const url = await server.createDatabase();
    const store = await PostgresStore.connect(url);
    const seeded = await seedBeforeSearch(store);
    await store.close();
    const raw = new pg.Client({ connectionString: url });
    await raw.connect();
    try {
      await raw.query(`DROP TABLE rollout_text; DROP INDEX rollouts_reward; DROP INDEX rollouts_run_step;
        ALTER TABLE rollouts DROP COLUMN final_reward, DROP COLUMN reward_final, DROP COLUMN reward_time, DROP COLUMN error_spans;
        UPDATE agl_meta SET value = '1' WHERE key = 'schema_version'`);
    } finally {
      await raw.end();
    }
    const reopened = await PostgresStore.connect(url);
    try {
      await checkSearchBuilt(reopened, seeded);
    } finally {
      await reopened.close();
    }
  });

  it('makes every run stored before kinds a training run, adds prompt optimization and its change triggers, on opening a store of schema 6', async () => {
    const url = await server.createDatabase();
    const store = await PostgresStore.connect(url);
    const seeded = await seedBeforeKinds(store);
    await store.close();
    const raw = new pg.Client({ connectionString: url });
    await raw.connect();
    try {
      // Schema 6's triggers are those of the sources before 7 (a run's item without its kind).
      await raw.query(`${SCHEMA_7_ADDED} ${changeTriggersSql(CHANGE_SOURCES_SCHEMA_5)} UPDATE agl_meta SET value = '6' WHERE key = 'schema_version'`);
    } finally {
      await raw.end();
    }
    const reopened = await PostgresStore.connect(url);
    try {
      await checkKindsMigrated(reopened, seeded);
      const seen: StoreChange[] = [];
      const unwatch = await reopened.watchChanges((c) => seen.push(c));
      const run = await reopened.createTrainingRun({ agent: 'agent.ts#a', kind: 'optimize', config: {}, totalSteps: 0 });
      const lineage = { parents: [], origin: 'seed' as const, component: null, reflection: null, minibatch: null };
      await reopened.addPromptCandidate({ id: candidateId(run.id, 0), runId: run.id, ordinal: 0, prompts: { system: 'Answer.' }, ...lineage });
      const deadline = Date.now() + 20_000;
      while (
        !seen.some((c) => c.candidates.some((x) => x.runId === run.id)) ||
        !seen.some((c) => c.runs.some((r) => r.id === run.id && r.kind === 'optimize'))
      ) {
        assert.ok(Date.now() < deadline, `the new run and candidate not reported: ${JSON.stringify(seen)}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      unwatch();
    } finally {
      await reopened.close();
    }
  });

  it("fills in what answered each rollout of a store written before schema 8, from its latest attempt's calls", async () => {
    const url = await server.createDatabase();
    const store = await PostgresStore.connect(url);
    const seeded = await seedBeforeServed(store);
    await store.close();
    const raw = new pg.Client({ connectionString: url });
    await raw.connect();
    try {
      await raw.query(`ALTER TABLE rollouts DROP COLUMN served; UPDATE agl_meta SET value = '7' WHERE key = 'schema_version'`);
    } finally {
      await raw.end();
    }
    const reopened = await PostgresStore.connect(url);
    try {
      await checkServedBuilt(reopened, seeded);
    } finally {
      await reopened.close();
    }
  });

  it("turns a policy's made-up 0s of steps without its update into gaps on opening a store of schema 5", async () => {
    const url = await server.createDatabase();
    const store = await PostgresStore.connect(url);
    const seeded = await seedPolicyZeros(store);
    await store.close();
    const raw = new pg.Client({ connectionString: url });
    await raw.connect();
    try {
      await raw.query(`UPDATE agl_meta SET value = '5' WHERE key = 'schema_version'`);
    } finally {
      await raw.end();
    }
    const reopened = await PostgresStore.connect(url);
    try {
      await checkPolicyGaps(reopened, seeded);
    } finally {
      await reopened.close();
    }
  });

  it('numbers the training steps of runs recorded before from 1 on opening a store of schema 3', async () => {
    const url = await server.createDatabase();
    const store = await PostgresStore.connect(url);
    const seeded = await seedZeroBasedRun(store);
    await store.close();
    const raw = new pg.Client({ connectionString: url });
    await raw.connect();
    try {
      await raw.query(`UPDATE agl_meta SET value = '3' WHERE key = 'schema_version'`);
    } finally {
      await raw.end();
    }
    const reopened = await PostgresStore.connect(url);
    try {
      await checkStepsRenumbered(reopened, seeded);
    } finally {
      await reopened.close();
    }
  });

  it('notifies nobody while no feed listens: writers take no notification until a feed registers', async () => {
    const url = await server.createDatabase();
    const store = await PostgresStore.connect(url);
    // A bare LISTEN, not a feed: it hears what the triggers send without registering.
    const raw = new pg.Client({ connectionString: url });
    await raw.connect();
    try {
      const heard: string[] = [];
      raw.on('notification', (n) => heard.push(n.payload ?? ''));
      await raw.query(`LISTEN ${CHANGES_CHANNEL}`);
      const quiet = await store.enqueueRollout({ input: 'while nobody watches' });
      const unwatch = await store.watchChanges(() => {});
      const loud = await store.enqueueRollout({ input: 'while a feed watches' });
      const deadline = Date.now() + 20_000;
      while (!heard.some((p) => p.includes(loud.id))) {
        assert.ok(Date.now() < deadline, `no notification of the rollout written while a feed watched: ${JSON.stringify(heard)}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      // Notifications arrive in commit order: one for the earlier rollout would have come first.
      assert.ok(!heard.some((p) => p.includes(quiet.id)), 'the rollout written while nobody watched was not notified');
      unwatch();
      const listeners = async () => (await raw.query('SELECT count(*)::int AS n FROM agl_change_listeners')).rows[0].n as number;
      while ((await listeners()) > 0) {
        assert.ok(Date.now() < deadline, 'the feed unregisters when unwatched');
        await new Promise((r) => setTimeout(r, 10));
      }
    } finally {
      await raw.end();
      await store.close();
    }
  });

  it('resolves a new watch only once the transactions in progress when it registered have ended', async () => {
    // One of them may have written before any feed listened (so unannounced) and commit after the watch began.
    const url = await server.createDatabase();
    const store = await PostgresStore.connect(url);
    const writer = new pg.Client({ connectionString: url });
    await writer.connect();
    try {
      await writer.query('BEGIN');
      await writer.query(`INSERT INTO resources (id, version, created_at, resources, metadata) VALUES ('rs-unannounced', 1, 0, '{}', '{}')`);
      let committed = false;
      const watching = store.watchChanges(() => {}).then((unwatch) => ({ unwatch, afterCommit: committed }));
      await new Promise((r) => setTimeout(r, 300));
      committed = true;
      await writer.query('COMMIT');
      const { unwatch, afterCommit } = await watching;
      assert.ok(afterCommit, 'the watch waited for the writer');
      assert.equal((await store.getResources('rs-unannounced'))?.version, 1, 'so a client that re-reads now sees its write');
      unwatch();
    } finally {
      await writer.end();
      await store.close();
    }
  });

  it('applies each timeout exactly once when daemons run the health check concurrently', async () => {
    const url = await server.createDatabase();
    const stores = await Promise.all([1, 2, 3].map(() => PostgresStore.connect(url)));
    try {
      const cfg = { timeoutSeconds: 1, maxAttempts: 2, retryOn: ['timeout' as const] };
      await stores[0]!.enqueueRollouts(Array.from({ length: 30 }, (_, i) => ({ input: i, config: cfg })));
      assert.equal((await stores[1]!.claimRollouts('w', 30)).length, 30);
      const now = Date.now() + 5000;
      // Repeat until every daemon's check has nothing left (SKIP LOCKED defers rows another daemon holds).
      const timedOut: string[] = [];
      const requeued: string[] = [];
      for (let round = 0; round < 10; round++) {
        const results = await Promise.all(stores.map((s) => s.runHealthCheck(now)));
        for (const r of results) {
          timedOut.push(...r.timedOut);
          requeued.push(...r.requeued);
        }
        if (results.every((r) => r.timedOut.length === 0) && timedOut.length === 30) break;
      }
      assert.equal(timedOut.length, 30);
      assert.equal(new Set(timedOut).size, 30);
      assert.equal(new Set(requeued).size, 30);
      assert.equal(requeued.length, 30);
      const stats = await stores[2]!.statistics();
      assert.equal(stats.rollouts.requeuing, 30);
      assert.equal(stats.attempts.timeout, 30);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});
