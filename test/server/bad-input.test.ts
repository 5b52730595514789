/**
 * Bad input at the HTTP edge: malformed JSON, wrong types, unknown fields, unknown ids, oversized bodies,
 * missing or wrong token. Each gets a 4xx application/problem+json naming the problem, and the daemon
 * keeps serving afterwards.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Problem } from '../../protocol/api.js';
import { AglClient, AglHttpError } from '../../sdk/client.js';
import { startDaemonProcess, type DaemonProcess } from './daemon-process.js';

describe('bad input gets a 4xx problem+json and the daemon keeps serving', () => {
  let d: DaemonProcess;
  before(async () => { d = await startDaemonProcess(undefined, ['--body-limit', '64kb']); });
  after(async () => { await d?.stop('SIGTERM'); });

  /** Raw request (so the body can be anything), expecting a problem of `status`. */
  async function problem(method: string, path: string, init: { body?: string; token?: string | null; contentType?: string } = {}, status: number): Promise<Problem> {
    const headers: Record<string, string> = { 'content-type': init.contentType ?? 'application/json' };
    const token = init.token === undefined ? d.token : init.token;
    if (token !== null) headers.authorization = `Bearer ${token}`;
    const res = await fetch(d.url + path, { method, headers, body: init.body });
    const text = await res.text();
    assert.equal(res.status, status, `${method} ${path}: expected ${status}, got ${res.status}: ${text}`);
    assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    const body = JSON.parse(text) as Problem;
    assert.equal(body.status, status);
    assert.ok(body.type && body.title && body.detail, 'type, title and detail are set');
    return body;
  }

  it('malformed JSON -> 400 saying so', async () => {
    const p = await problem('POST', '/v1/agl/queues/rollouts/enqueue', { body: '{"input": {"q": 1' }, 400);
    assert.match(p.detail, /not valid JSON/);
    assert.equal(p.errors?.[0]?.path, '(body)');
  });

  it('wrong types and unknown fields -> 400 naming each field', async () => {
    const p = await problem('POST', '/v1/agl/queues/rollouts/enqueue', { body: JSON.stringify({ input: 1, mode: 'training', config: { maxAttempts: 'three' }, imput: 2 }) }, 400);
    const paths = p.errors!.map((e) => e.path).sort();
    assert.deepEqual(paths, ['config.maxAttempts', 'imput', 'mode']);
    assert.match(p.errors!.find((e) => e.path === 'imput')!.message, /unknown field/);

    const many = await problem('POST', '/v1/agl/queues/rollouts/enqueue', { body: JSON.stringify({ rollouts: [{ input: 1 }, { input: 2, mode: 7 }] }) }, 400);
    assert.equal(many.errors?.[0]?.path, 'rollouts[1].mode');

    const missing = await problem('POST', '/v1/agl/queues/rollouts/dequeue', { body: '{}' }, 400);
    assert.deepEqual(missing.errors, [{ path: 'workerId', message: 'is required' }]);
    assert.match(missing.detail, /workerId: is required/);

    const span = await problem('POST', '/v1/agl/spans', { body: JSON.stringify({ spans: [{ rolloutId: 'r', attemptId: 'a', name: 'x', startTime: 'yesterday' }] }) }, 400);
    assert.equal(span.errors?.[0]?.path, 'spans[0].startTime');
  });

  it('a body that is not sent as JSON -> 415 naming the content type; not a JSON object -> 400', async () => {
    const p = await problem('POST', '/v1/agl/resources', { body: 'resources=1', contentType: 'application/x-www-form-urlencoded' }, 415);
    assert.deepEqual(p.errors, [{ path: 'headers.content-type', message: 'expected application/json, received application/x-www-form-urlencoded' }]);
    const arr = await problem('POST', '/v1/agl/resources', { body: '[1,2]' }, 400);
    assert.deepEqual(arr.errors, [{ path: '(body)', message: 'expected object, received array' }]);
  });

  it('bad query strings -> 400 naming the parameter', async () => {
    const p = await problem('GET', '/v1/agl/rollouts?status=runing&limit=0', {}, 400);
    assert.deepEqual(p.errors!.map((e) => e.path).sort(), ['limit', 'status[0]']);
    const c = await problem('GET', '/v1/agl/rollouts?cursor=garbage', {}, 400);
    assert.equal(c.errors?.[0]?.path, 'cursor');
    await problem('GET', '/v1/agl/spans', {}, 400);
  });

  it('unknown ids -> 404 naming the id; unknown routes -> 404 naming the route', async () => {
    assert.match((await problem('GET', '/v1/agl/rollouts/ro-nope', {}, 404)).detail, /ro-nope/);
    assert.match((await problem('POST', '/v1/agl/rollouts/ro-nope/cancel', {}, 404)).detail, /ro-nope/);
    assert.match((await problem('GET', '/v1/agl/rollouts/ro-nope/attempts', {}, 404)).detail, /ro-nope/);
    assert.match((await problem('POST', '/v1/agl/rollouts/ro-nope/attempts/at-nope/finish', { body: '{"status":"succeeded"}' }, 404)).detail, /nope/);
    assert.match((await problem('GET', '/v1/agl/resources/res-nope', {}, 404)).detail, /res-nope/);
    assert.match((await problem('GET', '/v1/agl/training-runs/run-nope', {}, 404)).detail, /run-nope/);
    assert.match((await problem('GET', '/v1/agl/no/such/route', {}, 404)).detail, /no route GET \/v1\/agl\/no\/such\/route/);
    const r = await d.client.enqueueRollout({ input: null });
    assert.match((await problem('POST', '/v1/agl/spans', { body: JSON.stringify({ rolloutId: r.id, attemptId: 'at-nope', name: 'x', startTime: 1 }) }, 404)).detail, /at-nope/);
    // An attempt id of another rollout is not found under this one.
    const other = await d.client.startRollout({ input: null });
    await problem('GET', `/v1/agl/rollouts/${r.id}/attempts/${other.attempt.id}`, {}, 404);
  });

  it('oversized bodies -> 413 with the limit', async () => {
    const big = JSON.stringify({ input: 'x'.repeat(100 * 1024) });
    const p = await problem('POST', '/v1/agl/queues/rollouts/enqueue', { body: big }, 413);
    assert.match(p.detail, /exceeds the limit of 65536 bytes/);
  });

  it('missing or wrong token -> 401 before anything else', async () => {
    const missing = await problem('GET', '/v1/agl/statistics', { token: null }, 401);
    assert.match(missing.detail, /missing Authorization/);
    const wrong = await problem('POST', '/v1/agl/queues/rollouts/enqueue', { token: 'not-the-token', body: '{"input":1}' }, 401);
    assert.match(wrong.detail, /wrong bearer token/);
    await problem('GET', '/metrics', { token: null }, 401);
    const before = await d.client.statistics();
    await problem('POST', '/v1/agl/queues/rollouts/enqueue', { token: 'nope', body: '{"input":1}' }, 401);
    assert.deepEqual(await d.client.statistics(), before, 'a rejected request changed nothing');
  });

  it('the client surfaces problems as AglHttpError with status, detail and field errors', async () => {
    const bad = new AglClient({ url: d.url, token: d.token });
    await assert.rejects(bad.dequeueRollouts({ workerId: '', limit: 5000 }), (e: unknown) => {
      assert.ok(e instanceof AglHttpError);
      assert.equal(e.status, 400);
      assert.deepEqual(e.errors.map((x) => x.path).sort(), ['limit', 'workerId']);
      return true;
    });
  });

  it('after all of that the daemon still serves', async () => {
    assert.equal((await d.client.health()).status, 'ok');
    const r = await d.client.enqueueRollout({ input: { fine: true } });
    assert.equal((await d.client.getRollout(r.id))?.status, 'queuing');
    assert.equal(d.child.exitCode, null);
  });
});
