/**
 * Conformance, part three: the rollouts list at store scale. Search over task inputs and outputs (FTS5 on
 * SQLite, full text on PostgreSQL; whatever a user types is safe), filters (status, final reward range,
 * training run, step, mode, agent, errors), sorts (creation, duration, reward, status), exact totals, offset
 * paging, and the summary each row carries (final reward, duration of the latest attempt, error).
 * Called from storeConformance with its per-test store.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LightningStore, RolloutQuery } from '../../protocol/lightning-store.js';
import type { SpanInput } from '../../protocol/store.js';

export const reward = (value: number, extra: Record<string, boolean> = {}) => ({
  name: 'agentlightning.reward',
  attributes: { 'agl.reward.value': value, ...extra },
});
export const reply = (text: string) => ({
  name: 'gen_ai.chat',
  attributes: { 'gen_ai.output.messages': JSON.stringify([{ role: 'assistant', content: text }]) },
});

interface Made {
  id: string;
  attemptId: string;
}

/** Starts a rollout directly and records `spans` for its attempt; `finish` ends it. */
export async function run(
  store: LightningStore,
  input: unknown,
  spans: Array<Partial<SpanInput>>,
  opts: {
    mode?: 'train' | 'val' | 'test';
    agent?: string;
    metadata?: Record<string, unknown>;
    finish?: 'succeeded' | 'failed';
    error?: string;
  } = {},
): Promise<Made> {
  const { rollout, attempt } = await store.startRollout({ input, mode: opts.mode, agent: opts.agent ?? null, metadata: opts.metadata ?? {} }, 'w');
  let t = Date.now();
  if (spans.length) {
    await store.addSpans(spans.map((s) => ({ rolloutId: rollout.id, attemptId: attempt.id, name: 'step', startTime: t, endTime: ++t, ...s }) as SpanInput));
  }
  if (opts.finish) await store.finishAttempt(attempt.id, { status: opts.finish, ...(opts.error ? { error: { message: opts.error } } : {}) });
  return { id: rollout.id, attemptId: attempt.id };
}

const ids = async (store: LightningStore, q: RolloutQuery) => (await store.queryRollouts({ limit: 1000, ...q })).items.map((r) => r.id);
const sameSet = (a: string[], b: string[], message?: string) => assert.deepEqual([...a].sort(), [...b].sort(), message);

export function searchConformance(ctx: { readonly store: LightningStore }): void {
  describe('rollouts list: search', () => {
    it('finds words of the task input and of the outputs, every word as a prefix, case-insensitively', async () => {
      const pens = await run(ctx.store, { question: 'Q: Ann has 23 pens, gets 15 more. How many?', answer: '38' }, [reply('Ann now holds thirty-eight pens')]);
      const apples = await run(ctx.store, { question: 'Bob eats 3 apples', answer: '0' }, [reply('zero apples left')]);
      const plain = await run(ctx.store, 'a plain string task about Pens', []);
      sameSet(await ids(ctx.store, { search: 'pens' }), [pens.id, plain.id]);
      sameSet(await ids(ctx.store, { search: 'ANN 23' }), [pens.id]);
      sameSet(await ids(ctx.store, { search: 'thirty' }), [pens.id], 'an LLM reply is searchable');
      sameSet(await ids(ctx.store, { search: 'appl' }), [apples.id], 'a word is a prefix');
      sameSet(await ids(ctx.store, { search: 'apples thirty' }), [], 'every word must match');
      sameSet(await ids(ctx.store, { search: 'question' }), [], 'keys of the input are not its text');
      const total = await ctx.store.queryRollouts({ search: 'pens', withTotal: true });
      assert.equal(total.total, 2);
    });

    it("indexes a rollout's text up to its cap: outputs after it are not searchable, those before stay so", async () => {
      const more = (made: Made, text: string) =>
        ctx.store.addSpans([{ rolloutId: made.id, attemptId: made.attemptId, startTime: Date.now(), endTime: Date.now() + 1, ...reply(text) } as SpanInput]);
      const long = await run(ctx.store, 'a long rollout', [reply(`opening ${'filler '.repeat(10_000)}`)]); // past the cap (64 Ki characters)
      await more(long, 'latecomer');
      const short = await run(ctx.store, 'a short rollout', [reply('early')]);
      await more(short, 'second');
      sameSet(await ids(ctx.store, { search: 'opening' }), [long.id]);
      sameSet(await ids(ctx.store, { search: 'latecomer' }), [], 'the text was full');
      sameSet(await ids(ctx.store, { search: 'early second' }), [short.id], 'outputs are appended while there is room');
    });

    it('treats search syntax and SQL a user types as plain words, never as an error or a query', async () => {
      const a = await run(ctx.store, { prompt: 'say "hello" OR NEAR(x) now' }, []);
      const b = await run(ctx.store, { prompt: "it's 3:* & !done | (maybe)" }, []);
      const hostile = [
        '"',
        '""',
        '"hello',
        'hello*',
        '*',
        'OR',
        'AND NOT',
        'NEAR(x y)',
        'input:hello',
        '^hello',
        '-hello',
        '(',
        ')',
        "'; DROP TABLE rollouts; --",
        "' OR 1=1 --",
        '3:*',
        '!done',
        'a & | b',
        '\\',
        '%',
        '_',
        '\u0000',
        '🙂',
        ' ',
        '',
      ];
      for (const search of hostile) {
        const page = await ctx.store.queryRollouts({ search, withTotal: true });
        assert.ok(page.total! <= 2, `search ${JSON.stringify(search)}`);
      }
      sameSet(await ids(ctx.store, { search: '"hello"' }), [a.id]);
      sameSet(await ids(ctx.store, { search: 'NEAR(x' }), [a.id], 'NEAR and OR are words here');
      sameSet(await ids(ctx.store, { search: '3:* !done' }), [b.id]);
      sameSet(await ids(ctx.store, { search: "' OR 1=1 --" }), [], 'or matches nothing: the words 1 and 1 are in neither');
      sameSet(await ids(ctx.store, { search: '"*()' }), [a.id, b.id], 'no words at all: no text filter');
      assert.equal((await ctx.store.statistics()).rollouts.preparing, 2, 'the store is intact');
    });
  });

  describe('rollouts list: filters, sorts, totals and summaries', () => {
    /** Six rollouts: rewards 1, 0.5, 0, none (failed with an error), none (tool error span), none (queued). */
    async function fixture() {
      const s = ctx.store;
      const r1 = await run(s, 'one', [reward(1)], { metadata: { runId: 'run-a', step: 1 }, agent: 'calc.ts#agent', finish: 'succeeded' });
      const r2 = await run(s, 'two', [reward(0.5)], { metadata: { runId: 'run-a', step: 2 }, mode: 'val', finish: 'succeeded' });
      const r3 = await run(s, 'three', [reward(0)], { metadata: { runId: 'run-b', step: 1 }, agent: 'calc.ts#agent', finish: 'succeeded' });
      const r4 = await run(s, 'four', [], { metadata: { runId: 'run-b', step: 2 }, finish: 'failed', error: 'agent raised TypeError' });
      const r5 = await run(s, 'five', [{ name: 'gen_ai.execute_tool', status: { code: 'error', message: 'division by zero' } }]);
      const queued = await s.enqueueRollout({ input: 'six', metadata: { runId: 'run-a', step: '1' } });
      return { r1: r1.id, r2: r2.id, r3: r3.id, r4: r4.id, r5: r5.id, r6: queued.id };
    }

    it('filters by status, mode, agent, final reward range, run, step and errors, with exact totals', async () => {
      const f = await fixture();
      const check = async (q: RolloutQuery, want: string[]) => {
        const page = await ctx.store.queryRollouts({ ...q, withTotal: true, limit: 1000 });
        sameSet(
          page.items.map((r) => r.id),
          want,
        );
        assert.equal(page.total, want.length, JSON.stringify(q));
      };
      await check({}, Object.values(f));
      await check({ status: ['succeeded'] }, [f.r1, f.r2, f.r3]);
      await check({ mode: 'val' }, [f.r2]);
      await check({ agent: 'calc.ts#agent' }, [f.r1, f.r3]);
      await check({ rewardMin: 0.5 }, [f.r1, f.r2]);
      await check({ rewardMax: 0.5 }, [f.r2, f.r3]);
      await check({ rewardMin: 0.25, rewardMax: 0.75 }, [f.r2]);
      await check({ rewardMin: 0, rewardMax: 0 }, [f.r3]);
      await check({ runId: 'run-a' }, [f.r1, f.r2, f.r6]);
      await check({ runId: 'run-a', step: 1 }, [f.r1] /* step '1' as a string is not step 1 */);
      await check({ step: 2 }, [f.r2, f.r4]);
      await check({ hasError: true }, [f.r4, f.r5]);
      await check({ hasError: false }, [f.r1, f.r2, f.r3, f.r6]);
      await check({ hasError: false, runId: 'run-b' }, [f.r3]);
      await check({ search: 'three', rewardMin: 0 }, [f.r3]);
    });

    it('sorts by reward, duration, status and creation (missing values last either way) and pages by offset', async () => {
      const f = await fixture();
      const order = async (q: RolloutQuery) => ids(ctx.store, q);
      const rewarded = [f.r1, f.r2, f.r3];
      assert.deepEqual((await order({ sort: 'reward' })).slice(0, 3), rewarded);
      assert.deepEqual((await order({ sort: 'reward', order: 'asc' })).slice(0, 3), [...rewarded].reverse());
      // Without a reward: newest first after the rewarded ones, in both directions.
      assert.deepEqual((await order({ sort: 'reward' })).slice(3), [f.r6, f.r5, f.r4]);
      assert.deepEqual((await order({ sort: 'reward', order: 'asc' })).slice(3), [f.r4, f.r5, f.r6]);
      assert.deepEqual(await order({}), [f.r6, f.r5, f.r4, f.r3, f.r2, f.r1]);
      assert.deepEqual(await order({ order: 'asc' }), [f.r1, f.r2, f.r3, f.r4, f.r5, f.r6]);
      const byStatus = await ctx.store.queryRollouts({ sort: 'status', order: 'asc', limit: 100 });
      assert.deepEqual(
        byStatus.items.map((r) => r.status),
        ['queuing', 'running', 'succeeded', 'succeeded', 'succeeded', 'failed'],
      );
      const byDuration = await ctx.store.queryRollouts({ sort: 'duration', order: 'asc', limit: 100, withSummaries: true });
      const durations = byDuration.summaries!.map((s) => s.durationMs);
      const ended = durations.filter((d): d is number => d !== null);
      assert.equal(ended.length, 4, 'four rollouts ended');
      assert.deepEqual(
        ended,
        [...ended].sort((a, b) => a - b),
      );
      assert.deepEqual(durations.slice(4), [null, null], 'running and queued have no duration yet, and come last');
      // Offset paging walks every rollout exactly once, in the sort's order.
      const all = await order({ sort: 'reward' });
      const walked: string[] = [];
      for (let offset = 0; offset < 6; offset += 4) {
        const page = await ctx.store.queryRollouts({ sort: 'reward', offset, limit: 4, withTotal: true });
        assert.equal(page.total, 6);
        walked.push(...page.items.map((r) => r.id));
      }
      assert.deepEqual(walked, all);
      await assert.rejects(ctx.store.queryRollouts({ sort: 'reward', cursor: 'czE' }), /cursor/);
      await assert.rejects(ctx.store.queryRollouts({ offset: -1 }), /offset/);
    });

    it("summarises each row: final reward, the latest attempt's run time and error", async () => {
      const f = await fixture();
      const page = await ctx.store.queryRollouts({ withSummaries: true, limit: 100, order: 'asc' });
      const by = new Map(page.items.map((r, i) => [r.id, { rollout: r, summary: page.summaries![i]! }]));
      assert.equal(page.summaries!.length, page.items.length);
      assert.deepEqual(
        page.items.map((r) => by.get(r.id)!.summary.finalReward),
        [1, 0.5, 0, null, null, null],
      );
      const attempts = await ctx.store.getAttempts(f.r1);
      const s1 = by.get(f.r1)!.summary;
      assert.equal(s1.startedAt, attempts[0]!.startedAt);
      assert.equal(s1.durationMs, attempts[0]!.endedAt! - attempts[0]!.startedAt, "duration is the attempt's run time, not time since enqueue");
      assert.equal(by.get(f.r4)!.summary.error, 'agent raised TypeError');
      assert.equal(by.get(f.r5)!.summary.errorSpans, 1);
      assert.deepEqual(by.get(f.r6)!.summary, { finalReward: null, startedAt: null, durationMs: null, error: null, errorSpans: 0, served: [] });
      assert.equal((await ctx.store.queryRollouts({})).summaries, undefined, 'only when asked for');
    });

    it('keeps the final reward by the span-reading rule: a final-marked reward wins, a retry starts over', async () => {
      const { id, attemptId } = await run(ctx.store, 'retry me', [reward(0.9, { 'agl.reward.final': true })]);
      await ctx.store.addSpans([
        { rolloutId: id, attemptId, name: 'agentlightning.reward', startTime: Date.now() + 10, attributes: { 'agl.reward.value': 0.1 } },
      ]);
      const rewardOf = async () => (await ctx.store.queryRollouts({ ids: [id], withSummaries: true })).summaries![0]!.finalReward;
      assert.equal(await rewardOf(), 0.9, 'the final-marked reward, though a later one came');
      const later = await run(ctx.store, 'later wins', [reward(0.2), reward(0.7)]);
      assert.equal((await ctx.store.queryRollouts({ ids: [later.id], withSummaries: true })).summaries![0]!.finalReward, 0.7);

      const r = await ctx.store.enqueueRollout({ input: 'flaky', config: { maxAttempts: 2, retryOn: ['failed'] } });
      const first = (await ctx.store.claimNextRollout('w'))!;
      await ctx.store.addSpans([
        { rolloutId: r.id, attemptId: first.attempt.id, name: 'agentlightning.reward', startTime: Date.now(), attributes: { 'agl.reward.value': 0.3 } },
      ]);
      await ctx.store.finishAttempt(first.attempt.id, { status: 'failed', error: { message: 'boom' } });
      const second = (await ctx.store.claimNextRollout('w'))!;
      assert.equal(second.rollout.id, r.id);
      const summary = async () => (await ctx.store.queryRollouts({ ids: [r.id], withSummaries: true })).summaries![0]!;
      assert.deepEqual(await summary(), { finalReward: null, startedAt: second.attempt.startedAt, durationMs: null, error: null, errorSpans: 0, served: [] });
      // A late span of the first attempt does not count for the second.
      await ctx.store.addSpans([
        { rolloutId: r.id, attemptId: first.attempt.id, name: 'agentlightning.reward', startTime: Date.now(), attributes: { 'agl.reward.value': 0.8 } },
      ]);
      assert.equal((await summary()).finalReward, null);
      await ctx.store.addSpans([
        { rolloutId: r.id, attemptId: second.attempt.id, name: 'agentlightning.reward', startTime: Date.now(), attributes: { 'agl.reward.value': 0.6 } },
      ]);
      assert.equal((await summary()).finalReward, 0.6);
      sameSet(await ids(ctx.store, { rewardMin: 0.55, rewardMax: 0.65 }), [r.id]);
    });
  });
}

/**
 * For each backend's migration test: rollouts with inputs, replies, rewards and an error span, written
 * before the search index existed (the test removes it and rewinds the schema version), then checks that
 * opening the store built the index and the summaries from what was stored.
 */
export async function seedBeforeSearch(store: LightningStore): Promise<{ pens: string; apples: string; errored: string }> {
  const pens = await run(store, { question: 'Ann has 23 pens' }, [reply('thirty-eight'), reward(0.2), reward(1, { 'agl.reward.final': true }), reward(0.4)], {
    finish: 'succeeded',
  });
  const apples = await run(store, { question: 'Bob eats apples' }, [reward(0)], { finish: 'succeeded' });
  const errored = await run(store, 'tool task', [{ name: 'gen_ai.execute_tool', status: { code: 'error' } }]);
  return { pens: pens.id, apples: apples.id, errored: errored.id };
}

export async function checkSearchBuilt(store: LightningStore, seeded: { pens: string; apples: string; errored: string }): Promise<void> {
  sameSet(await ids(store, { search: 'pens' }), [seeded.pens]);
  sameSet(await ids(store, { search: 'thirty' }), [seeded.pens]);
  sameSet(await ids(store, { hasError: true }), [seeded.errored]);
  const page = await store.queryRollouts({ sort: 'reward', withSummaries: true, withTotal: true });
  assert.equal(page.total, 3);
  assert.deepEqual(
    page.items.map((r) => r.id),
    [seeded.pens, seeded.apples, seeded.errored],
  );
  assert.deepEqual(
    page.summaries!.map((s) => s.finalReward),
    [1, 0, null],
  );
  // And the index keeps up with what comes after the migration.
  const more = await run(store, { question: 'Cleo has pens too' }, [reward(0.5)]);
  sameSet(await ids(store, { search: 'pens', rewardMin: 0.4, rewardMax: 0.6 }), [more.id]);
}
