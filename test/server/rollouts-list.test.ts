/**
 * The rollouts list over HTTP: search, filters, sorts, totals and summaries through GET /rollouts (query
 * string) and POST /rollouts/search (JSON), driven by the typed client against a real `agl serve`; and the
 * query validation: a bad value gets a 400 application/problem+json naming the parameter.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Problem } from '../../protocol/api.js';
import { startDaemonProcess, type DaemonProcess } from '../helpers/daemon-process.js';

describe('rollouts list over HTTP: search, filters, sorts, totals', () => {
  let d: DaemonProcess;
  const made: Record<string, string> = {};
  before(async () => {
    d = await startDaemonProcess();
    const tasks: Array<[string, string, number | null, Record<string, unknown>]> = [
      ['pens', 'Ann has 23 pens', 1, { runId: 'run-1', step: 0 }],
      ['apples', 'Bob eats 3 apples', 0, { runId: 'run-1', step: 1 }],
      ['cars', 'How many cars: "5" * (2)?', 0.5, { runId: 'run-2', step: 0 }],
      ['failing', 'this one raises', null, {}],
    ];
    for (const [key, question, reward, metadata] of tasks) {
      const { rollout, attempt } = await d.client.startRollout({ input: { question, answer: 'x' }, metadata, agent: 'list#agent' });
      const now = Date.now();
      await d.client.addSpans([
        {
          rolloutId: rollout.id,
          attemptId: attempt.id,
          name: 'gen_ai.chat',
          startTime: now,
          endTime: now + 5,
          attributes: { 'gen_ai.output.messages': JSON.stringify([{ role: 'assistant', content: `answer about ${key}` }]) },
        },
        ...(reward === null
          ? []
          : [{ rolloutId: rollout.id, attemptId: attempt.id, name: 'agentlightning.reward', startTime: now + 6, attributes: { 'agl.reward.value': reward } }]),
      ]);
      await d.client.finishAttempt(attempt.id, reward === null ? { status: 'failed', error: { message: 'ValueError: no' } } : { status: 'succeeded' });
      made[key] = rollout.id;
    }
  });
  after(async () => {
    await d?.stop('SIGTERM');
  });

  it('searches inputs and outputs, filters, sorts and counts, the same through GET and POST', async () => {
    const q = { search: 'answer', rewardMin: 0.25, sort: 'reward' as const, order: 'asc' as const, withTotal: true, withSummaries: true };
    for (const page of [await d.client.listRollouts(q), await d.client.queryRollouts(q)]) {
      assert.deepEqual(
        page.items.map((r) => r.id),
        [made.cars, made.pens],
      );
      assert.equal(page.total, 2);
      assert.deepEqual(
        page.summaries!.map((s) => s.finalReward),
        [0.5, 1],
      );
      assert.ok(page.summaries!.every((s) => s.durationMs !== null && s.durationMs >= 0));
    }
    const cars = await d.client.listRollouts({ search: '"5" * (2', withTotal: true });
    assert.deepEqual(
      cars.items.map((r) => r.id),
      [made.cars],
      'quotes, stars and brackets are not syntax',
    );
    const errored = await d.client.listRollouts({ hasError: true, withSummaries: true });
    assert.deepEqual(
      errored.items.map((r) => r.id),
      [made.failing],
    );
    assert.equal(errored.summaries![0]!.error, 'ValueError: no');
    const run1 = await d.client.listRollouts({ runId: 'run-1', step: 1, withTotal: true });
    assert.deepEqual(
      run1.items.map((r) => r.id),
      [made.apples],
    );
    const second = await d.client.listRollouts({ sort: 'status', order: 'asc', offset: 3, limit: 2, withTotal: true });
    assert.equal(second.total, 4);
    assert.deepEqual(
      second.items.map((r) => r.status),
      ['failed'],
      'offset 3 of 4 leaves the last one',
    );
  });

  /** GET /v1/agl/rollouts?<query>, expecting a 400 problem that names `param`. */
  async function badQuery(query: string, param: string): Promise<Problem> {
    const res = await fetch(`${d.url}/v1/agl/rollouts?${query}`, { headers: { authorization: `Bearer ${d.token}` } });
    const text = await res.text();
    assert.equal(res.status, 400, `${query}: ${text}`);
    assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    const problem = JSON.parse(text) as Problem;
    assert.ok(
      problem.errors?.some((e) => e.path === param),
      `${query}: the problem names ${param}: ${text}`,
    );
    return problem;
  }

  it('refuses bad query values with a 400 problem naming the parameter', async () => {
    await badQuery('rewardMin=high', 'rewardMin');
    await badQuery('rewardMax=1e999', 'rewardMax');
    await badQuery('rewardMin=0.9&rewardMax=0.1', 'rewardMax');
    await badQuery('sort=fastest', 'sort');
    await badQuery('order=up', 'order');
    await badQuery('hasError=yes', 'hasError');
    await badQuery('withTotal=1', 'withTotal');
    await badQuery('offset=-5', 'offset');
    await badQuery('offset=1.5', 'offset');
    await badQuery('step=two', 'step');
    await badQuery(`search=${'w'.repeat(1001)}`, 'search');
    await badQuery('sort=reward&cursor=czE', 'cursor');
    await badQuery('cursor=czE&offset=10', 'offset');
    const body = await fetch(`${d.url}/v1/agl/rollouts/search`, {
      method: 'POST',
      headers: { authorization: `Bearer ${d.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ rewardMin: '0.5', hasError: 'true', sort: 'fast' }),
    });
    const problem = (await body.json()) as Problem;
    assert.equal(body.status, 400);
    assert.deepEqual(problem.errors!.map((e) => e.path).sort(), ['hasError', 'rewardMin', 'sort']);
    assert.equal((await d.client.listRollouts({ withTotal: true })).total, 4, 'the daemon keeps serving');
  });

  it("serves the viewer's list page in one request (POST /views/rollouts), and refuses a bad one naming the field", async () => {
    const page = await d.client.getRolloutsView({ search: 'answer', rewardMin: 0.25, sort: 'reward', order: 'asc' });
    assert.deepEqual(
      page.items.map((i) => [i.rollout.id, i.reward]),
      [
        [made.cars, 0.5],
        [made.pens, 1],
      ],
    );
    assert.equal(page.total, 2);
    assert.equal(page.storeTotal, 4);
    assert.deepEqual(page.agents, ['list#agent'], 'the agent the daemon saw enqueued');
    const res = await fetch(`${d.url}/v1/agl/views/rollouts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${d.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ offset: -1, withTotal: true, rewardMin: 1, rewardMax: 0 }),
    });
    assert.equal(res.status, 400);
    assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    const problem = (await res.json()) as Problem;
    assert.deepEqual(problem.errors!.map((e) => e.path).sort(), ['offset', 'rewardMax', 'withTotal']);
  });
});
