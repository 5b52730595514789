/**
 * The change feed's specification (LightningStore.watchChanges), which every local backend passes unchanged:
 * test/store/sqlite.test.ts and test/store/postgres.test.ts call `changeFeedConformance` with a factory giving two
 * stores on one database, `store` (the daemon's) and `other` (another process writing the same file or database:
 * `agl train`, a second daemon). Whoever wrote it, each commit is reported: rollouts created and moved (claim,
 * finish) with their agent and status, spans, runs' progress with their kind, metrics, transitions, resources, and a
 * prompt optimization's candidates (added, decided), optimizer calls and promoted prompts.
 * The feed is a notification: the tests wait for the change they expect (never for a time).
 */
import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { changedOptimizationIds, type StoreChange } from '../../protocol/events.js';
import { candidateId } from '../../protocol/prompts.js';

export interface TwoStores {
  store: LightningStore;
  other: LightningStore;
  cleanup: () => Promise<void>;
}

/** Everything the watched store reports, and a wait for a report that satisfies a predicate. */
class Recorder {
  readonly changes: StoreChange[] = [];
  private readonly waiters: Array<() => void> = [];
  readonly listener = (c: StoreChange): void => {
    this.changes.push(c);
    for (const w of this.waiters.splice(0)) w();
  };

  async until<T>(find: (changes: StoreChange[]) => T | undefined, what: string, timeoutMs = 20_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = find(this.changes);
      if (found !== undefined && found !== false) return found;
      const left = deadline - Date.now();
      assert.ok(left > 0, `no change reported: ${what}; got ${JSON.stringify(this.changes)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}

const rolloutIn = (id: string, status: string) => (cs: StoreChange[]) => cs.flatMap((c) => c.rollouts).find((r) => r.id === id && r.status === status);

export function changeFeedConformance(backend: string, factory: () => Promise<TwoStores>): void {
  describe(`LightningStore change feed: ${backend}`, () => {
    let two: TwoStores;
    let seen: Recorder;
    let stop: () => void;
    beforeEach(async () => {
      two = await factory();
      seen = new Recorder();
      assert.ok(two.store.watchChanges, `${backend} has watchChanges`);
      stop = await two.store.watchChanges(seen.listener);
    });
    afterEach(async () => {
      stop();
      await two.cleanup();
    });

    for (const writer of ['store', 'other'] as const) {
      it(`reports a rollout enqueued, claimed and finished by ${writer === 'store' ? 'the store itself' : 'another connection'}, with its spans`, async () => {
        const w = two[writer];
        const r = await w.enqueueRollout({ input: { q: 1 }, agent: 'feed.ts#agent' });
        const queued = await seen.until(rolloutIn(r.id, 'queuing'), 'the enqueued rollout');
        assert.deepEqual(queued, { id: r.id, agent: 'feed.ts#agent', status: 'queuing', attemptId: null, attempts: 0 });
        const [claim] = await w.claimRollouts('worker-1', 1);
        assert.equal(claim!.rollout.id, r.id);
        const preparing = await seen.until(rolloutIn(r.id, 'preparing'), 'the claimed rollout');
        assert.equal(preparing.attemptId, claim!.attempt.id);
        assert.equal(preparing.attempts, 1);
        await w.addSpans([{ rolloutId: r.id, attemptId: claim!.attempt.id, name: 'llm', startTime: Date.now() }]);
        await seen.until((cs) => cs.some((c) => c.spans.includes(r.id)), 'the spans of the rollout');
        await w.finishAttempt(claim!.attempt.id, { status: 'succeeded' });
        await seen.until(rolloutIn(r.id, 'succeeded'), 'the finished rollout');
      });
    }

    it("reports a training run's progress, its metrics and transitions, and new resources, written by another connection", async () => {
      const run = await two.other.createTrainingRun({ agent: 'feed.ts#agent', config: {}, totalSteps: 3 });
      await seen.until((cs) => cs.flatMap((c) => c.runs).find((p) => p.id === run.id && p.step === 0 && p.status === 'running'), 'the new run');
      await two.other.addMetrics([
        { runId: run.id, step: 1, name: 'reward_mean', value: 0.5 },
        { runId: run.id, step: 2, name: 'reward_mean', value: 0.6 },
      ]);
      await seen.until((cs) => cs.flatMap((c) => c.metrics).find((m) => m.runId === run.id && m.step === 2), 'the metric points up to step 2');
      await two.other.updateTrainingRun(run.id, { step: 2 });
      const moved = await seen.until((cs) => cs.flatMap((c) => c.runs).find((p) => p.id === run.id && p.step === 2), 'the run at step 2');
      assert.deepEqual(moved, { id: run.id, agent: 'feed.ts#agent', kind: 'train', status: 'running', step: 2, totalSteps: 3 });
      const { rollout, attempt } = await two.other.startRollout({ input: 1 });
      await two.other.addTransitions([
        {
          runId: run.id,
          step: 2,
          rolloutId: rollout.id,
          attemptId: attempt.id,
          spanId: 'sp-1',
          groupId: 'task-1',
          index: 0,
          agentName: null,
          reward: 1,
          credit: 1,
          advantage: 0.5,
          promptTokens: 3,
          completionTokens: 2,
        },
      ]);
      await seen.until((cs) => cs.some((c) => c.transitions.includes(run.id)), 'the transitions of the run');
      const res = await two.other.addResources({ resources: {} });
      await seen.until((cs) => cs.flatMap((c) => c.resources).find((x) => x.id === res.id && x.version === res.version), 'the resources version');
      await two.other.updateTrainingRun(run.id, { status: 'succeeded', step: 3 });
      await seen.until((cs) => cs.flatMap((c) => c.runs).find((p) => p.id === run.id && p.status === 'succeeded'), 'the run ended');
    });

    for (const writer of ['store', 'other'] as const) {
      it(`reports a prompt optimization's candidates, optimizer calls and promoted prompts written by ${writer === 'store' ? 'the store itself' : 'another connection'}`, async () => {
        const w = two[writer];
        const run = await w.createTrainingRun({ agent: 'feed.ts#agent', kind: 'optimize', config: {}, totalSteps: 0 });
        await seen.until((cs) => cs.flatMap((c) => c.runs).find((p) => p.id === run.id && p.kind === 'optimize'), 'the optimization, with its kind');
        const lineage = { parents: [], origin: 'seed' as const, component: null, reflection: null, minibatch: null };
        const seed = await w.addPromptCandidate({ id: candidateId(run.id, 0), runId: run.id, ordinal: 0, prompts: { system: 'Answer.' }, ...lineage });
        const candidate = (status: string) => (cs: StoreChange[]) => cs.flatMap((c) => c.candidates).find((x) => x.id === seed.id && x.status === status);
        assert.deepEqual(await seen.until(candidate('proposed'), 'the candidate added'), { id: seed.id, runId: run.id, status: 'proposed' });
        await w.decidePromptCandidate(seed.id, { status: 'accepted', scores: { val: 0.5 } });
        await seen.until(candidate('accepted'), 'the candidate decided');
        const message = { role: 'user' as const, content: 'reflect' };
        for (const seq of [0, 1]) {
          const answer = { response: 'ok', error: null, attempts: 1, promptTokens: 1, completionTokens: 1, cost: null, ms: 1 };
          await w.addOptimizerCall({ runId: run.id, seq, purpose: 'reflect', model: 'm', requestHash: `h${seq}`, messages: [message], ...answer });
        }
        await seen.until((cs) => cs.flatMap((c) => c.optimizerCalls).find((x) => x.runId === run.id && x.seq === 1), 'the optimizer calls');
        assert.ok(seen.changes.some((c) => changedOptimizationIds(c).includes(run.id)));
        await w.promotePrompt({ agent: 'feed.ts#agent', name: 'system', text: 'Answer.', candidateId: seed.id, by: 'editor' });
        const promoted = (from: number) => (cs: StoreChange[]) =>
          cs
            .slice(from)
            .flatMap((c) => c.promotedPrompts)
            .find((p) => p.agent === 'feed.ts#agent' && p.name === 'system');
        await seen.until(promoted(0), 'the promotion');
        const before = seen.changes.length;
        assert.equal(await w.clearPromotedPrompt({ agent: 'feed.ts#agent', name: 'system', by: 'editor' }), true);
        await seen.until(promoted(before), 'the clear');
      });
    }

    it('reports many rollouts in one change at most MAX_LISTED_CHANGES ids, saying the rest were left out', async () => {
      const rollouts = await two.other.enqueueRollouts(Array.from({ length: 250 }, (_, i) => ({ input: i, agent: 'bulk.ts#agent' })));
      const last = rollouts[rollouts.length - 1]!.id;
      // Every id is listed, or a change says some were left out.
      await seen.until((cs) => cs.some((c) => c.truncated) || cs.some((c) => c.rollouts.some((r) => r.id === last)), 'the bulk enqueue');
      assert.ok(seen.changes.every((c) => c.rollouts.length <= 200));
    });

    it('reports a rollout another connection changed without an attempt: its metadata, its cancellation', async () => {
      const r = await two.other.enqueueRollout({ input: 'to change' });
      await seen.until(rolloutIn(r.id, 'queuing'), 'the enqueued rollout');
      const before = seen.changes.length;
      await two.other.updateRolloutMetadata(r.id, { note: 'moved' });
      await seen.until(
        (cs) =>
          cs
            .slice(before)
            .flatMap((c) => c.rollouts)
            .find((x) => x.id === r.id),
        'the metadata change',
      );
      await two.other.cancelRollout(r.id);
      await seen.until(rolloutIn(r.id, 'cancelled'), 'the cancelled rollout');
    });

    it('reports a rollout the health check moved: its attempt timed out and it waits in the queue again', async () => {
      const r = await two.other.enqueueRollout({ input: 'slow', config: { timeoutSeconds: 1, maxAttempts: 2, retryOn: ['timeout'] } });
      const [claim] = await two.other.claimRollouts('worker-1', 1);
      assert.equal(claim!.rollout.id, r.id);
      await seen.until(rolloutIn(r.id, 'preparing'), 'the claimed rollout');
      assert.deepEqual((await two.other.runHealthCheck(Date.now() + 5_000)).requeued, [r.id]);
      await seen.until(rolloutIn(r.id, 'requeuing'), 'the requeued rollout');
    });

    it('watches again after every watcher stopped, and reports what is written from then on', async () => {
      stop();
      const r = await two.other.enqueueRollout({ input: 'written while nobody watched' });
      const again = new Recorder();
      stop = await two.store.watchChanges!(again.listener);
      const [claim] = await two.other.claimRollouts('worker-1', 1);
      assert.equal(claim!.rollout.id, r.id);
      await again.until(rolloutIn(r.id, 'preparing'), 'the claim after watching again');
      await two.other.finishAttempt(claim!.attempt.id, { status: 'succeeded' });
      await again.until(rolloutIn(r.id, 'succeeded'), 'the finished rollout');
    });

    it('stops reporting once unwatched', async () => {
      const second = new Recorder();
      const unwatch = await two.store.watchChanges!(second.listener);
      const a = await two.other.enqueueRollout({ input: 'a' });
      await second.until(rolloutIn(a.id, 'queuing'), 'the first rollout');
      unwatch();
      const b = await two.other.enqueueRollout({ input: 'b' });
      await seen.until(rolloutIn(b.id, 'queuing'), 'the second rollout, to the watcher still watching');
      assert.equal(rolloutIn(b.id, 'queuing')(second.changes), undefined, 'nothing after unwatching');
    });
  });
}
