/**
 * The hot path (daemon/server/hot-path.ts) answers dequeue, span batches and searches, finish and waits
 * beside express. Every request it takes must get exactly the answer express gives the same request:
 * each case is sent twice, once as clients send it (Content-Length: the hot path) and once chunked (no
 * Content-Length: express), and the two answers are compared. Unusual requests go to express, and both
 * count in /metrics under the same route.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { createServerContext } from '../../daemon/server/server-context.js';
import { hotRouteMatcher, parseByteSize } from '../../daemon/server/hot-path.js';
import type { StoreRoute } from '../../daemon/server/route.js';
import { storeRoutes } from '../../daemon/server/store-api.js';
import { startDaemon, type Harness } from '../helpers/daemon.js';

interface Answer {
  status: number;
  type: string;
  authenticate: string | undefined;
  body: any;
}

describe('hot path beside express', () => {
  let d: Harness;
  before(async () => {
    d = await startDaemon();
  });
  after(async () => {
    await d?.close();
  });

  /** POST `body` (a string, sent as is); chunked = without Content-Length, which the hot path leaves to express. */
  function post(path: string, body: string | Buffer, opts: { chunked?: boolean; token?: string | null; contentType?: string } = {}): Promise<Answer> {
    const headers: Record<string, string> = { 'content-type': opts.contentType ?? 'application/json' };
    const token = opts.token === undefined ? d.token : opts.token;
    if (token !== null) headers.authorization = `Bearer ${token}`;
    if (!opts.chunked) headers['content-length'] = String(Buffer.byteLength(body));
    body = Buffer.from(body);
    return new Promise((resolve, reject) => {
      const req = request(d.url + path, { method: 'POST', headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            type: String(res.headers['content-type']),
            authenticate: res.headers['www-authenticate'] as string | undefined,
            body: JSON.parse(text),
          }),
        );
      });
      req.on('error', reject);
      if (opts.chunked) {
        req.write(body.subarray(0, 1));
        req.end(body.subarray(1));
      } else req.end(body);
    });
  }

  /** The same request through both paths: the answers must match. */
  async function same(path: string, body: string | Buffer, opts: { token?: string | null } = {}): Promise<Answer> {
    const hot = await post(path, body, opts);
    const viaExpress = await post(path, body, { ...opts, chunked: true });
    assert.deepEqual(hot, viaExpress, `${path} ${body}: hot path and express answer alike`);
    return hot;
  }

  it('answers the hot routes as express does: successes', async () => {
    assert.deepEqual((await same('/v1/agl/queues/rollouts/dequeue', '{"workerId":"w1"}')).body, { claims: [] });
    assert.deepEqual((await same('/v1/agl/queues/rollouts/dequeue', '\ufeff{"workerId":"w1"}')).body, { claims: [] }, 'a byte-order mark is dropped');
    assert.deepEqual((await same('/v1/agl/waits/rollouts', '{"ids":["ro-none"],"timeoutMs":0}')).body, { items: [] });
    const r = await d.client.enqueueRollout({ input: { q: 1 } });
    const claim = (await d.client.claimNextRollout('w1'))!;
    const span = JSON.stringify({ rolloutId: r.id, attemptId: claim.attempt.id, name: 'x', startTime: 1, spanId: 's1', traceId: 't1' });
    const hotAdd = await post('/v1/agl/spans', span);
    const expressAdd = await post('/v1/agl/spans', span, { chunked: true });
    assert.equal(hotAdd.status, 201);
    assert.equal(hotAdd.type, expressAdd.type);
    assert.deepEqual(
      hotAdd.body.spans.map((s: any) => s.sequenceId),
      [1],
    );
    assert.deepEqual(
      expressAdd.body.spans.map((s: any) => s.sequenceId),
      [2],
    );
    const found = await same('/v1/agl/spans/search', JSON.stringify({ rolloutId: r.id }));
    assert.deepEqual(
      found.body.items.map((s: any) => s.sequenceId),
      [1, 2],
    );
    assert.equal(found.type, 'application/json; charset=utf-8');
    const done = await post(`/v1/agl/rollouts/${r.id}/attempts/${claim.attempt.id}/finish`, '{"status":"succeeded"}');
    assert.equal(done.status, 200);
    assert.equal(done.body.rollout.status, 'succeeded');
    // A second finish conflicts, the same way through both paths.
    const again = await same(`/v1/agl/rollouts/${r.id}/attempts/${claim.attempt.id}/finish`, '{"status":"succeeded"}');
    assert.equal(again.status, 409);
    assert.deepEqual(
      (await same('/v1/agl/waits/rollouts', JSON.stringify({ ids: [r.id], timeoutMs: 0 }))).body.items.map((x: any) => x.status),
      ['succeeded'],
    );
  });

  it('answers the hot routes as express does: every kind of bad input', async () => {
    const malformed = await same('/v1/agl/spans', '{"spans": [');
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.type, 'urn:agl:problem:malformed-json');
    assert.equal(malformed.type, 'application/problem+json; charset=utf-8');
    assert.equal((await same('/v1/agl/queues/rollouts/dequeue', '"w1"')).status, 400, 'a JSON string is not a body');
    assert.deepEqual((await same('/v1/agl/queues/rollouts/dequeue', '')).body.errors, [{ path: 'workerId', message: 'is required' }]);
    assert.deepEqual((await same('/v1/agl/queues/rollouts/dequeue', '[1]')).body.errors?.[0]?.path, '(body)');
    const fields = await same('/v1/agl/spans', JSON.stringify({ spans: [{ rolloutId: 'r', attemptId: 'a', name: 'x', startTime: 'yesterday', extra: 1 }] }));
    assert.deepEqual(fields.body.errors.map((e: any) => e.path).sort(), ['spans[0].extra', 'spans[0].startTime']);
    const unknown = await same('/v1/agl/rollouts/ro-nope/attempts/at%2Dnope/finish', '{"status":"succeeded"}');
    assert.equal(unknown.status, 404);
    assert.match(unknown.body.detail, /ro-nope/);
    assert.equal(unknown.body.instance, '/v1/agl/rollouts/ro-nope/attempts/at%2Dnope/finish');
    assert.equal((await same('/v1/agl/waits/rollouts', '{"ids":[],"timeoutMs":-1}')).body.errors.length, 2);
    const missing = await same('/v1/agl/queues/rollouts/dequeue', '{"workerId":"w1"}', { token: null });
    assert.equal(missing.status, 401);
    assert.equal(missing.authenticate, 'Bearer realm="agl"');
    assert.match(missing.body.detail, /missing Authorization/);
    assert.match((await same('/v1/agl/spans', '{}', { token: 'not-the-token-at-all' })).body.detail, /wrong bearer token/);
  });

  it('answers alike the bodies that once killed the daemon, type errors and bytes that are not UTF-8', async () => {
    for (const body of ['{}', '[]', '{"rolloutId":5}', '{"rolloutId":"r","limit":-1}', '{"rolloutId":"r","x":1}']) {
      assert.equal((await same('/v1/agl/spans/search', body)).status, 400, body);
    }
    assert.deepEqual((await same('/v1/agl/spans/search', '{"rolloutId":5}')).body.errors, [{ path: 'rolloutId', message: 'expected string, received number' }]);
    assert.deepEqual((await same('/v1/agl/queues/rollouts/dequeue', '[]')).body.errors, [{ path: '(body)', message: 'expected object, received array' }]);
    const latin = await same('/v1/agl/queues/rollouts/dequeue', Buffer.concat([Buffer.from('{"workerId":"caf'), Buffer.from([0xe9]), Buffer.from('"}')]));
    assert.equal(latin.status, 400);
    assert.deepEqual(latin.body.errors, [{ path: '(body)', message: 'not valid UTF-8 at byte 16' }]);
    const deep = await same(
      '/v1/agl/spans',
      `{"rolloutId":"r","attemptId":"a","name":"x","startTime":1,"attributes":{"k":${'['.repeat(3000)}${']'.repeat(3000)}}}`,
    );
    assert.equal(deep.status, 400);
  });

  it('leaves unusual requests to express: other content types, query strings', async () => {
    const form = await post('/v1/agl/queues/rollouts/dequeue', 'workerId=w1', { contentType: 'application/x-www-form-urlencoded' });
    assert.equal(form.status, 415);
    assert.match(form.body.detail, /send the body as application\/json/);
    const latin = await post('/v1/agl/queues/rollouts/dequeue', '{"workerId":"w1"}', { contentType: 'application/json; charset=latin1' });
    assert.equal(latin.status, 415);
    assert.deepEqual((await post('/v1/agl/queues/rollouts/dequeue?x=1', '{"workerId":"w1"}')).body, { claims: [] });
  });

  it('counts both paths in /metrics under the route pattern', async () => {
    const text = await d.client.metrics();
    const count = (route: string, status: number) =>
      Number(new RegExp(`agl_http_requests_total\\{method="POST",route="${route}",status="${status}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
    assert.ok(count('/v1/agl/queues/rollouts/dequeue', 200) >= 4, 'dequeues counted');
    assert.ok(count('/v1/agl/rollouts/:id/attempts/:aid/finish', 404) >= 2, 'finishes counted by pattern, not by id, on both paths');
    assert.ok(count('/v1/agl/rollouts/:id/attempts/:aid/finish', 409) >= 2);
    // A 401 is counted under its route by the hot path; express answers it before routing, as (unmatched).
    assert.ok(count('/v1/agl/spans', 401) >= 1);
    assert.doesNotMatch(text, /route="\/v1\/agl\/rollouts\/ro-nope/);
    assert.doesNotMatch(text, /route="\/rollouts\//, 'express keeps the mount path after an error too');
  });

  it("serves the routes the one route table marks hot, and only those, matched in the table's order", () => {
    const routes = storeRoutes(createServerContext({ store: d.store, token: d.token, dataDir: d.dataDir }));
    assert.deepEqual(
      routes
        .filter((r) => r.hot)
        .map((r) => `${r.method} ${r.path}`)
        .sort(),
      [
        'POST /attempts/:aid/finish',
        'POST /queues/rollouts/dequeue',
        'POST /rollouts/:id/attempts/:aid/finish',
        'POST /spans',
        'POST /spans/search',
        'POST /waits/rollouts',
      ],
    );
    const match = hotRouteMatcher(routes);
    const hit = (path: string) => {
      const m = match(path);
      return m && { path: m.route.path, params: m.params };
    };
    assert.deepEqual(hit('/spans'), { path: '/spans', params: {} });
    assert.deepEqual(hit('/rollouts/ro%2D1/attempts/at-2/finish'), { path: '/rollouts/:id/attempts/:aid/finish', params: { id: 'ro-1', aid: 'at-2' } });
    assert.deepEqual(hit('/attempts/at-2/finish'), { path: '/attempts/:aid/finish', params: { aid: 'at-2' } });
    assert.equal(hit('/rollouts/ro-1/attempts/at-2/heartbeat'), null, 'a route express alone serves');
    assert.equal(hit('/rollouts/%E0%A4%A/attempts/at-2/finish'), null, 'a path that does not decode goes to express');
    assert.equal(hit('/spans/'), null);
    // The first route that matches decides, as in express: a hot route behind a plain one is left to express.
    const handle = () => ({ status: 200, body: '{}' });
    const shadowed: StoreRoute[] = [
      { method: 'POST', path: '/rollouts/:id', handle },
      { method: 'POST', path: '/rollouts/search', hot: true, handle },
    ];
    assert.equal(hotRouteMatcher(shadowed)('/rollouts/search'), null);
    assert.throws(() => hotRouteMatcher([{ method: 'GET', path: '/spans', hot: true, handle }]), /GET \/spans: only POST routes can be hot/);
  });

  it('reads body limits as express does', () => {
    assert.equal(parseByteSize('16mb'), 16 * 1024 * 1024);
    assert.equal(parseByteSize('64KB'), 65536);
    assert.equal(parseByteSize('1.5kb'), 1536);
    assert.equal(parseByteSize(100), 100);
    assert.equal(parseByteSize('2048'), 2048);
    assert.throws(() => parseByteSize('lots'), /invalid size 'lots'/);
  });
});
