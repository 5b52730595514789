/**
 * Property-based fuzzing of a real `agl serve` (fast-check): for every route of the store API
 * (protocol/api.ts), the LLM gateway and the OTLP receiver, generated bad input — bodies with one defect
 * (unknown field, wrong type, nested too deep, not an object, malformed, not UTF-8, too large), bad query
 * values, unknown ids, missing or wrong tokens, foreign Host / Origin headers, wrong content types and
 * encodings. Every answer must be a 4xx problem (OTLP/protobuf: its protobuf Status) within a time bound,
 * the daemon must still answer /health, and the data stored before the fuzzing must read back unchanged.
 * Fixed seed; AGL_FUZZ_RUNS (default 1000 requests) and AGL_FUZZ_SEED change how much and which input is tried.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { startDaemonProcess, type DaemonProcess } from '../helpers/daemon-process.js';

const RUNS = Number(process.env.AGL_FUZZ_RUNS ?? 1000);
const SEED = Number(process.env.AGL_FUZZ_SEED ?? 20261125);
const ANSWER_WITHIN_MS = 5_000;
const BODY_LIMIT = 64 * 1024;

interface Req {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  why: string;
}
interface Answer {
  status: number;
  type: string;
  text: string;
  ms: number;
}

/** One raw request (node:http, so Host and any header can be anything), failing past the time bound. */
function send(url: string, r: Req): Promise<Answer> {
  const start = Date.now();
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url);
    // The path goes out as is: a URL object would resolve dot segments ('%2e%2e') before sending.
    const req = request({ hostname, port, path: r.path, method: r.method, headers: r.headers, timeout: ANSWER_WITHIN_MS }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          type: String(res.headers['content-type'] ?? ''),
          text: Buffer.concat(chunks).toString('utf8'),
          ms: Date.now() - start,
        }),
      );
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${ANSWER_WITHIN_MS} ms`)));
    req.on('error', reject);
    req.end(r.body);
  });
}

// ---- the routes and a valid body for each (a defect is applied to it) ---------------------------------
type Body = Record<string, unknown>;
interface BodyRoute {
  path: (id: string, aid: string) => string;
  template: Body;
  strict: boolean;
  gateway?: boolean;
}
const SPAN = { rolloutId: 'r', attemptId: 'a', name: 'n', startTime: 1 };
const TRANSITION = {
  runId: 'x',
  step: 0,
  rolloutId: 'r',
  attemptId: 'a',
  spanId: 's',
  groupId: 'g',
  index: 0,
  agentName: null,
  reward: null,
  credit: 0,
  advantage: 0,
  promptTokens: 0,
  completionTokens: 0,
};
const CANDIDATE = {
  id: 'pc-x-0',
  runId: 'x',
  ordinal: 0,
  prompts: { system: 'Answer.' },
  parents: [],
  origin: 'seed',
  component: null,
  reflection: null,
  minibatch: null,
};
const OPTIMIZER_CALL = {
  ...{ runId: 'x', seq: 0, purpose: 'reflect', model: 'm', requestHash: 'h', messages: [{ role: 'user', content: 'q' }] },
  ...{ response: null, error: null, attempts: 1, promptTokens: 1, completionTokens: 1, cost: null, ms: 1 },
};
const API = (p: string) => `/v1/agl${p}`;
const BODY_ROUTES: BodyRoute[] = [
  // A nullable field's template value is null: null would be no defect there (and marks it free-form).
  { path: () => API('/queues/rollouts/enqueue'), template: { input: null, mode: 'train', agent: null, metadata: {} }, strict: true },
  { path: () => API('/queues/rollouts/dequeue'), template: { workerId: 'w', limit: 1 }, strict: true },
  { path: () => API('/rollouts'), template: { input: null, workerId: 'w', config: { maxAttempts: 1 } }, strict: true },
  { path: () => API('/rollouts/search'), template: { limit: 1, order: 'asc', status: ['queuing'] }, strict: true },
  { path: (id) => API(`/rollouts/${id}`), template: { metadata: {} }, strict: true },
  { path: (id) => API(`/rollouts/${id}/cancel`), template: {}, strict: true },
  { path: (id, aid) => API(`/rollouts/${id}/attempts/${aid}/heartbeat`), template: {}, strict: true },
  { path: (id, aid) => API(`/rollouts/${id}/attempts/${aid}/finish`), template: { status: 'succeeded' }, strict: true },
  { path: (_id, aid) => API(`/attempts/${aid}/heartbeat`), template: {}, strict: true },
  { path: (_id, aid) => API(`/attempts/${aid}/finish`), template: { status: 'succeeded' }, strict: true },
  { path: () => API('/health-checks'), template: {}, strict: true },
  { path: () => API('/waits/rollouts'), template: { ids: ['x'], timeoutMs: 0 }, strict: true },
  { path: () => API('/spans'), template: SPAN, strict: true },
  { path: () => API('/spans'), template: { spans: [SPAN] }, strict: true },
  { path: () => API('/spans/search'), template: { rolloutId: 'r', limit: 1 }, strict: true },
  { path: () => API('/resources'), template: { resources: {}, metadata: {} }, strict: true },
  { path: (id) => API(`/workers/${id}/heartbeat`), template: { status: 'idle', metadata: {} }, strict: true },
  { path: () => API('/training-runs'), template: { agent: 'a', totalSteps: 1, config: {} }, strict: true },
  { path: (id) => API(`/training-runs/${id}`), template: { step: 1, summary: {} }, strict: true },
  { path: (id) => API(`/training-runs/${id}/metrics`), template: { points: [{ step: 0, name: 'm', value: 1 }] }, strict: true },
  { path: () => API('/transitions'), template: { transitions: [TRANSITION] }, strict: true },
  { path: () => API('/prompt-candidates'), template: CANDIDATE, strict: true },
  { path: (id) => API(`/prompt-candidates/${id}/decision`), template: { status: 'accepted', reason: null, scores: { val: 0.5 } }, strict: true },
  { path: () => API('/optimizer-calls'), template: OPTIMIZER_CALL, strict: true },
  { path: () => API('/prompts/promoted'), template: { agent: 'a', name: 'system', text: 't', candidateId: null, by: 'editor' }, strict: true },
  { path: () => API('/prompts/promoted/clear'), template: { agent: 'a', name: 'system', by: 'editor' }, strict: true },
  { path: () => API('/views/groups'), template: { runId: 'x', step: 0 }, strict: true },
  { path: () => API('/views/rollout'), template: { rolloutId: 'r' }, strict: true },
  { path: () => API('/views/rollouts'), template: { runId: 'x', candidate: 'pc-x-0', limit: 5 }, strict: true },
  { path: () => '/v1/chat/completions', template: { model: 'm', messages: [{ role: 'user', content: 'hi' }] }, strict: false, gateway: true },
  { path: () => '/v1/completions', template: { model: 'm', prompt: 'hi' }, strict: false, gateway: true },
  { path: (id, aid) => `/rollout/${id}/attempt/${aid}/v1/chat/completions`, template: { model: 'm', messages: [] }, strict: false, gateway: true },
];

const typeName = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
const nested = (depth: number) => `${'['.repeat(depth)}0${']'.repeat(depth)}`;
const text = (v: unknown) => Buffer.from(JSON.stringify(v));
/** Byte sequences that are never UTF-8: stray continuation, overlong, surrogate, beyond U+10FFFF, truncated. */
const NOT_UTF8 = [[0xff], [0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xc3, 0x28], [0xe2, 0x82]];

/** An id for a path: anything (URL-encoded), never one that exists. */
const anyId = fc.oneof(
  fc.string({ minLength: 1, maxLength: 24, unit: 'binary' }).map((s) => encodeURIComponent(`zz${s}`)),
  fc.constantFrom('%', '%zz', '%E0%A4%A', '%C0%AF', '%FF', 'zz%00', '..', '%2e%2e', 'zz;x=1'), // malformed or odd escapes
);
const notJsonTypes = fc.constantFrom(
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/xml',
  'multipart/form-data; boundary=x',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'text/json',
  'application/jsonx',
  ' ',
);

/** A body route's body with exactly one defect, as raw bytes and headers. */
function defectiveBody(route: BodyRoute): fc.Arbitrary<{ body: Buffer; headers: Record<string, string>; why: string }> {
  const fields = Object.keys(route.template);
  const json = { 'content-type': 'application/json' };
  const arbs: fc.Arbitrary<{ body: Buffer; headers: Record<string, string>; why: string }>[] = [
    fc
      .oneof(
        fc.jsonValue().filter((v) => typeName(v) !== 'object'),
        fc.constant([]),
      )
      .map((v) => ({ body: text(v), headers: json, why: `not an object: ${JSON.stringify(v).slice(0, 60)}` })),
    // A proper prefix of an object's text never closes it; none of these tails closes it either.
    fc.integer({ min: 1, max: 200 }).chain((cut) =>
      fc.constantFrom('', ',', 'x', '\u0000', ']').map((tail) => {
        const full = JSON.stringify(route.template);
        return { body: Buffer.from(full.slice(0, Math.min(cut, full.length - 1)) + tail), headers: json, why: 'malformed JSON' };
      }),
    ),
    fc.tuple(fc.constantFrom(...NOT_UTF8), fc.nat()).map(([bad, at]) => {
      const full = Buffer.from(JSON.stringify({ ...route.template, note: 'xxxx' }));
      const i = full.indexOf('xxxx') + (at % 4);
      return { body: Buffer.concat([full.subarray(0, i), Buffer.from(bad), full.subarray(i)]), headers: json, why: `not UTF-8: ${bad}` };
    }),
    notJsonTypes.map((type) => ({ body: text(route.template), headers: { 'content-type': type }, why: `content type ${type}` })),
    fc
      .constantFrom('br', 'compress', 'x-bogus', 'gzip', 'deflate')
      .map((enc) => ({ body: text(route.template), headers: { ...json, 'content-encoding': enc }, why: `content-encoding ${enc} (body not encoded)` })),
  ];
  if (!route.gateway)
    arbs.push(fc.constant({ body: Buffer.from(JSON.stringify({ ...route.template, pad: 'x'.repeat(BODY_LIMIT) })), headers: json, why: 'too large' }));
  if (route.strict) {
    arbs.push(
      fc
        .string({ minLength: 1, maxLength: 12 })
        .filter((k) => !fields.includes(k) && k !== '__proto__')
        .map((k) => ({ body: text({ ...route.template, [k]: 1 }), headers: json, why: `unknown field ${k}` })),
    );
  }
  const typed = fields.filter((f) => route.template[f] !== null); // null marks free-form JSON: any type is right there
  if (typed.length > 0 && !route.gateway) {
    arbs.push(
      fc.constantFrom(...typed).chain((f) =>
        fc
          .jsonValue({ maxDepth: 3 })
          .filter((v) => typeName(v) !== typeName(route.template[f]))
          .map((v) => ({ body: text({ ...route.template, [f]: v }), headers: json, why: `${f} of the wrong type: ${JSON.stringify(v).slice(0, 60)}` })),
      ),
    );
  }
  if (fields.length > 0) {
    arbs.push(
      fc.tuple(fc.constantFrom(...fields), fc.integer({ min: 66, max: 3000 })).map(([f, depth]) => {
        const body = JSON.stringify({ ...route.template, [f]: '@@' }).replace('"@@"', nested(depth));
        return { body: Buffer.from(body), headers: json, why: `${f} nested ${depth} levels` };
      }),
    );
  }
  return fc.oneof(...arbs);
}

/** GET routes with a bad query value, or an id that does not exist. */
const badInt = ['abc', '1.5', 'NaN', '1e999', '%00'];
const badQuery: fc.Arbitrary<{ path: string; why: string }> = fc.oneof(
  fc
    .tuple(
      fc.constantFrom(
        ['/rollouts', 'limit', ['0', '-1', '10001', ...badInt]],
        ['/rollouts', 'status', ['runing', 'queuing,nope', 'x']],
        ['/rollouts', 'mode', ['training', 'x']],
        ['/rollouts', 'order', ['up']],
        ['/rollouts', 'resourcesVersion', ['0', '-3', ...badInt]],
        ['/rollouts', 'cursor', ['garbage', '!!']],
        ['/spans?rolloutId=r', 'limit', ['0', ...badInt]],
        ['/spans?rolloutId=r', 'afterSequenceId', badInt],
        ['/spans', 'name', ['x']],
        ['/resources', 'limit', ['0', ...badInt]],
        ['/transitions', 'step', ['-1', ...badInt]],
        ['/transitions', 'limit', ['0', ...badInt]],
        ['/training-runs', 'kind', ['training', 'x']],
        ['/prompt-candidates', 'runId', ['']],
        ['/optimizer-calls', 'runId', ['']],
        ['/prompts/promoted/history?agent=a', 'name', ['', 'a%20b', 'x'.repeat(65)]],
        ['/views/optimization', 'runId', ['']],
        ['/views/optimization?runId=x', 'extra', ['1']],
      ) as fc.Arbitrary<[string, string, string[]]>,
      fc.nat(),
    )
    .map(([[base, key, values], i]) => {
      const v = values[i % values.length]!;
      return { path: API(`${base}${base.includes('?') ? '&' : '?'}${key}=${v}`), why: `${key}=${v}` };
    }),
  fc
    .tuple(
      fc.constantFrom(
        '/rollouts/@',
        '/rollouts/@/attempts',
        '/rollouts/@/attempts/latest',
        '/rollouts/@/attempts/@',
        '/attempts/@',
        '/resources/@',
        '/workers/@',
        '/training-runs/@',
        '/training-runs/@/metrics',
        '/prompt-candidates/@',
        '/views/optimization?runId=@',
      ),
      anyId,
    )
    .map(([p, id]) => ({ path: API(p.replaceAll('@', id)), why: `unknown id ${id}` })),
  anyId.map((id) => ({ path: `/rollout/${id}/attempt/${id}/v1/models`, why: `gateway models, unknown attempt ${id}` })),
);

/** OTLP/JSON exports whose envelope is wrong (400), or with one span that is not an OTLP span (rejected via partialSuccess). */
function otlpCases(ids: {
  rolloutId: string;
  attemptId: string;
}): fc.Arbitrary<{ body: Buffer; headers: Record<string, string>; why: string; rejected?: number }> {
  const json = { 'content-type': 'application/json' };
  const resource = {
    attributes: [
      { key: 'agl.rollout_id', value: { stringValue: ids.rolloutId } },
      { key: 'agl.attempt_id', value: { stringValue: ids.attemptId } },
    ],
  };
  const span = { name: 'fuzz', startTimeUnixNano: '1700000000000000000', kind: 1, attributes: [], events: [], status: { code: 0 } };
  const notArray = fc.jsonValue({ maxDepth: 2 }).filter((v) => v !== null && !Array.isArray(v));
  const badSpanField: fc.Arbitrary<[string, unknown]> = fc
    .oneof(
      fc.tuple(
        fc.constant('name'),
        fc.jsonValue({ maxDepth: 2 }).filter((v) => typeof v !== 'string' && v !== null),
      ),
      fc.tuple(fc.constantFrom('startTimeUnixNano', 'endTimeUnixNano'), fc.constantFrom('yesterday', -1, 1.5, true, {}, [], '-5', '1e9')),
      fc.tuple(fc.constantFrom('attributes', 'events'), notArray),
      fc.tuple(
        fc.constant('attributes'),
        fc.constantFrom(
          [5],
          [{ key: 5 }],
          [{ key: 'k', value: 5 }],
          [{ key: 'k', value: { intValue: 'x' } }],
          [{ key: 'k', value: { arrayValue: { values: 3 } } }],
        ),
      ),
      fc.tuple(fc.constant('kind'), fc.constantFrom(6, -1, 1.5, 'SPAN_KIND_CLIENT', null, {})),
      fc.tuple(fc.constant('status'), fc.constantFrom(5, 'ok', [], { code: 7 }, { code: 'x' }, { message: 5 })),
      fc.tuple(fc.constantFrom('traceId', 'spanId'), fc.constantFrom(5, true, {}, 'not hex!')),
    )
    .filter(([, v]) => v !== null);
  return fc.oneof(
    notArray.map((v) => ({ body: text({ resourceSpans: v }), headers: json, why: `resourceSpans ${JSON.stringify(v).slice(0, 40)}` })),
    fc
      .jsonValue({ maxDepth: 2 })
      .filter((v) => typeName(v) !== 'object')
      .map((v) => ({ body: text({ resourceSpans: [v] }), headers: json, why: 'resourceSpans[0] not an object' })),
    notArray.map((v) => ({ body: text({ resourceSpans: [{ resource, scopeSpans: v }] }), headers: json, why: 'scopeSpans not an array' })),
    fc
      .jsonValue({ maxDepth: 2 })
      .filter((v) => typeName(v) !== 'object')
      .map((v) => ({ body: text(v), headers: json, why: `export ${JSON.stringify(v).slice(0, 40)}` })),
    badSpanField.map(([f, v]) => ({
      body: text({ resourceSpans: [{ resource, scopeSpans: [{ spans: [{ ...span, [f]: v }] }] }] }),
      headers: json,
      why: `span ${f}=${JSON.stringify(v)}`,
      rejected: 1,
    })),
    fc.constantFrom(...NOT_UTF8).map((bad) => ({
      body: Buffer.concat([Buffer.from('{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"a'), Buffer.from(bad), Buffer.from('"}]}]}]}')]),
      headers: json,
      why: 'not UTF-8',
    })),
    notJsonTypes
      .filter((t) => !t.startsWith('application/json'))
      .map((type) => ({ body: text({}), headers: { 'content-type': type }, why: `content type ${type}` })),
  );
}

describe(`fuzzing every route with bad input (fast-check, seed ${SEED}, ${RUNS} runs)`, () => {
  let d: DaemonProcess;
  let seeded: () => Promise<unknown>;
  let snapshot: unknown;
  let ids: { rolloutId: string; attemptId: string };

  before(async () => {
    d = await startDaemonProcess(undefined, ['--body-limit', '64kb']);
    // Data accepted before the fuzzing: it must read back unchanged after it.
    const c = d.client;
    const queued = await c.enqueueRollout({ input: { q: 'keep me', deep: [[[1]]] }, metadata: { tag: 'seed' } });
    const claim = await c.startRollout({ input: { q: 'running' } }, 'seed-worker');
    ids = { rolloutId: claim.rollout.id, attemptId: claim.attempt.id };
    await c.addSpans([{ ...ids, name: 'seed-span', startTime: 1, attributes: { k: 'v' } }]);
    const res = await c.addResources({
      resources: { llm: { type: 'llm', endpoint: `${d.url}/v1`, model: 'm', backend: 'upstream', upstreamUrl: 'http://127.0.0.1:9/v1' } },
    });
    const run = await c.createTrainingRun({ agent: 'seed', totalSteps: 2, config: { lr: 1 } });
    await c.addMetrics([{ runId: run.id, step: 0, name: 'reward/mean', value: 0.5 }]);
    await c.addTransitions([{ ...TRANSITION, ...ids, runId: run.id }]);
    await c.heartbeatWorker('seed-worker', { status: 'busy' });
    seeded = async () => ({
      queued: await c.getRollout(queued.id),
      rollout: await c.getRollout(ids.rolloutId),
      attempts: await c.getAttempts(ids.rolloutId),
      spans: await c.querySpans({ rolloutId: ids.rolloutId }),
      resources: await c.getResources(res.id),
      latest: await c.getLatestResources(),
      run: await c.getTrainingRun(run.id),
      metrics: await c.queryMetrics(run.id),
      transitions: await c.queryTransitions({ runId: run.id }),
      rollouts: (await c.queryRollouts({ limit: 100 })).items.map((r) => r.id).sort(),
      worker: await c.getWorker('seed-worker').then((w) => w && { ...w, lastHeartbeat: 0 }),
    });
    snapshot = await seeded();
  });
  after(async () => {
    await d?.stop('SIGTERM');
  });

  /** The answer must be a 4xx problem within the bound; `rejected`: an OTLP 200 must reject exactly that many spans. */
  async function expectRefused(r: Req, rejected?: number): Promise<void> {
    let a: Answer;
    try {
      a = await send(d.url, r);
    } catch (err) {
      const exit = d.child.exitCode ?? d.child.signalCode;
      assert.fail(
        `${r.method} ${r.path} (${r.why}): ${(err as Error).message}${exit !== null ? `; the daemon exited (${exit})` : ''}\n${d.output().stderr.slice(-2000)}`,
      );
    }
    const what = `${r.method} ${r.path.slice(0, 120)} (${r.why}) -> ${a.status} ${a.text.slice(0, 300)}`;
    if (rejected !== undefined && a.status === 200) {
      assert.equal(JSON.parse(a.text).partialSuccess?.rejectedSpans, rejected, what);
      return;
    }
    assert.ok(a.status >= 400 && a.status < 500, what);
    if (/x-protobuf/.test(r.headers['content-type'] ?? '')) {
      assert.match(a.type, /^application\/x-protobuf/, what);
      return;
    }
    assert.match(a.type, /^application\/problem\+json/, what);
    const p = JSON.parse(a.text) as { status: number; type: string; title: string; detail: string };
    assert.equal(p.status, a.status, what);
    assert.ok(p.type && p.title && p.detail, `a problem names what is wrong: ${what}`);
  }

  const withAuth = (headers: Record<string, string>) => ({ host: new URL(d.url).host, authorization: `Bearer ${d.token}`, ...headers });
  const check = (prop: fc.IAsyncProperty<any>) => fc.assert(prop, { seed: SEED, numRuns: Math.ceil(RUNS / 4), endOnFailure: true });

  it('store API and gateway bodies with one defect each get a 4xx problem', async () => {
    await check(
      fc.asyncProperty(
        fc.constantFrom(...BODY_ROUTES).chain((route) => fc.tuple(fc.constant(route), defectiveBody(route), anyId, anyId)),
        async ([route, bad, id, aid]) =>
          expectRefused({ method: 'POST', path: route.path(id, aid), headers: withAuth(bad.headers), body: bad.body, why: bad.why }),
      ),
    );
  });

  it('bad query values and unknown ids get a 4xx problem', async () => {
    await check(fc.asyncProperty(badQuery, async (q) => expectRefused({ method: 'GET', path: q.path, headers: withAuth({}), why: q.why })));
  });

  it('requests without the token, with a foreign Host or Origin, or naming an unknown attempt get a 4xx problem', async () => {
    // Every route: the store API's POSTs (with a valid body) and GETs, /health, /metrics, the gateway, OTLP.
    const posts = BODY_ROUTES.map((r) => ({ method: 'POST', path: r.path('zz-id', 'zz-aid'), body: text(r.template) }));
    const gets = [
      '/health',
      '/metrics',
      '/v1/models',
      ...[
        ...['/statistics', '/agents', '/workers', '/resources', '/resources/latest', '/training-runs', '/rollouts', '/spans?rolloutId=r', '/transitions'],
        ...['/prompt-candidates?runId=x', '/optimizer-calls?runId=x', '/prompts/promoted', '/prompts/promoted/history?agent=a&name=system'],
      ].map(API),
    ].map((path) => ({ method: 'GET', path, body: undefined as Buffer | undefined }));
    const routes = fc.constantFrom(...posts, ...gets, { method: 'POST', path: '/v1/traces', body: text({}) });
    const tokenFree = (path: string) => path === '/health' || path.startsWith('/rollout/');
    const header = fc.oneof(
      fc.constant({ authorization: '' }).map((h) => ({ h, why: 'no token' })),
      fc.string({ maxLength: 40 }).map((t) => ({ h: { authorization: `Bearer ${t}` }, why: 'wrong token' })),
      fc
        .domain()
        .filter((h) => !/(^|\.)localhost$/.test(h))
        .map((host) => ({ h: { host }, why: `Host ${host}` })),
      fc
        .webUrl()
        .filter((u) => !/^https?:\/\/([^/]*\.)?localhost([:/]|$)/.test(u))
        .map((origin) => ({ h: { origin }, why: `Origin ${origin}` })),
      anyId.map((aid) => ({ h: { 'x-agl-attempt-id': aid }, why: `unknown attempt header ${aid}` })),
    );
    await check(
      fc.asyncProperty(routes, header, async (route, { h, why }) => {
        const headers: Record<string, string> = withAuth({ 'content-type': 'application/json', ...h });
        const isGatewayCall = /^\/v1\/(chat\/)?completions$/.test(route.path);
        // A token defect on a route that needs none, or an attempt header where none is read: make the request bad another way.
        if ((why.endsWith('token') && tokenFree(route.path)) || (why.startsWith('unknown attempt') && !isGatewayCall)) headers.host = 'not-allowed.example';
        if (headers.authorization === '') delete headers.authorization;
        await expectRefused({ method: route.method, path: route.path, headers, body: route.body, why });
      }),
    );
  });

  it('OTLP exports that are not OTLP get 400, bad spans are rejected through partialSuccess, none stored', async () => {
    await check(
      fc.asyncProperty(
        fc.constant(null).chain(() => otlpCases(ids)),
        async (c) => expectRefused({ method: 'POST', path: '/v1/traces', headers: withAuth(c.headers), body: c.body, why: c.why }, c.rejected),
      ),
    );
  });

  it('afterwards the daemon answers /health and the data stored before reads back unchanged', async () => {
    assert.equal((await d.client.health()).status, 'ok');
    assert.equal(d.child.exitCode, null);
    assert.deepEqual(await seeded(), snapshot);
  });
});
