/**
 * Bad input at the HTTP edge: malformed JSON, wrong types, unknown fields, unknown ids, oversized bodies,
 * missing or wrong token, wrong content types, bytes that are not UTF-8, JSON nested too deep, header
 * blocks over the limit, and the requests that once killed the daemon. Each gets a 4xx application/problem+json naming the problem, and the daemon
 * keeps serving afterwards.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Problem } from '../../protocol/api.js';
import { AglClient, AglHttpError } from '../../client/client.js';
import { startDaemonProcess, type DaemonProcess } from '../helpers/daemon-process.js';

describe('bad input gets a 4xx problem+json and the daemon keeps serving', () => {
  let d: DaemonProcess;
  before(async () => {
    d = await startDaemonProcess(undefined, ['--body-limit', '64kb']);
  });
  after(async () => {
    await d?.stop('SIGTERM');
  });

  /** Raw request (so the body can be anything), expecting a problem of `status`. */
  async function problem(
    method: string,
    path: string,
    init: { body?: string | Uint8Array; token?: string | null; contentType?: string } = {},
    status: number,
  ): Promise<Problem> {
    const headers: Record<string, string> = { 'content-type': init.contentType ?? 'application/json' };
    const token = init.token === undefined ? d.token : init.token;
    if (token !== null) headers.authorization = `Bearer ${token}`;
    const res = await fetch(d.url + path, { method, headers, body: init.body as BodyInit | undefined });
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
    const p = await problem(
      'POST',
      '/v1/agl/queues/rollouts/enqueue',
      { body: JSON.stringify({ input: 1, mode: 'training', config: { maxAttempts: 'three' }, imput: 2 }) },
      400,
    );
    const paths = p.errors!.map((e) => e.path).sort();
    assert.deepEqual(paths, ['config.maxAttempts', 'imput', 'mode']);
    assert.match(p.errors!.find((e) => e.path === 'imput')!.message, /unknown field/);

    const many = await problem('POST', '/v1/agl/queues/rollouts/enqueue', { body: JSON.stringify({ rollouts: [{ input: 1 }, { input: 2, mode: 7 }] }) }, 400);
    assert.equal(many.errors?.[0]?.path, 'rollouts[1].mode');

    const missing = await problem('POST', '/v1/agl/queues/rollouts/dequeue', { body: '{}' }, 400);
    assert.deepEqual(missing.errors, [{ path: 'workerId', message: 'is required' }]);
    assert.match(missing.detail, /workerId: is required/);

    const span = await problem(
      'POST',
      '/v1/agl/spans',
      { body: JSON.stringify({ spans: [{ rolloutId: 'r', attemptId: 'a', name: 'x', startTime: 'yesterday' }] }) },
      400,
    );
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
    assert.match(
      (await problem('POST', '/v1/agl/spans', { body: JSON.stringify({ rolloutId: r.id, attemptId: 'at-nope', name: 'x', startTime: 1 }) }, 404)).detail,
      /at-nope/,
    );
    // An attempt id of another rollout is not found under this one.
    const other = await d.client.startRollout({ input: null });
    await problem('GET', `/v1/agl/rollouts/${r.id}/attempts/${other.attempt.id}`, {}, 404);
  });

  it("a prompt optimization's writes: 404 naming the field that names nothing, 409 saying what differs, 400 naming the field", async () => {
    const run = await d.client.createTrainingRun({ agent: 'a.ts#agent', kind: 'optimize', totalSteps: 0 });
    const lineage = { parents: [], origin: 'seed', component: null, reflection: null, minibatch: null };
    const seed = { id: 'pc-bad-input-0', runId: run.id, ordinal: 0, prompts: { system: 'Answer.' }, ...lineage };
    const post = (path: string, body: unknown, status: number) => problem('POST', `/v1/agl${path}`, { body: JSON.stringify(body) }, status);
    const notFound = (path: string) => [{ path, message: 'not found' }];
    assert.deepEqual((await post('/prompt-candidates', { ...seed, runId: 'run-nope' }, 404)).errors, notFound('runId'));
    const orphan = { ...seed, id: 'pc-bad-input-1', ordinal: 1, origin: 'reflection', parents: ['pc-nope'] };
    assert.deepEqual((await post('/prompt-candidates', orphan, 404)).errors, notFound('parents[0]'));
    assert.deepEqual((await post('/prompt-candidates', { ...seed, component: 'critic' }, 400)).errors, [
      { path: 'component', message: "'critic' is none of the candidate's prompts (system)" },
    ]);
    assert.equal((await post('/prompt-candidates', { ...seed, prompts: { 'a b': 'x' } }, 400)).errors?.[0]?.path, 'prompts.a b');
    await d.client.addPromptCandidate(seed as Parameters<AglClient['addPromptCandidate']>[0]);
    assert.match((await post('/prompt-candidates', { ...seed, prompts: { system: 'Other.' } }, 409)).detail, /differs from the stored one in prompts/);
    assert.match((await post('/prompt-candidates/pc-nope/decision', { status: 'accepted' }, 404)).detail, /pc-nope/);
    await d.client.decidePromptCandidate(seed.id, { status: 'accepted' });
    assert.match((await post(`/prompt-candidates/${seed.id}/decision`, { status: 'rejected' }, 409)).detail, /decided once/);
    const promote = { agent: 'a.ts#agent', name: 'system', text: 'Answer.', by: 'editor' };
    assert.deepEqual((await post('/prompts/promoted', { ...promote, candidateId: 'pc-nope' }, 404)).errors, notFound('candidateId'));
    assert.match((await post('/prompts/promoted', { ...promote, text: 'edited', candidateId: seed.id }, 409)).detail, /promote that text/);
    const message = { role: 'user', content: 'q' };
    const call = { runId: 'run-nope', seq: 0, purpose: 'reflect', model: 'm', requestHash: 'h', messages: [message], response: 'a', error: null };
    const usage = { attempts: 1, promptTokens: 1, completionTokens: 1, cost: null, ms: 1 };
    assert.deepEqual((await post('/optimizer-calls', { ...call, ...usage }, 404)).errors, notFound('runId'));
    assert.equal((await post('/optimizer-calls', { ...call, ...usage, runId: run.id, purpose: 'ponder' }, 400)).errors?.[0]?.path, 'purpose');
    assert.match((await problem('GET', '/v1/agl/views/optimization?runId=run-nope', {}, 404)).detail, /run-nope/);
    assert.equal((await problem('GET', '/v1/agl/training-runs?kind=training', {}, 400)).errors?.[0]?.path, 'kind');
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

  it('the requests that used to kill the daemon (a throw inside the hot path) get 400 naming the field', async () => {
    const cases: [string, { path: string; message: string }][] = [
      ['{}', { path: 'rolloutId', message: 'is required' }],
      ['[]', { path: '(body)', message: 'expected object, received array' }],
      ['{"rolloutId":5}', { path: 'rolloutId', message: 'expected string, received number' }],
      ['{"rolloutId":"r","limit":-1}', { path: 'limit', message: 'Too small: expected number to be >=1' }],
      ['{"rolloutId":"r","bogus":1}', { path: 'bogus', message: "unknown field 'bogus' in body" }],
    ];
    for (const [body, error] of cases) {
      const p = await problem('POST', '/v1/agl/spans/search', { body }, 400);
      assert.deepEqual(p.errors, [error], body);
    }
    assert.equal((await d.client.health()).status, 'ok');
    assert.equal(d.child.exitCode, null, 'the daemon is alive');
  });

  it('type errors say what was expected and what came, not "is required"', async () => {
    const p = await problem('POST', '/v1/agl/queues/rollouts/dequeue', { body: '{"workerId":5}' }, 400);
    assert.deepEqual(p.errors, [{ path: 'workerId', message: 'expected string, received number' }]);
    const n = await problem('POST', '/v1/agl/queues/rollouts/dequeue', { body: '{"workerId":null}' }, 400);
    assert.deepEqual(n.errors, [{ path: 'workerId', message: 'expected string, received null' }]);
  });

  it('every body route checks the content type (415), even a worker heartbeat', async () => {
    const before = await d.client.getWorker('w-text');
    const p = await problem('POST', '/v1/agl/workers/w-text/heartbeat', { body: '{"status":"bogus"}', contentType: 'text/plain' }, 415);
    assert.equal(p.errors?.[0]?.path, 'headers.content-type');
    assert.equal(await d.client.getWorker('w-text'), before, 'no heartbeat was recorded');
    await problem('POST', '/v1/agl/workers/w-text/heartbeat', { body: '{"status":"bogus"}' }, 400);
    await problem('POST', '/v1/agl/spans', { body: '{}', contentType: 'application/json; charset=latin1' }, 415);
  });

  it('bytes that are not UTF-8 -> 400 naming the offset, on the hot path and through express, never stored as U+FFFD', async () => {
    const bad = (prefix: string, suffix: string) => Buffer.concat([Buffer.from(prefix), Buffer.from([0xc3, 0x28]), Buffer.from(suffix)]);
    for (const path of ['/v1/agl/queues/rollouts/enqueue', '/v1/agl/spans', '/v1/agl/training-runs', '/v1/agl/queues/rollouts/dequeue']) {
      const res = await fetch(d.url + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${d.token}`, 'content-type': 'application/json' },
        body: bad('{"input":"caf', '"}'),
      });
      assert.equal(res.status, 400, path);
      const body = (await res.json()) as Problem;
      assert.equal(body.type, 'urn:agl:problem:invalid-utf8');
      assert.deepEqual(body.errors, [{ path: '(body)', message: 'not valid UTF-8 at byte 13' }]);
    }
  });

  it('free-form JSON nested deeper than 64 levels -> 400 naming the field (was a 500 from the store)', async () => {
    const deep = (n: number) => `${'['.repeat(n)}1${']'.repeat(n)}`;
    const enqueue = await problem('POST', '/v1/agl/queues/rollouts/enqueue', { body: `{"input":${deep(5000)}}` }, 400);
    assert.equal(enqueue.errors?.[0]?.path, 'input');
    assert.match(enqueue.errors![0]!.message, /nested deeper than 64 levels/);
    assert.equal(
      (await problem('POST', '/v1/agl/queues/rollouts/enqueue', { body: `{"input":null,"metadata":{"a":${deep(5000)}}}` }, 400)).errors?.[0]?.path,
      'metadata',
    );
    assert.equal(
      (await problem('POST', '/v1/agl/training-runs', { body: `{"agent":"a","totalSteps":1,"config":{"a":${deep(5000)}}}` }, 400)).errors?.[0]?.path,
      'config',
    );
    const r = await d.client.enqueueRollout({ input: null });
    assert.equal((await problem('POST', `/v1/agl/rollouts/${r.id}`, { body: `{"metadata":{"a":${deep(64)}}}` }, 400)).errors?.[0]?.path, 'metadata');
    // 63 levels inside the field is within the limit, and reads back unchanged.
    const ok = await d.client.enqueueRollout({ input: JSON.parse(deep(63)) });
    assert.deepEqual((await d.client.getRollout(ok.id))?.input, JSON.parse(deep(63)));
  });

  it('a request line over the header limit -> 431 with a problem body', async () => {
    const res = await fetch(`${d.url}/v1/agl/rollouts/${'x'.repeat(20_000)}`, { headers: { authorization: `Bearer ${d.token}` } });
    assert.equal(res.status, 431);
    assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    const body = (await res.json()) as Problem;
    assert.equal(body.status, 431);
    assert.match(body.detail, /exceed the server limit/);
  });

  it('after all of that the daemon still serves', async () => {
    assert.equal((await d.client.health()).status, 'ok');
    const r = await d.client.enqueueRollout({ input: { fine: true } });
    assert.equal((await d.client.getRollout(r.id))?.status, 'queuing');
    assert.equal(d.child.exitCode, null);
  });
});
