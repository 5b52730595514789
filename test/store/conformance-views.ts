/**
 * Conformance, part four: the viewer's rollouts list served by the store in one request (daemon/store/views-rollouts.ts
 * rolloutsPage, POST /v1/agl/views/rollouts): each row's reward, resources version, duration and error from the
 * store's summaries, the exact total under the filters and the store's total, one page at an offset (at most
 * MAX_LIST_ROWS rows), and the filters' choices (statuses, modes, agents, resources versions newest first, runs
 * newest first), and whether a runner is connected (protocol/runner-presence.ts); one rollout of an eval or an
 * optimization described by what its run did, not by training's rule. Called from storeConformance with
 * its per-test store, so every backend (and the HTTP client) runs it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_LIST_ROWS } from '../../protocol/api.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { ROLLOUT_MODES, ROLLOUT_STATUSES } from '../../protocol/store.js';
import { rolloutsPage } from '../../daemon/store/views-rollouts.js';
import { rolloutView } from '../../daemon/store/views.js';
import { reply, reward, run } from './conformance-search.js';

export function rolloutsViewConformance(ctx: { readonly store: LightningStore }): void {
  describe('rollouts list view (one request)', () => {
    it('gives each row its reward, resources version, duration and error, the totals and the filters choices', async () => {
      const store = ctx.store;
      const v1 = await store.addResources({ resources: {} });
      const v2 = await store.addResources({ resources: {} });
      const runA = await store.createTrainingRun({ agent: 'calc.ts#agent', config: {}, totalSteps: 2 });
      const runB = await store.createTrainingRun({ agent: 'sql.ts#agent', config: {}, totalSteps: 2 });
      const good = await run(store, { question: 'Ann has 23 pens' }, [reply('38 pens'), reward(1)], {
        agent: 'calc.ts#agent',
        metadata: { runId: runA.id, step: 0 },
        finish: 'succeeded',
      });
      const bad = await run(store, { question: 'Bob eats apples' }, [reward(0)], { agent: 'calc.ts#agent', finish: 'failed', error: 'ValueError: no' });
      const queued = await store.enqueueRollout({ input: { question: 'pens again' }, agent: 'sql.ts#agent', resourcesId: v1.id });

      const page = await rolloutsPage(store, { agent: 'calc.ts#agent', sort: 'reward', order: 'desc' }, ['other.ts#agent']);
      assert.deepEqual(
        page.items.map((i) => [i.rollout.id, i.reward, i.error]),
        [
          [good.id, 1, null],
          [bad.id, 0, 'ValueError: no'],
        ],
      );
      assert.ok(page.items.every((i) => i.durationMs !== null && i.durationMs >= 0 && i.startedAt !== null));
      assert.equal(page.total, 2);
      assert.equal(page.storeTotal, 3, 'every rollout in the store, the filter hides one');
      assert.equal(page.offset, 0);
      assert.deepEqual(page.statuses, [...ROLLOUT_STATUSES]);
      assert.deepEqual(page.modes, [...ROLLOUT_MODES]);
      assert.deepEqual(page.agents, ['calc.ts#agent', 'other.ts#agent'], 'the known agents, those on the page and the one filtered on');
      assert.deepEqual(page.resourcesVersions, [v2.version, v1.version]);
      assert.deepEqual(page.runs.map((r) => r.id).sort(), [runA.id, runB.id].sort());
      assert.ok(page.runs[0]!.createdAt >= page.runs[1]!.createdAt, 'runs newest first');

      const searched = await rolloutsPage(store, { search: 'pens' });
      assert.deepEqual(searched.items.map((i) => i.rollout.id).sort(), [good.id, queued.id].sort());
      const withVersion = searched.items.find((i) => i.rollout.id === queued.id)!;
      assert.equal(withVersion.resourcesVersion, v1.version);
      assert.equal(withVersion.reward, null);
      const byRun = await rolloutsPage(store, { runId: runA.id, step: 0 });
      assert.deepEqual(
        byRun.items.map((i) => i.rollout.id),
        [good.id],
      );
      assert.deepEqual(byRun.agents, ['calc.ts#agent']);
    });

    it('says whether a runner is connected to claim the queued rows, from the workers heartbeats', async () => {
      const store = ctx.store;
      const queued = await store.enqueueRollout({ input: { question: 'waits' } });
      const connected = async () => (await rolloutsPage(store, {})).items.find((i) => i.rollout.id === queued.id)!.runnerConnected;
      assert.equal(await connected(), false, 'no worker ever heartbeat: "queuing: no runner is connected"');
      await store.heartbeatWorker('w-list', { status: 'idle' });
      assert.equal(await connected(), true, 'an idle worker polls the queue');
      await store.heartbeatWorker('w-list', { status: 'offline' });
      assert.equal(await connected(), false, 'the runner said it left');
    });

    it('pages from an offset, at most MAX_LIST_ROWS rows at once', async () => {
      const store = ctx.store;
      const made = await store.enqueueRollouts(Array.from({ length: MAX_LIST_ROWS + 5 }, (_, i) => ({ input: i })));
      const first = await rolloutsPage(store, { limit: MAX_LIST_ROWS + 50, order: 'asc' });
      assert.equal(first.items.length, MAX_LIST_ROWS);
      assert.equal(first.total, MAX_LIST_ROWS + 5);
      const rest = await rolloutsPage(store, { offset: MAX_LIST_ROWS, limit: 50, order: 'asc' });
      assert.equal(rest.offset, MAX_LIST_ROWS);
      assert.deepEqual(
        rest.items.map((i) => i.rollout.id),
        made.slice(MAX_LIST_ROWS).map((r) => r.id),
      );
    });
  });

  describe('one rollout (the viewer)', () => {
    it("says what an eval's or an optimization's rollout was, never 'trains every call' nor 'no token ids'", async () => {
      const agent = 'samples/calc/agent.ts#calcAgent';
      const llm = { upstream: { model: 'gpt-4o-mini', url: 'http://127.0.0.1:9/v1', keyEnv: 'K' }, model: null };
      const evaluation = await ctx.store.createTrainingRun({
        agent,
        kind: 'eval',
        totalSteps: 1,
        config: { agent, llm, data: { file: '/w/calc.eval.jsonl' } },
      });
      const graded = await run(ctx.store, { q: '2+2' }, [reply('4')], {
        agent,
        mode: 'test',
        finish: 'succeeded',
        metadata: { runId: evaluation.id, taskId: 't7', sample: 0 },
      });
      const detail = await rolloutView(ctx.store, { rolloutId: graded.id });
      assert.deepEqual([detail.roles?.kind, detail.roles?.rule], ['eval', 'evaluates gpt-4o-mini on calc.eval: an eval grades the agent and trains nothing']);
      assert.deepEqual(
        detail.calls.map((c) => [c.training, c.why]),
        [
          [
            'not-training',
            `Not trained: an eval rollout of run ${evaluation.id}, gpt-4o-mini on calc.eval row t7; an eval grades the agent and trains nothing.`,
          ],
        ],
      );
      const opt = await ctx.store.createTrainingRun({
        agent,
        kind: 'optimize',
        totalSteps: 10,
        config: { agent, llm, prompts: ['system'], algorithm: 'gepa' },
      });
      const scored = await run(ctx.store, { q: '2+3' }, [reply('5')], {
        agent,
        mode: 'val',
        finish: 'succeeded',
        metadata: { runId: opt.id, candidate: `pc-${opt.id}-3`, split: 'val', taskId: 'v1' },
      });
      const view = await rolloutView(ctx.store, { rolloutId: scored.id });
      assert.equal(view.roles?.kind, 'optimize');
      assert.match(view.calls[0]!.why, new RegExp(`^Not trained: candidate #3's rollout in optimization ${opt.id} on its val split, row v1;`));
    });
  });
}
