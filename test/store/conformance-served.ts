/**
 * Conformance, part six: what answered each rollout's calls, kept beside it for the rollouts list (its Model column and
 * filter): the gateway's `agl.served.*` on each LLM call span (spans written before it said: the per-role
 * `agl.policy.*`, an upstream's `gen_ai.response.model`), first seen first, for the latest attempt only (a new attempt
 * starts it over), filterable by a model's name, and built on migration for rollouts stored before the column. Called
 * from storeConformance with its per-test store, so every backend (and the HTTP client) runs it; the migration's seed
 * and check from each backend's migration test.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LightningStore } from '../../protocol/lightning-store.js';
import type { RolloutSummary, SpanInput } from '../../protocol/store.js';
import { AGL, GENAI, SPAN } from '../../protocol/spans.js';
import { rolloutsPage } from '../../daemon/store/views-rollouts.js';
import { reward, run } from './conformance-search.js';

/** An LLM call as the gateway records it: served by a local policy after `updates` updates (null: untrained). */
export const localCall = (name: string, updates: number | null): Partial<SpanInput> => ({
  name: SPAN.llmCall,
  attributes: { [GENAI.operationName]: 'chat', [GENAI.system]: 'agl', [AGL.localPolicy]: true, [AGL.servedBy]: name, [AGL.servedUpdates]: updates },
});
/** An LLM call an upstream model answered. */
export const upstreamCall = (model: string): Partial<SpanInput> => ({
  name: SPAN.llmCall,
  attributes: { [GENAI.operationName]: 'chat', [GENAI.system]: 'openai', [GENAI.responseModel]: model, [AGL.servedBy]: model },
});

const servedOf = async (store: LightningStore, id: string): Promise<RolloutSummary['served']> =>
  (await store.queryRollouts({ ids: [id], withSummaries: true })).summaries![0]!.served;
const idsServedBy = async (store: LightningStore, servedBy: string): Promise<string[]> =>
  (await store.queryRollouts({ servedBy, limit: 100 })).items.map((r) => r.id).sort();

export function servedConformance(ctx: { readonly store: LightningStore }): void {
  describe('rollouts list: the model that answered', () => {
    it("keeps each rollout's serving models, first seen first, once each, as its calls land", async () => {
      const one = await run(ctx.store, 'one', [localCall('calc', 34), localCall('calc', 34), reward(1)]);
      const mixed = await run(ctx.store, 'mixed', [localCall('writer', 3), upstreamCall('gpt-4o-mini')]);
      const none = await run(ctx.store, 'none', [reward(0)]);
      assert.deepEqual(await servedOf(ctx.store, one.id), [{ name: 'calc', updates: 34, upstream: false }]);
      assert.deepEqual(await servedOf(ctx.store, mixed.id), [
        { name: 'writer', updates: 3, upstream: false },
        { name: 'gpt-4o-mini', updates: null, upstream: true },
      ]);
      assert.deepEqual(await servedOf(ctx.store, none.id), []);
      // A later batch adds what it names that is new, and only that.
      await ctx.store.addSpans([{ ...localCall('warmup', null), rolloutId: one.id, attemptId: one.attemptId, startTime: Date.now() } as SpanInput]);
      await ctx.store.addSpans([{ ...localCall('calc', 34), rolloutId: one.id, attemptId: one.attemptId, startTime: Date.now() } as SpanInput]);
      assert.deepEqual(await servedOf(ctx.store, one.id), [
        { name: 'calc', updates: 34, upstream: false },
        { name: 'warmup', updates: null, upstream: false },
      ]);
      // Spans from before the gateway said `agl.served.*`: the per-role policy, or the upstream's response model.
      const older = await run(ctx.store, 'older', [
        { name: SPAN.llmCall, attributes: { [GENAI.operationName]: 'chat', [AGL.policyName]: 'rewriter', [AGL.policyVersion]: 5 } },
        { name: SPAN.llmCall, attributes: { [GENAI.operationName]: 'chat', [GENAI.system]: 'openai', [GENAI.responseModel]: 'm-up' } },
      ]);
      assert.deepEqual(await servedOf(ctx.store, older.id), [
        { name: 'rewriter', updates: 5, upstream: false },
        { name: 'm-up', updates: null, upstream: true },
      ]);
    });

    it('describes the latest attempt only: a retry starts over, a late call of the earlier attempt is not its', async () => {
      const r = await ctx.store.enqueueRollout({ input: 'flaky', config: { maxAttempts: 2, retryOn: ['failed'] } });
      const first = (await ctx.store.claimNextRollout('w'))!;
      const call = (attemptId: string, span: Partial<SpanInput>) => ({ ...span, rolloutId: r.id, attemptId, startTime: Date.now() }) as SpanInput;
      await ctx.store.addSpans([call(first.attempt.id, localCall('calc', 2))]);
      await ctx.store.finishAttempt(first.attempt.id, { status: 'failed', error: { message: 'boom' } });
      const second = (await ctx.store.claimNextRollout('w'))!;
      assert.equal(second.rollout.id, r.id);
      assert.deepEqual(await servedOf(ctx.store, r.id), []);
      await ctx.store.addSpans([call(first.attempt.id, localCall('late', 9))]);
      assert.deepEqual(await servedOf(ctx.store, r.id), []);
      await ctx.store.addSpans([call(second.attempt.id, localCall('calc', 3))]);
      assert.deepEqual(await servedOf(ctx.store, r.id), [{ name: 'calc', updates: 3, upstream: false }]);
    });

    it('filters by a model that answered, by name (any of its versions), with the other filters, and carries it to the list rows', async () => {
      const a = await run(ctx.store, 'a', [localCall('calc', 34)], { finish: 'succeeded', agent: 'x.ts#served' });
      const b = await run(ctx.store, 'b', [localCall('calc', 12), upstreamCall('gpt-4o-mini')], { finish: 'failed', agent: 'x.ts#served' });
      const c = await run(ctx.store, 'c', [upstreamCall('gpt-4o-mini')], { agent: 'x.ts#served' });
      await run(ctx.store, 'd', [reward(1)], { agent: 'x.ts#served' });
      assert.deepEqual(await idsServedBy(ctx.store, 'calc'), [a.id, b.id].sort());
      assert.deepEqual(await idsServedBy(ctx.store, 'gpt-4o-mini'), [b.id, c.id].sort());
      assert.deepEqual(await idsServedBy(ctx.store, 'cal'), [], 'a name, not a prefix');
      assert.deepEqual(await idsServedBy(ctx.store, "calc' OR 1=1 --"), [], 'a value, never SQL');
      const failed = await ctx.store.queryRollouts({ servedBy: 'calc', status: ['failed'], withTotal: true });
      assert.deepEqual([failed.total, failed.items.map((r) => r.id)], [1, [b.id]]);
      const page = await rolloutsPage(ctx.store, { agent: 'x.ts#served', servedBy: 'gpt-4o-mini', order: 'asc' });
      assert.deepEqual(
        page.items.map((row) => [row.rollout.id, row.served.map((m) => m.name)]),
        [
          [b.id, ['calc', 'gpt-4o-mini']],
          [c.id, ['gpt-4o-mini']],
        ],
      );
    });
  });
}

/**
 * For each backend's migration test: rollouts whose calls were stored before schema 8 (the test drops the column and
 * rewinds the version to 7); a retried one whose first attempt was answered by another model.
 */
export async function seedBeforeServed(store: LightningStore): Promise<{ one: string; mixed: string; none: string; retried: string }> {
  const one = await run(store, 'one', [localCall('calc', 34), reward(1)], { finish: 'succeeded' });
  const mixed = await run(store, 'mixed', [upstreamCall('gpt-4o-mini'), localCall('writer', 3), upstreamCall('gpt-4o-mini')]);
  const none = await run(store, 'none', [reward(0)], { finish: 'succeeded' });
  const r = await store.enqueueRollout({ input: 'flaky', config: { maxAttempts: 2, retryOn: ['failed'] } });
  const first = (await store.claimNextRollout('w'))!;
  await store.addSpans([{ ...localCall('old', 1), rolloutId: r.id, attemptId: first.attempt.id, startTime: Date.now() } as SpanInput]);
  await store.finishAttempt(first.attempt.id, { status: 'failed', error: { message: 'boom' } });
  const second = (await store.claimNextRollout('w'))!;
  await store.addSpans([{ ...localCall('new', 2), rolloutId: r.id, attemptId: second.attempt.id, startTime: Date.now() } as SpanInput]);
  return { one: one.id, mixed: mixed.id, none: none.id, retried: r.id };
}

export async function checkServedBuilt(store: LightningStore, seeded: { one: string; mixed: string; none: string; retried: string }): Promise<void> {
  assert.deepEqual(await servedOf(store, seeded.one), [{ name: 'calc', updates: 34, upstream: false }]);
  assert.deepEqual(await servedOf(store, seeded.mixed), [
    { name: 'gpt-4o-mini', updates: null, upstream: true },
    { name: 'writer', updates: 3, upstream: false },
  ]);
  assert.deepEqual(await servedOf(store, seeded.none), []);
  assert.deepEqual(await servedOf(store, seeded.retried), [{ name: 'new', updates: 2, upstream: false }], 'the latest attempt only');
  assert.deepEqual(await idsServedBy(store, 'gpt-4o-mini'), [seeded.mixed]);
  // And it keeps up with what comes after the migration.
  await store.addSpans([
    { ...localCall('calc', 35), rolloutId: seeded.one, attemptId: (await store.getAttempts(seeded.one))[0]!.id, startTime: Date.now() } as SpanInput,
  ]);
  assert.deepEqual(
    (await servedOf(store, seeded.one)).map((m) => m.updates),
    [34, 35],
  );
}
