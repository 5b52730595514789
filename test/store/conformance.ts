/**
 * The LightningStore conformance suite: the specification every backend must pass unchanged.
 * test/store/sqlite.test.ts and test/store/postgres.test.ts call `storeConformance` with a factory that
 * returns a fresh, empty store; test/sdk/client-conformance.test.ts runs it through the HTTP client (AglClient)
 * against a real daemon. Time-dependent rules (timeouts, unresponsiveness) are driven through
 * runHealthCheck with an injected `now`; one test lets the Watchdog timer do it on its own.
 */
import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { ConflictError, NotFoundError } from '../../protocol/lightning-store.js';
import { Watchdog } from '../../daemon/store/watchdog.js';
import type { SpanInput } from '../../protocol/store.js';
import { lifecycleConformance } from './conformance-lifecycle.js';
import { searchConformance } from './conformance-search.js';
import { rolloutsViewConformance } from './conformance-views.js';
import { promptsConformance } from './conformance-prompts.js';
import { servedConformance } from './conformance-served.js';

export interface StoreHandle {
  store: LightningStore;
  cleanup: () => Promise<void>;
}
export type StoreFactory = () => Promise<StoreHandle>;

/** A test-scoped store: `ctx.store` is fresh for every test. */
export function useStore(factory: StoreFactory): { readonly store: LightningStore } {
  const ctx = {
    handle: null as StoreHandle | null,
    get store() {
      return this.handle!.store;
    },
  };
  beforeEach(async () => {
    ctx.handle = await factory();
  });
  afterEach(async () => {
    await ctx.handle?.cleanup();
    ctx.handle = null;
  });
  return ctx;
}

export const llm = (model = 'm') => ({ llm: { type: 'llm' as const, endpoint: 'http://127.0.0.1:1/v1', model } });
export const span = (rolloutId: string, attemptId: string, name = 'step', extra: Partial<SpanInput> = {}): SpanInput => ({
  rolloutId,
  attemptId,
  name,
  startTime: Date.now(),
  ...extra,
});

/** `opts.injectableClock` false: a store whose runHealthCheck takes no `now` (over HTTP); see lifecycleConformance. */
export function storeConformance(backend: string, factory: StoreFactory, opts: { injectableClock?: boolean } = {}): void {
  describe(`LightningStore conformance: ${backend}`, () => {
    const ctx = useStore(factory);

    describe('rollouts', () => {
      it('enqueues with defaults applied and reads back', async () => {
        const r = await ctx.store.enqueueRollout({ input: { q: 'what is 2+2' } });
        assert.match(r.id, /\S/);
        assert.equal(r.status, 'queuing');
        assert.equal(r.mode, 'train');
        assert.equal(r.agent, null);
        assert.deepEqual(r.config, { timeoutSeconds: null, unresponsiveSeconds: null, maxAttempts: 1, retryOn: [] });
        assert.equal(r.attemptCount, 0);
        assert.equal(r.endedAt, null);
        assert.deepEqual(await ctx.store.getRollout(r.id), r);
        assert.equal(await ctx.store.getRollout('ro-missing'), null);
      });

      it('issues ids in one form however a record is made: its prefix, its creation time (ms, hex), 64 random bits', async () => {
        // Time first: ids made together sort together, so the indexes keyed by them grow at their right edge.
        const before = Date.now();
        const resources = await ctx.store.addResources({ resources: {} });
        const queued = await ctx.store.enqueueRollout({ input: 1 });
        const claim = (await ctx.store.claimNextRollout('worker-1'))!;
        const started = await ctx.store.startRollout({ input: 2 });
        const run = await ctx.store.createTrainingRun({ agent: 'a.ts#agent', config: {}, totalSteps: 1 });
        const after = Date.now();
        const ids: Array<[string, string]> = [
          ['rs', resources.id],
          ['ro', queued.id],
          ['at', claim.attempt.id],
          ['ro', started.rollout.id],
          ['at', started.attempt.id],
          ['run', run.id],
        ];
        for (const [prefix, id] of ids) {
          const parts = new RegExp(`^${prefix}-([0-9a-f]{12})[0-9a-f]{16}$`).exec(id);
          assert.ok(parts, `${id}: ${prefix}-, then 12 hex digits of time, then 16 of randomness`);
          const made = parseInt(parts[1]!, 16);
          assert.ok(made >= before && made <= after, `${id} was made at ${made}, between ${before} and ${after}`);
        }
      });

      it('enqueues many in order and rejects bad input', async () => {
        const rs = await ctx.store.enqueueRollouts([1, 2, 3].map((i) => ({ input: i, mode: 'val' as const, agent: 'a.ts#agent' })));
        assert.deepEqual(
          rs.map((r) => r.input),
          [1, 2, 3],
        );
        assert.ok(rs.every((r) => r.mode === 'val' && r.agent === 'a.ts#agent'));
        await assert.rejects(ctx.store.enqueueRollout({ input: 1, mode: 'bogus' as never }));
        await assert.rejects(ctx.store.enqueueRollout({ input: 1, config: { maxAttempts: 0 } }));
        await assert.rejects(ctx.store.enqueueRollout({ input: 1, resourcesId: 'rs-missing' }), NotFoundError);
      });

      it('claims the oldest rollout exactly once, then none', async () => {
        const [a, b] = await ctx.store.enqueueRollouts([{ input: 'a' }, { input: 'b' }]);
        const c1 = await ctx.store.claimNextRollout('w1');
        assert.equal(c1?.rollout.id, a!.id);
        assert.equal(c1?.rollout.status, 'preparing');
        assert.equal(c1?.rollout.attemptCount, 1);
        assert.equal(c1?.attempt.status, 'preparing');
        assert.equal(c1?.attempt.sequence, 1);
        assert.equal(c1?.attempt.workerId, 'w1');
        assert.equal(c1?.attempt.rolloutId, a!.id);
        const c2 = await ctx.store.claimNextRollout('w2');
        assert.equal(c2?.rollout.id, b!.id);
        assert.equal(await ctx.store.claimNextRollout('w3'), null);
        assert.equal((await ctx.store.getRollout(a!.id))?.status, 'preparing');
        assert.deepEqual(await ctx.store.getLatestAttempt(a!.id), c1!.attempt);
        assert.deepEqual(await ctx.store.getAttempt(c1!.attempt.id), c1!.attempt);
      });

      it('claims many at once and never the same rollout twice under concurrency', async () => {
        await ctx.store.enqueueRollouts(Array.from({ length: 40 }, (_, i) => ({ input: i })));
        const batch = await ctx.store.claimRollouts('w0', 5);
        assert.deepEqual(
          batch.map((c) => c.rollout.input),
          [0, 1, 2, 3, 4],
        );
        const claims = await Promise.all(Array.from({ length: 50 }, (_, i) => ctx.store.claimNextRollout(`w${i}`)));
        const ids = claims.filter((c) => c !== null).map((c) => c!.rollout.id);
        assert.equal(ids.length, 35);
        assert.equal(new Set(ids).size, 35);
        await assert.rejects(ctx.store.claimRollouts('w', 0));
      });

      it('filters claims by agent (own or agent-less rollouts) and mode', async () => {
        await ctx.store.enqueueRollouts([
          { input: 'x', agent: 'x.ts#a' },
          { input: 'y', agent: 'y.ts#a' },
          { input: 'any' },
          { input: 'v', agent: 'x.ts#a', mode: 'val' },
        ]);
        const got = await ctx.store.claimRollouts('wx', 10, { agent: 'x.ts#a', mode: 'train' });
        assert.deepEqual(
          got.map((c) => c.rollout.input),
          ['x', 'any'],
        );
        assert.deepEqual(
          (await ctx.store.claimRollouts('wv', 10, { mode: 'val' })).map((c) => c.rollout.input),
          ['v'],
        );
        assert.deepEqual(
          (await ctx.store.claimRollouts('wy', 10)).map((c) => c.rollout.input),
          ['y'],
        );
      });

      it('startRollout creates a rollout already claimed by the worker', async () => {
        const { rollout, attempt } = await ctx.store.startRollout({ input: 'direct' }, 'w9');
        assert.equal(rollout.status, 'preparing');
        assert.equal(attempt.workerId, 'w9');
        assert.equal(attempt.sequence, 1);
        assert.equal(await ctx.store.claimNextRollout('w'), null);
      });

      it('cancels a rollout that has not ended and fails its attempt', async () => {
        const r = await ctx.store.enqueueRollout({ input: 1 });
        const c = (await ctx.store.claimNextRollout('w'))!;
        const cancelled = await ctx.store.cancelRollout(r.id);
        assert.equal(cancelled.status, 'cancelled');
        assert.ok(cancelled.endedAt !== null);
        assert.equal((await ctx.store.getAttempt(c.attempt.id))?.status, 'failed');
        await assert.rejects(ctx.store.cancelRollout(r.id), ConflictError);
        await assert.rejects(ctx.store.cancelRollout('ro-missing'), NotFoundError);
        await assert.rejects(ctx.store.finishAttempt(c.attempt.id, { status: 'succeeded' }), ConflictError);
        const queued = await ctx.store.enqueueRollout({ input: 2 });
        assert.equal((await ctx.store.cancelRollout(queued.id)).status, 'cancelled');
        assert.equal(await ctx.store.claimNextRollout('w'), null);
      });

      it('merges metadata updates', async () => {
        const r = await ctx.store.enqueueRollout({ input: 1, metadata: { a: 1 } });
        const u = await ctx.store.updateRolloutMetadata(r.id, { b: 'two' });
        assert.deepEqual(u.metadata, { a: 1, b: 'two' });
        assert.deepEqual((await ctx.store.getRollout(r.id))?.metadata, { a: 1, b: 'two' });
        await assert.rejects(ctx.store.updateRolloutMetadata('ro-missing', {}), NotFoundError);
      });
    });

    describe('queryRollouts', () => {
      it('filters by status, mode, agent, ids, resources id and version', async () => {
        const res1 = await ctx.store.addResources({ resources: llm('v1') });
        const rs = await ctx.store.enqueueRollouts([
          { input: 0, mode: 'train', agent: 'a' },
          { input: 1, mode: 'val', agent: 'b' },
          { input: 2, mode: 'train', agent: 'b' },
        ]);
        await ctx.store.claimNextRollout('w'); // rs[0] runs with res1 (latest at claim time)
        const res2 = await ctx.store.addResources({ resources: llm('v2') });
        const explicit = await ctx.store.enqueueRollout({ input: 3, resourcesId: res2.id });
        const inputs = async (q: Parameters<LightningStore['queryRollouts']>[0]) =>
          (await ctx.store.queryRollouts({ ...q, order: 'asc' })).items.map((r) => r.input);
        assert.deepEqual(await inputs({ status: ['preparing'] }), [0]);
        assert.deepEqual(await inputs({ status: ['queuing', 'preparing'] }), [0, 1, 2, 3]);
        assert.deepEqual(await inputs({ status: [] }), []);
        assert.deepEqual(await inputs({ mode: 'val' }), [1]);
        assert.deepEqual(await inputs({ agent: 'b' }), [1, 2]);
        assert.deepEqual(await inputs({ ids: [rs[2]!.id, explicit.id, 'ro-missing'] }), [2, 3]);
        assert.deepEqual(await inputs({ resourcesId: res1.id }), [0]);
        assert.deepEqual(await inputs({ resourcesVersion: 1 }), [0]);
        assert.deepEqual(await inputs({ resourcesVersion: res2.version }), [3]);
        assert.equal((await ctx.store.getRollout(rs[0]!.id))?.resourcesId, res1.id);
      });

      it('an agent query matches every stored form of its id (protocol/agent-id.ts), and only those', async () => {
        await ctx.store.enqueueRollouts([
          { input: 0, agent: 'samples/calc/agent.ts#calcAgent' },
          { input: 1, agent: 'calc/agent.ts#calcAgent' },
          { input: 2, agent: 'main/samples/calc/agent.ts#calcAgent' },
          { input: 3, agent: 'other/calc/agent.ts#calcAgent' },
          { input: 4, agent: 'samples/calc/agent.ts#otherAgent' },
          { input: 5, agent: 'pkg.calc:agent' },
          { input: 6 },
        ]);
        await ctx.store.createTrainingRun({ id: 'run-old-form', agent: 'calc/agent.ts#calcAgent', config: {}, totalSteps: 1 });
        await ctx.store.createTrainingRun({ id: 'run-other', agent: 'other/calc/agent.ts#calcAgent', config: {}, totalSteps: 1 });
        const inputs = async (agent: string) => (await ctx.store.queryRollouts({ agent, order: 'asc' })).items.map((r) => r.input);
        assert.deepEqual(await inputs('samples/calc/agent.ts#calcAgent'), [0, 1, 2]);
        assert.deepEqual(await inputs('pkg.calc:agent'), [5]);
        assert.deepEqual(await inputs('nobody.ts#x'), []);
        assert.deepEqual(
          (await ctx.store.listTrainingRuns('samples/calc/agent.ts#calcAgent')).map((r) => r.id),
          ['run-old-form'],
        );
      });

      it('pages with a cursor, newest first by default, each rollout exactly once', async () => {
        await ctx.store.enqueueRollouts(Array.from({ length: 25 }, (_, i) => ({ input: i })));
        for (const order of ['desc', 'asc'] as const) {
          const seen: unknown[] = [];
          let cursor: string | undefined;
          let pages = 0;
          do {
            const page = await ctx.store.queryRollouts({ limit: 10, cursor, ...(order === 'asc' ? { order } : {}) });
            seen.push(...page.items.map((r) => r.input));
            cursor = page.nextCursor ?? undefined;
            pages++;
          } while (cursor);
          assert.equal(pages, 3);
          const expected = Array.from({ length: 25 }, (_, i) => i);
          assert.deepEqual(seen, order === 'asc' ? expected : expected.reverse());
        }
        await assert.rejects(ctx.store.queryRollouts({ cursor: 'not-a-cursor' }));
        await assert.rejects(ctx.store.queryRollouts({ limit: -1 }));
      });
    });

    describe('spans', () => {
      it('issues monotonic sequence ids per rollout and flips the attempt and rollout to running', async () => {
        const r = await ctx.store.enqueueRollout({ input: 1 });
        const c = (await ctx.store.claimNextRollout('w'))!;
        const first = await ctx.store.addSpans([span(r.id, c.attempt.id, 'a'), span(r.id, c.attempt.id, 'b')]);
        assert.deepEqual(
          first.map((s) => s.sequenceId),
          [1, 2],
        );
        assert.equal(first[0]!.kind, 'internal');
        assert.deepEqual(first[0]!.status, { code: 'unset' });
        assert.match(first[0]!.traceId, /^[0-9a-f]{32}$/);
        assert.match(first[0]!.spanId, /^[0-9a-f]{16}$/);
        assert.equal((await ctx.store.getAttempt(c.attempt.id))?.status, 'running');
        assert.equal((await ctx.store.getRollout(r.id))?.status, 'running');
        const concurrent = await Promise.all(Array.from({ length: 30 }, (_, i) => ctx.store.addSpans([span(r.id, c.attempt.id, `c${i}`)])));
        const seqs = concurrent.map((s) => s[0]!.sequenceId).sort((x, y) => x - y);
        assert.deepEqual(
          seqs,
          Array.from({ length: 30 }, (_, i) => i + 3),
        );
        const other = await ctx.store.enqueueRollout({ input: 2 });
        const c2 = (await ctx.store.claimNextRollout('w'))!;
        assert.deepEqual(
          (await ctx.store.addSpans([span(other.id, c2.attempt.id)])).map((s) => s.sequenceId),
          [1],
        );
      });

      it('round-trips every span field', async () => {
        const { rollout, attempt } = await ctx.store.startRollout({ input: 1 });
        const input: SpanInput = {
          rolloutId: rollout.id,
          attemptId: attempt.id,
          traceId: 't'.repeat(32),
          spanId: 's'.repeat(16),
          parentSpanId: 'p'.repeat(16),
          name: 'gen_ai.chat',
          kind: 'client',
          startTime: 1000.25,
          endTime: 1002.5,
          attributes: { 'agl.prompt.token_ids': [1, 2, 3], 'gen_ai.request.model': 'm', ok: true, none: null },
          events: [{ name: 'e', time: 1001, attributes: { k: 'v' } }],
          status: { code: 'error', message: 'boom' },
          resource: { 'service.name': 'x' },
        };
        const [stored] = await ctx.store.addSpans([input]);
        assert.deepEqual(stored, { ...input, sequenceId: 1 });
        assert.deepEqual(await ctx.store.querySpans({ rolloutId: rollout.id }), [stored]);
      });

      it('rejects spans for unknown rollouts or attempts without failing concurrent batches', async () => {
        const { rollout, attempt } = await ctx.store.startRollout({ input: 1 });
        const other = await ctx.store.startRollout({ input: 2 });
        const [good, bad1, bad2, bad3] = await Promise.allSettled([
          ctx.store.addSpans([span(rollout.id, attempt.id)]),
          ctx.store.addSpans([span('ro-missing', attempt.id)]),
          ctx.store.addSpans([span(rollout.id, 'at-missing')]),
          ctx.store.addSpans([span(rollout.id, other.attempt.id)]),
        ]);
        assert.equal(good.status, 'fulfilled');
        for (const bad of [bad1, bad2, bad3]) {
          assert.equal(bad.status, 'rejected');
          assert.ok((bad as PromiseRejectedResult).reason instanceof NotFoundError);
        }
        assert.equal((await ctx.store.querySpans({ rolloutId: rollout.id })).length, 1);
        await assert.rejects(ctx.store.addSpans([{ rolloutId: rollout.id } as SpanInput]));
      });

      it('queries by attempt, latest attempt, name, sequence and limit', async () => {
        const r = await ctx.store.enqueueRollout({ input: 1, config: { maxAttempts: 2, retryOn: ['failed'] } });
        const a1 = (await ctx.store.claimNextRollout('w'))!.attempt;
        await ctx.store.addSpans([span(r.id, a1.id, 'x'), span(r.id, a1.id, 'y')]);
        await ctx.store.finishAttempt(a1.id, { status: 'failed', error: { message: 'oops' } });
        const a2 = (await ctx.store.claimNextRollout('w'))!.attempt;
        assert.equal(a2.sequence, 2);
        await ctx.store.addSpans([span(r.id, a2.id, 'x'), span(r.id, a2.id, 'z'), span(r.id, a2.id, 'x')]);
        const names = async (q: Omit<Parameters<LightningStore['querySpans']>[0], 'rolloutId'>) =>
          (await ctx.store.querySpans({ rolloutId: r.id, ...q })).map((s) => `${s.name}${s.sequenceId}`);
        assert.deepEqual(await names({}), ['x1', 'y2', 'x3', 'z4', 'x5']);
        assert.deepEqual(await names({ attemptId: a1.id }), ['x1', 'y2']);
        assert.deepEqual(await names({ attemptId: 'latest' }), ['x3', 'z4', 'x5']);
        assert.deepEqual(await names({ name: 'x' }), ['x1', 'x3', 'x5']);
        assert.deepEqual(await names({ afterSequenceId: 3 }), ['z4', 'x5']);
        assert.deepEqual(await names({ limit: 2 }), ['x1', 'y2']);
        // The pre-serialised fast path answers exactly the same.
        for (const q of [{}, { attemptId: 'latest' }, { name: 'x', afterSequenceId: 1, limit: 1 }]) {
          const json = await ctx.store.querySpansJson!({ rolloutId: r.id, ...q });
          assert.deepEqual(JSON.parse(json), await ctx.store.querySpans({ rolloutId: r.id, ...q }));
        }
        await assert.rejects(ctx.store.querySpans({ rolloutId: 'ro-missing' }), NotFoundError);
        await assert.rejects(ctx.store.querySpansJson!({ rolloutId: 'ro-missing' }), NotFoundError);
        const fresh = await ctx.store.enqueueRollout({ input: 2 });
        assert.deepEqual(await ctx.store.querySpans({ rolloutId: fresh.id, attemptId: 'latest' }), []);
      });

      it('keeps spans that arrive after the attempt ended', async () => {
        const { rollout, attempt } = await ctx.store.startRollout({ input: 1 });
        await ctx.store.finishAttempt(attempt.id, { status: 'succeeded' });
        await ctx.store.addSpans([span(rollout.id, attempt.id, 'late')]);
        assert.equal((await ctx.store.querySpans({ rolloutId: rollout.id })).length, 1);
        assert.equal((await ctx.store.getAttempt(attempt.id))?.status, 'succeeded');
        assert.equal((await ctx.store.getRollout(rollout.id))?.status, 'succeeded');
      });
    });

    lifecycleConformance(ctx, opts.injectableClock ?? true);
    searchConformance(ctx);
    rolloutsViewConformance(ctx);
    promptsConformance(ctx);
    servedConformance(ctx);

    describe('watchdog', () => {
      it('times out an attempt on its own timer, with nobody writing', async () => {
        const r = await ctx.store.enqueueRollout({ input: 1, config: { timeoutSeconds: 0.2 } });
        const c = (await ctx.store.claimNextRollout('w'))!;
        const dog = new Watchdog(ctx.store, { intervalMs: 50 }).start();
        try {
          const [ended] = await ctx.store.waitForRollouts([r.id], 20_000);
          assert.equal(ended?.status, 'failed');
          assert.equal((await ctx.store.getAttempt(c.attempt.id))?.status, 'timeout');
          assert.ok(dog.checks > 0);
        } finally {
          await dog.stop();
        }
      });
    });
  });
}
