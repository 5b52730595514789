/**
 * The store API end to end: a real `agl serve` process, real HTTP, every route driven through the typed
 * client (client/client.ts) — the way the runner, the CLI and the extension use it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AglHttpError } from '../../client/client.js';
import { startDaemonProcess, type DaemonProcess } from '../helpers/daemon-process.js';

describe('store API over HTTP (agl serve + AglClient)', () => {
  let d: DaemonProcess;
  before(async () => {
    d = await startDaemonProcess();
  });
  after(async () => {
    await d?.stop('SIGTERM');
  });

  it('answers /health without a token and names the store', async () => {
    const h = await d.client.health();
    assert.equal(h.status, 'ok');
    assert.equal(h.store, 'sqlite');
    assert.equal(h.pid, d.child.pid);
  });

  it('enqueues one and many rollouts, lists them with filters and cursor paging', async () => {
    const one = await d.client.enqueueRollout({ input: { q: 'one' }, agent: 'samples/calc/agent.ts#calc', mode: 'val' });
    assert.equal(one.status, 'queuing');
    assert.equal(one.mode, 'val');
    assert.deepEqual(one.input, { q: 'one' });
    const many = await d.client.enqueueRollouts(Array.from({ length: 5 }, (_, i) => ({ input: { i }, agent: 'paging#agent', metadata: { i } })));
    assert.equal(many.length, 5);
    assert.deepEqual(
      many.map((r) => (r.input as { i: number }).i),
      [0, 1, 2, 3, 4],
    );

    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const res = await d.client.queryRollouts({ agent: 'paging#agent', limit: 2, cursor });
      assert.ok(res.items.length <= 2);
      seen.push(...res.items.map((r) => r.id));
      if (!res.nextCursor) break;
      cursor = res.nextCursor;
    }
    assert.deepEqual([...seen].sort(), many.map((r) => r.id).sort(), 'cursor paging returns every rollout once');

    const viaGet = await d.client.listRollouts({ status: ['queuing'], mode: 'val', limit: 50 });
    assert.deepEqual(
      viaGet.items.map((r) => r.id),
      [one.id],
      'GET /rollouts applies status and mode from the query string',
    );
    assert.deepEqual((await d.client.agents()).map((a) => a.agent).sort(), ['paging#agent', 'samples/calc/agent.ts#calc']);
  });

  it('runs a rollout through the queue: dequeue, heartbeat, spans, finish, wait', async () => {
    await d.client.addResources({ resources: { llm: { type: 'llm', endpoint: 'http://127.0.0.1:1/v1', model: 'm' } } });
    const r = await d.client.enqueueRollout({ input: { q: 'queue' }, agent: 'queue#agent' });
    const claims = await d.client.dequeueRollouts({ workerId: 'w1', agent: 'queue#agent', limit: 3 });
    assert.equal(claims.length, 1);
    const { rollout, attempt } = claims[0];
    assert.equal(rollout.id, r.id);
    assert.equal(rollout.status, 'preparing');
    assert.equal(attempt.workerId, 'w1');
    assert.deepEqual(await d.client.dequeueRollouts({ workerId: 'w2', agent: 'queue#agent' }), [], 'claimed exactly once');

    const beat = await d.client.heartbeatAttempt(attempt.id);
    assert.ok(beat.lastHeartbeat >= attempt.lastHeartbeat);
    const nested = await d.client.request<typeof beat>('POST', `/rollouts/${r.id}/attempts/${attempt.id}/heartbeat`);
    assert.ok(nested.lastHeartbeat >= beat.lastHeartbeat, 'an attempt is also addressed within its rollout');

    const ack = await d.client.addSpans([
      { rolloutId: r.id, attemptId: attempt.id, name: 'agent0', startTime: 1, endTime: 2, attributes: { task: 'queue' } },
      { rolloutId: r.id, attemptId: attempt.id, name: 'agentlightning.reward', startTime: 3, attributes: { 'agl.reward.value': 1.5 } },
    ]);
    assert.equal(ack.length, 2);
    assert.ok(ack[1]!.sequenceId > ack[0]!.sequenceId, 'sequence ids increase in request order');
    const single = await d.client.addSpan({ rolloutId: r.id, attemptId: attempt.id, name: 'final', startTime: 4 });
    assert.equal(single.sequenceId, ack[1]!.sequenceId + 1);

    assert.equal((await d.client.getLatestAttempt(r.id))?.status, 'running', 'the first span flips the attempt to running');
    const all = await d.client.querySpans({ rolloutId: r.id, attemptId: 'latest' });
    assert.deepEqual(
      all.map((s) => s.name),
      ['agent0', 'agentlightning.reward', 'final'],
    );
    const tail = await d.client.querySpans({ rolloutId: r.id, afterSequenceId: ack[1]!.sequenceId });
    assert.deepEqual(
      tail.map((s) => s.name),
      ['final'],
      'afterSequenceId tails',
    );
    const viaGet = await d.client.request<{ items: { name: string }[] }>('GET', '/spans', undefined, { rolloutId: r.id, name: 'agent0' });
    assert.deepEqual(
      viaGet.items.map((s) => s.name),
      ['agent0'],
    );

    const waiting = d.client.waitForRollouts([r.id], 20_000);
    const finished = await d.client.finishAttempt(attempt.id, { status: 'succeeded' });
    assert.equal(finished.rollout.status, 'succeeded');
    assert.deepEqual(
      (await waiting).map((x) => x.id),
      [r.id],
      'the long-poll returns when the rollout ends',
    );
    assert.equal((await d.client.getRollout(r.id))?.status, 'succeeded');
    assert.deepEqual(
      (await d.client.getAttempts(r.id)).map((a) => a.status),
      ['succeeded'],
    );

    await assert.rejects(
      d.client.finishAttempt(attempt.id, { status: 'failed' }),
      (e: unknown) => e instanceof AglHttpError && e.status === 409 && /already ended/.test(e.detail),
      'finishing twice is a 409',
    );
  });

  it('starts a direct rollout, cancels another, updates metadata', async () => {
    const claim = await d.client.startRollout({ input: 'direct' }, 'runner-1');
    assert.equal(claim.attempt.rolloutId, claim.rollout.id);
    assert.equal((await d.client.getAttempt(claim.attempt.id))?.id, claim.attempt.id);
    assert.equal((await d.client.request<{ id: string }>('GET', `/rollouts/${claim.rollout.id}/attempts/${claim.attempt.id}`)).id, claim.attempt.id);
    const updated = await d.client.updateRolloutMetadata(claim.rollout.id, { note: 'hi' });
    assert.equal(updated.metadata.note, 'hi');

    const q = await d.client.enqueueRollout({ input: 'to cancel' });
    assert.equal((await d.client.cancelRollout(q.id)).status, 'cancelled');
    await assert.rejects(d.client.cancelRollout(q.id), (e: unknown) => e instanceof AglHttpError && e.status === 409);
  });

  it("times out a silent attempt on the daemon's watchdog timer, with no request touching the rollout", async () => {
    const { rollout } = await d.client.startRollout({ input: 'hangs', config: { timeoutSeconds: 0.5, maxAttempts: 1 } }, 'w');
    const ended = await d.client.waitForRollouts([rollout.id], 30_000);
    assert.deepEqual(
      ended.map((r) => [r.id, r.status]),
      [[rollout.id, 'failed']],
    );
    assert.equal((await d.client.getLatestAttempt(rollout.id))?.status, 'timeout');
  });

  it('publishes and reads resources', async () => {
    const v = await d.client.addResources({ resources: { prompt: { type: 'prompt_template', template: 'Q: {q}' } }, metadata: { step: 1 } });
    assert.equal((await d.client.getLatestResources())?.id, v.id);
    assert.deepEqual((await d.client.getResources(v.id))?.resources.prompt, { type: 'prompt_template', template: 'Q: {q}', engine: 'f-string' });
    const list = await d.client.listResources(10);
    assert.ok(list.some((x) => x.id === v.id));
    assert.equal(await d.client.getResources('no-such-resources'), null);
  });

  it('tracks workers', async () => {
    const w = await d.client.heartbeatWorker('worker-a', { status: 'busy', metadata: { host: 'h' } });
    assert.equal(w.status, 'busy');
    assert.equal((await d.client.getWorker('worker-a'))?.metadata.host, 'h');
    assert.ok((await d.client.listWorkers()).some((x) => x.id === 'worker-a'));
    assert.equal(await d.client.getWorker('nobody'), null);
  });

  it('stores training runs, metrics and transitions', async () => {
    const run = await d.client.createTrainingRun({ agent: 'calc#agent', totalSteps: 3, config: { lr: 1e-5 } });
    assert.equal(run.status, 'running');
    const moved = await d.client.updateTrainingRun(run.id, { step: 1, summary: { best: 0.5 } });
    assert.equal(moved.step, 1);
    // The user's label, through the declared route: kept by a later summary update, refused when too long.
    assert.equal((await d.client.updateTrainingRun(run.id, { label: 'baseline' })).summary.label, 'baseline');
    assert.deepEqual((await d.client.updateTrainingRun(run.id, { summary: { best: 0.75 } })).summary, { best: 0.75, label: 'baseline' });
    await assert.rejects(d.client.updateTrainingRun(run.id, { label: 'x'.repeat(201) }), /label/);
    await d.client.addMetrics([
      { runId: run.id, step: 0, name: 'reward/mean', value: 0.25 },
      { runId: run.id, step: 1, name: 'reward/mean', value: 0.5 },
    ]);
    const after0 = await d.client.queryMetrics(run.id, 0);
    assert.deepEqual(
      after0.map((m) => [m.step, m.value]),
      [[1, 0.5]],
    );
    assert.deepEqual(
      (await d.client.listTrainingRuns('calc#agent')).map((r) => r.id),
      [run.id],
    );

    const { rollout, attempt } = await d.client.startRollout({ input: null });
    const t = {
      runId: run.id,
      step: 1,
      rolloutId: rollout.id,
      attemptId: attempt.id,
      spanId: 's1',
      groupId: 'g',
      index: 0,
      agentName: null,
      reward: 1,
      credit: 1,
      advantage: 0.5,
      promptTokens: 10,
      completionTokens: 4,
    };
    await d.client.addTransitions([t]);
    assert.deepEqual(await d.client.queryTransitions({ runId: run.id }), [t]);
    // A transition must name a run, a rollout and an attempt of that rollout that exist: 404 naming the first that does not.
    for (const [patch, path, id] of [
      [{ runId: 'run-nope' }, 'runId', 'run-nope'],
      [{ rolloutId: 'ro-nope' }, 'rolloutId', 'ro-nope'],
      [{ attemptId: 'at-nope' }, 'attemptId', 'at-nope'],
    ] as const) {
      await assert.rejects(d.client.addTransitions([t, { ...t, ...patch }]), (e: unknown) => {
        assert.ok(e instanceof AglHttpError && e.status === 404, String(e));
        assert.match(e.message, new RegExp(id));
        assert.deepEqual(e.errors, [{ path: `transitions[1].${path}`, message: 'not found' }]);
        return true;
      });
    }
    assert.equal((await d.client.queryTransitions({ runId: run.id })).length, 1, 'nothing of a refused batch was stored');
  });

  it('reports statistics and Prometheus metrics', async () => {
    const st = await d.client.statistics();
    assert.ok(st.rollouts.succeeded >= 1);
    assert.ok(st.spans >= 3);
    const text = await d.client.metrics();
    assert.match(text, /agl_http_requests_total\{method="POST",route="\/v1\/agl\/spans",status="201"\} \d+/);
    assert.match(text, /agl_http_request_duration_seconds_bucket\{method="POST",route="\/v1\/agl\/spans",le="\+Inf"\} \d+/);
    assert.match(text, /agl_store_rollouts\{status="succeeded"\} [1-9]/);
    assert.match(text, /agl_store_spans [1-9]/);
  });
});
