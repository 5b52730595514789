/**
 * Conformance, part two: attempt lifecycle (finish, retries, timeouts, unresponsiveness and revival via
 * runHealthCheck with an injected `now`, where the store takes one), waits, resources, workers, statistics, training runs, metrics and
 * transitions. Called from storeConformance with its per-test store.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Claim, LightningStore } from '../../protocol/lightning-store.js';
import { ConflictError, NotFoundError } from '../../protocol/lightning-store.js';
import type { Transition } from '../../protocol/store.js';

const llm = (model: string) => ({ llm: { type: 'llm' as const, endpoint: 'http://127.0.0.1:1/v1', model } });
const span = (rolloutId: string, attemptId: string, name = 'step') => ({ rolloutId, attemptId, name, startTime: Date.now() });
const later = (seconds: number) => Date.now() + seconds * 1000;

/**
 * `injectableClock` false (a store over HTTP, where the daemon's clock decides): the tests that move time by
 * passing `now` to runHealthCheck are not registered; the watchdog test covers timeouts on the real clock.
 */
export function lifecycleConformance(ctx: { readonly store: LightningStore }, injectableClock = true): void {
  const timed = (name: string, fn: () => Promise<void>) => {
    if (injectableClock) it(name, fn);
  };
  describe('attempt lifecycle', () => {
    it('succeeds a rollout when its attempt succeeds; a second finish conflicts', async () => {
      const r = await ctx.store.enqueueRollout({ input: 1 });
      const c = (await ctx.store.claimNextRollout('w'))!;
      const { attempt, rollout } = await ctx.store.finishAttempt(c.attempt.id, { status: 'succeeded' });
      assert.equal(attempt.status, 'succeeded');
      assert.ok(attempt.endedAt !== null);
      assert.equal(rollout.status, 'succeeded');
      assert.ok(rollout.endedAt !== null);
      assert.deepEqual(await ctx.store.getRollout(r.id), rollout);
      await assert.rejects(ctx.store.finishAttempt(c.attempt.id, { status: 'failed' }), ConflictError);
      await assert.rejects(ctx.store.finishAttempt('at-missing', { status: 'failed' }), NotFoundError);
    });

    it('requeues a failed attempt per retryOn until maxAttempts, then fails', async () => {
      const r = await ctx.store.enqueueRollout({ input: 1, config: { maxAttempts: 2, retryOn: ['failed'] } });
      const c1 = (await ctx.store.claimNextRollout('w'))!;
      const f1 = await ctx.store.finishAttempt(c1.attempt.id, { status: 'failed', error: { message: 'boom', stack: 'at x' } });
      assert.equal(f1.rollout.status, 'requeuing');
      assert.deepEqual(f1.attempt.error, { message: 'boom', stack: 'at x' });
      const c2 = (await ctx.store.claimNextRollout('w'))!;
      assert.equal(c2.rollout.id, r.id);
      assert.equal(c2.attempt.sequence, 2);
      assert.equal(c2.rollout.attemptCount, 2);
      const f2 = await ctx.store.finishAttempt(c2.attempt.id, { status: 'failed' });
      assert.equal(f2.rollout.status, 'failed');
      assert.deepEqual(
        (await ctx.store.getAttempts(r.id)).map((a) => [a.sequence, a.status]),
        [
          [1, 'failed'],
          [2, 'failed'],
        ],
      );
      const noRetry = await ctx.store.enqueueRollout({ input: 2, config: { maxAttempts: 3, retryOn: ['timeout'] } });
      const c3 = (await ctx.store.claimNextRollout('w'))!;
      assert.equal((await ctx.store.finishAttempt(c3.attempt.id, { status: 'failed' })).rollout.status, 'failed');
      assert.equal((await ctx.store.getRollout(noRetry.id))?.status, 'failed');
      await assert.rejects(ctx.store.getAttempts('ro-missing'), NotFoundError);
    });

    timed('times out, requeues and lets the rollout be claimed and finished again (agent-lightning #218)', async () => {
      const r = await ctx.store.enqueueRollout({ input: 1, config: { timeoutSeconds: 5, maxAttempts: 2, retryOn: ['timeout'] } });
      const c1 = (await ctx.store.claimNextRollout('w1'))!;
      assert.deepEqual(await ctx.store.runHealthCheck(later(4)), { timedOut: [], unresponsive: [], requeued: [], failed: [] });
      const h = await ctx.store.runHealthCheck(later(6));
      assert.deepEqual(h, { timedOut: [c1.attempt.id], unresponsive: [], requeued: [r.id], failed: [] });
      assert.equal((await ctx.store.getAttempt(c1.attempt.id))?.status, 'timeout');
      assert.equal((await ctx.store.getRollout(r.id))?.status, 'requeuing');
      await assert.rejects(ctx.store.finishAttempt(c1.attempt.id, { status: 'succeeded' }), ConflictError);
      const c2 = (await ctx.store.claimNextRollout('w2'))!;
      assert.equal(c2.rollout.id, r.id);
      assert.equal((await ctx.store.finishAttempt(c2.attempt.id, { status: 'succeeded' })).rollout.status, 'succeeded');
      const h2 = await ctx.store.runHealthCheck(later(60));
      assert.deepEqual(h2, { timedOut: [], unresponsive: [], requeued: [], failed: [] });
    });

    timed('fails a timed-out rollout with no retries left', async () => {
      const r = await ctx.store.enqueueRollout({ input: 1, config: { timeoutSeconds: 1 } });
      await ctx.store.claimNextRollout('w');
      assert.deepEqual((await ctx.store.runHealthCheck(later(2))).failed, [r.id]);
      const [ended] = await ctx.store.waitForRollouts([r.id], 0);
      assert.equal(ended?.status, 'failed');
    });

    timed('marks an attempt unresponsive without heartbeats; heartbeats and spans keep it alive', async () => {
      const cfg = { unresponsiveSeconds: 10, maxAttempts: 3, retryOn: ['unresponsive' as const] };
      const [quiet, beating, spanning] = await ctx.store.enqueueRollouts([
        { input: 'q', config: cfg },
        { input: 'b', config: cfg },
        { input: 's', config: cfg },
      ]);
      const cq = (await ctx.store.claimNextRollout('w'))!;
      const cb = (await ctx.store.claimNextRollout('w'))!;
      const cs = (await ctx.store.claimNextRollout('w'))!;
      // Injected clock: the quiet attempt was last seen now; the others report 8 s later.
      await new Promise((r) => setTimeout(r, 5));
      const hb = await ctx.store.heartbeatAttempt(cb.attempt.id);
      assert.ok(hb.lastHeartbeat > cb.attempt.lastHeartbeat);
      assert.equal(hb.status, 'preparing');
      await ctx.store.addSpans([span(spanning!.id, cs.attempt.id)]);
      const h = await ctx.store.runHealthCheck(cq.attempt.lastHeartbeat + 10_002);
      assert.deepEqual(h.unresponsive, [cq.attempt.id]);
      assert.deepEqual(h.requeued, [quiet!.id]);
      assert.equal((await ctx.store.getRollout(beating!.id))?.status, 'preparing');
      assert.equal((await ctx.store.getRollout(spanning!.id))?.status, 'running');
      await assert.rejects(ctx.store.heartbeatAttempt('at-missing'), NotFoundError);
    });

    timed('revives an unresponsive attempt while its rollout has not moved on, not after', async () => {
      const cfg = { unresponsiveSeconds: 1, maxAttempts: 2, retryOn: ['unresponsive' as const] };
      const r = await ctx.store.enqueueRollout({ input: 1, config: cfg });
      const c1 = (await ctx.store.claimNextRollout('w'))!;
      await ctx.store.runHealthCheck(later(5));
      assert.equal((await ctx.store.getRollout(r.id))?.status, 'requeuing');
      const revived = await ctx.store.heartbeatAttempt(c1.attempt.id);
      assert.equal(revived.status, 'running');
      assert.equal(revived.endedAt, null);
      assert.equal((await ctx.store.getRollout(r.id))?.status, 'running');
      assert.equal(await ctx.store.claimNextRollout('w2'), null, 'a revived rollout leaves the queue');
      // Unresponsive again, and this time another worker claims it: the old attempt stays dead.
      await ctx.store.runHealthCheck(later(5));
      const c2 = (await ctx.store.claimNextRollout('w2'))!;
      assert.equal(c2.attempt.sequence, 2);
      assert.equal((await ctx.store.heartbeatAttempt(c1.attempt.id)).status, 'unresponsive');
      await ctx.store.addSpans([span(r.id, c1.attempt.id, 'late')]);
      assert.equal((await ctx.store.getAttempt(c1.attempt.id))?.status, 'unresponsive');
      await assert.rejects(ctx.store.finishAttempt(c1.attempt.id, { status: 'succeeded' }), ConflictError);
      assert.equal((await ctx.store.finishAttempt(c2.attempt.id, { status: 'succeeded' })).rollout.status, 'succeeded');
    });

    timed('lets the current unresponsive attempt finish (a slow worker that comes back)', async () => {
      const r = await ctx.store.enqueueRollout({ input: 1, config: { unresponsiveSeconds: 1, maxAttempts: 2, retryOn: ['unresponsive'] } });
      const c = (await ctx.store.claimNextRollout('w'))!;
      await ctx.store.runHealthCheck(later(5));
      const { rollout } = await ctx.store.finishAttempt(c.attempt.id, { status: 'succeeded' });
      assert.equal(rollout.status, 'succeeded');
      assert.equal((await ctx.store.getRollout(r.id))?.status, 'succeeded');
    });
  });

  describe('waitForRollouts', () => {
    it('returns ended rollouts at once, waits for the rest, and gives up after the timeout', async () => {
      const [a, b, c] = await ctx.store.enqueueRollouts([{ input: 'a' }, { input: 'b' }, { input: 'c' }]);
      const ca = (await ctx.store.claimNextRollout('w'))!;
      await ctx.store.finishAttempt(ca.attempt.id, { status: 'succeeded' });
      assert.deepEqual(
        (await ctx.store.waitForRollouts([a!.id, 'ro-missing'], 0)).map((r) => r.id),
        [a!.id],
      );
      const cb = (await ctx.store.claimNextRollout('w'))!;
      const waiting = ctx.store.waitForRollouts([a!.id, b!.id], 30_000);
      setTimeout(() => void ctx.store.finishAttempt(cb.attempt.id, { status: 'failed' }), 50);
      const done = await waiting;
      assert.deepEqual(
        done.map((r) => [r.id, r.status]),
        [
          [a!.id, 'succeeded'],
          [b!.id, 'failed'],
        ],
      );
      const partial = await ctx.store.waitForRollouts([a!.id, c!.id], 100);
      assert.deepEqual(
        partial.map((r) => r.id),
        [a!.id],
      );
      const cancelWait = ctx.store.waitForRollouts([c!.id], 30_000);
      await ctx.store.cancelRollout(c!.id);
      assert.equal((await cancelWait)[0]?.status, 'cancelled');
    });
  });

  describe('resources', () => {
    it('numbers versions from 1, returns the latest, by id, and lists newest first', async () => {
      assert.equal(await ctx.store.getLatestResources(), null);
      const v1 = await ctx.store.addResources({ resources: llm('a'), metadata: { step: 0 } });
      const v2 = await ctx.store.addResources({
        resources: { ...llm('b'), prompt: { type: 'prompt_template', template: 'Q: {q}' } },
      });
      assert.deepEqual([v1.version, v2.version], [1, 2]);
      assert.deepEqual(v1.metadata, { step: 0 });
      assert.deepEqual(await ctx.store.getLatestResources(), v2);
      assert.deepEqual(await ctx.store.getResources(v1.id), v1);
      assert.equal(await ctx.store.getResources('rs-missing'), null);
      assert.deepEqual(
        (await ctx.store.listResources()).map((r) => r.version),
        [2, 1],
      );
      assert.deepEqual(
        (await ctx.store.listResources(1)).map((r) => r.version),
        [2],
      );
      assert.equal((v2.resources.llm as { samplingParams: unknown }).samplingParams !== undefined, true);
      await assert.rejects(ctx.store.addResources({ resources: { x: { type: 'nope' } as never } }));
      const versions = await Promise.all(Array.from({ length: 10 }, () => ctx.store.addResources({ resources: llm('c') })));
      assert.deepEqual(
        versions.map((r) => r.version).sort((x, y) => x - y),
        [3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
      );
    });
  });

  describe('workers', () => {
    it('registers on first heartbeat, applies patches, lists', async () => {
      assert.equal(await ctx.store.getWorker('w1'), null);
      const w = await ctx.store.heartbeatWorker('w1');
      assert.deepEqual(
        { ...w, lastHeartbeat: 0 },
        { id: 'w1', status: 'idle', lastHeartbeat: 0, currentRolloutId: null, currentAttemptId: null, metadata: {} },
      );
      await ctx.store.heartbeatWorker('w1', { status: 'busy', currentRolloutId: 'ro-1', currentAttemptId: 'at-1', metadata: { pid: 1 } });
      const w2 = await ctx.store.heartbeatWorker('w1', { metadata: { host: 'h' } });
      assert.equal(w2.status, 'busy');
      assert.equal(w2.currentRolloutId, 'ro-1');
      assert.deepEqual(w2.metadata, { pid: 1, host: 'h' });
      assert.ok(w2.lastHeartbeat >= w.lastHeartbeat);
      await ctx.store.heartbeatWorker('w0', { status: 'offline' });
      assert.deepEqual(
        (await ctx.store.listWorkers()).map((x) => [x.id, x.status]),
        [
          ['w0', 'offline'],
          ['w1', 'busy'],
        ],
      );
      assert.deepEqual(await ctx.store.getWorker('w1'), w2);
    });
  });

  describe('statistics', () => {
    it('counts rollouts and attempts by status, spans, resources, workers and runs', async () => {
      await ctx.store.enqueueRollouts([{ input: 1 }, { input: 2 }, { input: 3 }]);
      const c = (await ctx.store.claimNextRollout('w'))!;
      await ctx.store.addSpans([span(c.rollout.id, c.attempt.id), span(c.rollout.id, c.attempt.id)]);
      await ctx.store.finishAttempt(c.attempt.id, { status: 'succeeded' });
      await ctx.store.claimNextRollout('w');
      await ctx.store.addResources({ resources: llm('x') });
      await ctx.store.heartbeatWorker('w');
      await ctx.store.createTrainingRun({ agent: 'a', config: {}, totalSteps: 3 });
      const s = await ctx.store.statistics();
      assert.deepEqual(s.rollouts, { queuing: 1, preparing: 1, running: 0, succeeded: 1, failed: 0, cancelled: 0, requeuing: 0 });
      assert.deepEqual(s.attempts, { preparing: 1, running: 0, succeeded: 1, failed: 0, timeout: 0, unresponsive: 0 });
      assert.deepEqual([s.spans, s.resources, s.workers, s.trainingRuns], [2, 1, 1, 1]);
    });
  });

  describe('training runs, metrics, transitions', () => {
    it('creates, updates and lists training runs', async () => {
      const run = await ctx.store.createTrainingRun({ agent: 'calc.ts#agent', config: { lr: 1e-5 }, totalSteps: 10 });
      assert.equal(run.status, 'running');
      assert.equal(run.step, 0);
      const named = await ctx.store.createTrainingRun({ id: 'run-fixed', agent: 'other', config: {}, totalSteps: 1 });
      assert.equal(named.id, 'run-fixed');
      await assert.rejects(ctx.store.createTrainingRun({ id: 'run-fixed', agent: 'other', config: {}, totalSteps: 1 }), ConflictError);
      const u = await ctx.store.updateTrainingRun(run.id, { step: 3, summary: { best: 0.5 }, checkpointDir: 'ckpt/3' });
      assert.deepEqual([u.step, u.summary, u.checkpointDir, u.status, u.config], [3, { best: 0.5 }, 'ckpt/3', 'running', { lr: 1e-5 }]);
      assert.deepEqual(await ctx.store.getTrainingRun(run.id), u);
      assert.equal(await ctx.store.getTrainingRun('run-missing'), null);
      await assert.rejects(ctx.store.updateTrainingRun('run-missing', { step: 1 }), NotFoundError);
      assert.deepEqual(
        (await ctx.store.listTrainingRuns('calc.ts#agent')).map((r) => r.id),
        [run.id],
      );
      assert.equal((await ctx.store.listTrainingRuns()).length, 2);
    });

    it("keeps a run's label across summary updates; only `label` sets or clears it", async () => {
      const run = await ctx.store.createTrainingRun({ agent: 'a', config: {}, totalSteps: 4 });
      const labelled = await ctx.store.updateTrainingRun(run.id, { label: '  lr 3e-4, two policies  ' });
      assert.equal(labelled.summary.label, 'lr 3e-4, two policies', 'trimmed');
      // What agl train does after each validation: its own summary, whole, without the label.
      const trained = await ctx.store.updateTrainingRun(run.id, { step: 2, summary: { elapsedMs: 10, best: { step: 2, reward: 0.5, path: null } } });
      assert.deepEqual(trained.summary, { elapsedMs: 10, best: { step: 2, reward: 0.5, path: null }, label: 'lr 3e-4, two policies' });
      assert.deepEqual((await ctx.store.getTrainingRun(run.id))!.summary, trained.summary);
      const renamed = await ctx.store.updateTrainingRun(run.id, { label: 'baseline', summary: { elapsedMs: 20 } });
      assert.deepEqual(renamed.summary, { elapsedMs: 20, label: 'baseline' });
      // A summary that names a label itself does not set it: only `label` does.
      const own = await ctx.store.updateTrainingRun(run.id, { summary: { label: 'not this', elapsedMs: 30 } });
      assert.deepEqual(own.summary, { elapsedMs: 30, label: 'baseline' });
      assert.equal((await ctx.store.updateTrainingRun(run.id, { label: 'x'.repeat(200) })).summary.label, 'x'.repeat(120), 'at most 120 characters');
      for (const clear of [null, '', '   ']) {
        await ctx.store.updateTrainingRun(run.id, { label: 'again' });
        const cleared = await ctx.store.updateTrainingRun(run.id, { label: clear });
        assert.equal('label' in cleared.summary, false, `label ${JSON.stringify(clear)} clears it`);
        assert.deepEqual((await ctx.store.getTrainingRun(run.id))!.summary, { elapsedMs: 30 });
      }
    });

    it('stores metrics and reads them after a step', async () => {
      for (const id of ['r1', 'r2']) await ctx.store.createTrainingRun({ id, agent: 'a', config: {}, totalSteps: 2 });
      await ctx.store.addMetrics([
        { runId: 'r1', step: 0, name: 'reward/mean', value: 0.1 },
        { runId: 'r1', step: 1, name: 'reward/mean', value: 0.4 },
      ]);
      await ctx.store.addMetrics([{ runId: 'r2', step: 0, name: 'loss', value: 2 }]);
      const all = await ctx.store.queryMetrics('r1');
      assert.deepEqual(
        all.map((m) => [m.step, m.name, m.value]),
        [
          [0, 'reward/mean', 0.1],
          [1, 'reward/mean', 0.4],
        ],
      );
      assert.ok(all.every((m) => typeof m.time === 'number' && m.runId === 'r1'));
      assert.deepEqual(
        (await ctx.store.queryMetrics('r1', 0)).map((m) => m.step),
        [1],
      );
    });

    it('stores transitions and queries them by run, rollout and step', async () => {
      // What they name exists (the HTTP API checks that; a local store does not need to).
      await ctx.store.createTrainingRun({ id: 'run-1', agent: 'a', config: {}, totalSteps: 2 });
      const [a, b] = [await ctx.store.startRollout({ input: 'a' }), await ctx.store.startRollout({ input: 'b' })];
      const t = (step: number, { rollout, attempt }: Claim, index: number): Transition => ({
        runId: 'run-1',
        step,
        rolloutId: rollout.id,
        attemptId: attempt.id,
        spanId: `s${index}`,
        groupId: 'task-1',
        index,
        agentName: null,
        reward: index === 1 ? 1 : null,
        credit: 0.5,
        advantage: -0.25,
        promptTokens: 10,
        completionTokens: 5,
      });
      await ctx.store.addTransitions([t(0, a, 0), t(0, a, 1), t(1, b, 0)]);
      assert.deepEqual(await ctx.store.queryTransitions({ rolloutId: a.rollout.id }), [t(0, a, 0), t(0, a, 1)]);
      assert.deepEqual(
        (await ctx.store.queryTransitions({ runId: 'run-1', step: 1 })).map((x) => x.rolloutId),
        [b.rollout.id],
      );
      assert.equal((await ctx.store.queryTransitions({ runId: 'run-1', limit: 2 })).length, 2);
    });
  });
}
