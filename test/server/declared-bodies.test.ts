/**
 * Every route refuses what it does not declare: this walks the route tables of protocol/routes.ts (the store API
 * and the gateway's OpenAI-compatible calls, so a route added later is covered without editing this file) and
 * sends each route, through a real daemon over HTTP with the token, a JSON array, a number, a string, null, an
 * object with an unknown key (where its schema refuses them: the gateway passes unknown OpenAI fields on) and,
 * where its schema has typed fields, one of them with the wrong type (derived from the schema). Each must be a 400
 * application/problem+json naming the field, and the store must read back unchanged afterwards: the handler
 * never ran (a heartbeat did not move the attempt's last heartbeat). A POST route with no body declaration fails
 * here with a message saying to declare one.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { NoBody, type Problem } from '../../protocol/api.js';
import { gatewayRoutes, routes, type RouteDecl } from '../../protocol/routes.js';
import { startDaemonProcess, type DaemonProcess } from '../helpers/daemon-process.js';

interface Answer {
  status: number;
  type: string;
  text: string;
}

/** One raw request (node:http: a GET may carry a body, which fetch refuses to send). */
function send(url: string, method: string, path: string, token: string, body: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url);
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    const req = request({ hostname, port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type'] ?? ''), text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A bad body and the field error it must be answered with. */
interface BadBody {
  body: string;
  path: string;
  message: RegExp;
}

const UNKNOWN_KEY = 'aglNotADeclaredField';
/** Values of every JSON type: at least one of them is the wrong type for any typed field. */
const ANY_TYPE: unknown[] = [7, 'text', true, [], {}, null];

/** The object shapes a body schema accepts (each option of a union, the input of a pipe); none for other schemas. */
function objectShapes(schema: z.ZodType): Record<string, z.ZodType>[] {
  if (schema instanceof z.ZodObject) return [schema.shape as Record<string, z.ZodType>];
  if (schema instanceof z.ZodUnion) return (schema.options as z.ZodType[]).flatMap(objectShapes);
  if (schema instanceof z.ZodPipe) return objectShapes(schema.in as z.ZodType);
  return [];
}

/** A declared field sent with a value of a type its schema refuses, or null when the schema has no typed field. */
function wrongTypedField(schema: z.ZodType): BadBody | null {
  for (const shape of objectShapes(schema))
    for (const [key, field] of Object.entries(shape)) {
      const wrong = ANY_TYPE.find((v) => !field.safeParse(v).success);
      if (wrong !== undefined) return { body: JSON.stringify({ [key]: wrong }), path: key, message: /expected|invalid/i };
    }
  return null;
}

/** Whether a schema refuses a key it does not declare. */
function refusesUnknownKeys(schema: z.ZodType): boolean {
  return schema.safeParse({ [UNKNOWN_KEY]: 1 }).error?.issues.some((i) => i.code === 'unrecognized_keys') ?? false;
}

/**
 * The bad bodies a route is sent: an unknown key unless its table's rule passes them on (the gateway's: a store
 * route whose schema is not strict fails here), a wrong-typed field where its schema has one.
 */
function badBodies(decl: RouteDecl, unknownKeys: 'refused' | 'passed'): BadBody[] {
  const notObject = (body: string, got: string): BadBody => ({ body, path: '(body)', message: new RegExp(`expected object, received ${got}`) });
  const out = [notObject('[]', 'array'), notObject('[{"a":1}]', 'array'), notObject('7', 'number'), notObject('"text"', 'string'), notObject('null', 'null')];
  const schema = (decl.method === 'POST' && decl.body) || NoBody;
  if (unknownKeys === 'refused') out.push({ body: JSON.stringify({ [UNKNOWN_KEY]: 1 }), path: UNKNOWN_KEY, message: /unknown field/ });
  const wrong = wrongTypedField(schema);
  return wrong ? [...out, wrong] : out;
}

describe('every declared route refuses a body that is not its declared shape, and writes nothing', () => {
  let d: DaemonProcess;
  /** The ids a route's `:param` is filled with, by the collection the path names before it. */
  const ids: Record<string, string> = {};
  /** Everything the fixtures wrote, as read back through the API. */
  let storeNow: () => Promise<string>;

  before(async () => {
    d = await startDaemonProcess();
    const c = d.client;
    const claim = await c.startRollout({ input: { q: 1 } }, 'w-declared');
    const worker = await c.heartbeatWorker('w-declared', { status: 'busy' });
    const resources = await c.addResources({ resources: {} });
    const run = await c.createTrainingRun({ agent: 'a.ts#agent', kind: 'optimize', totalSteps: 0 });
    const lineage = { parents: [], origin: 'seed' as const, component: null, reflection: null, minibatch: null };
    const candidate = await c.addPromptCandidate({ id: 'pc-declared-0', runId: run.id, ordinal: 0, prompts: { system: 'Answer.' }, ...lineage });
    Object.assign(ids, {
      rollouts: claim.rollout.id,
      rollout: claim.rollout.id,
      attempts: claim.attempt.id,
      attempt: claim.attempt.id,
      workers: worker.id,
      resources: resources.id,
      'training-runs': run.id,
      'prompt-candidates': candidate.id,
    });
    storeNow = async () =>
      JSON.stringify([
        await c.statistics(),
        await c.getRollout(claim.rollout.id),
        await c.getAttempts(claim.rollout.id),
        await c.getWorker(worker.id),
        await c.getTrainingRun(run.id),
        await c.queryMetrics(run.id),
        await c.listPromptCandidates(run.id),
        await c.listOptimizerCalls(run.id),
        await c.listPromotedPrompts(),
        await c.listResources(),
        await c.queryTransitions({}),
      ]);
    // A heartbeat let through would then move lastHeartbeat past its first value: wait for the clock to pass it.
    const written = Math.max(claim.attempt.lastHeartbeat, worker.lastHeartbeat);
    while (Date.now() <= written) await new Promise((resolve) => setImmediate(resolve));
  });
  after(async () => {
    await d?.stop('SIGTERM');
  });

  /** The route's path under `prefix`, each `:param` filled with a fixture's id (`:aid` is always the attempt). */
  function pathOf(prefix: string, path: string): string {
    const segments = path.split('/');
    const filled = segments.map((seg, i) => {
      if (!seg.startsWith(':')) return seg;
      const collection = seg === ':aid' ? 'attempts' : segments[i - 1]!;
      const id = ids[collection];
      assert.ok(id, `${path}: no fixture id for '/${collection}/${seg}': create one in this test's before() and add it to ids`);
      return encodeURIComponent(id);
    });
    return prefix + filled.join('/');
  }

  it('every POST route declares its body (a schema, or null when it takes none)', () => {
    for (const [name, decl] of Object.entries(routes) as [string, RouteDecl][]) {
      if (decl.method !== 'POST') continue;
      assert.ok(
        (decl as { body?: unknown }).body !== undefined,
        `POST ${decl.path} (${name}) declares no body: declare its zod schema in protocol/routes.ts (strict object), or body: null when it takes none`,
      );
    }
  });

  it('POST /v1/traces (OTLP/JSON, its own rule): not an object or a wrong-typed envelope is a 400 naming the field; an unknown field is ignored, as OTLP asks', async () => {
    const before = await storeNow();
    const notObject = (body: string, got: string): BadBody => ({ body, path: '(body)', message: new RegExp(`received ${got}`) });
    const bad = [notObject('[]', 'array'), notObject('7', 'number'), notObject('"text"', 'string'), notObject('null', 'null')];
    bad.push({ body: '{"resourceSpans":7}', path: 'resourceSpans', message: /expected array, received number/ });
    for (const { body, path, message } of bad) {
      const answer = await send(d.url, 'POST', '/v1/traces', d.token, body);
      assert.equal(answer.status, 400, `${body}: ${answer.text}`);
      assert.match(answer.type, /^application\/problem\+json/);
      const named = (JSON.parse(answer.text) as Problem).errors?.find((e) => e.path === path);
      assert.ok(named, `${body}: the problem names ${path}: ${answer.text}`);
      assert.match(named.message, message);
    }
    assert.equal((await send(d.url, 'POST', '/v1/traces', d.token, JSON.stringify({ [UNKNOWN_KEY]: 1 }))).status, 200);
    assert.equal(await storeNow(), before, 'a refused export changed the store');
  });

  it("the gateway's bodies pass unknown OpenAI fields on (their rule: protocol/api-gateway.ts)", () => {
    for (const decl of Object.values(gatewayRoutes)) assert.equal(refusesUnknownKeys(decl.body), false, decl.path);
  });

  const tables: [string, Record<string, RouteDecl>, 'refused' | 'passed'][] = [
    ['/v1/agl', routes, 'refused'],
    ['', gatewayRoutes, 'passed'],
  ];
  const walk = tables.flatMap(([prefix, table, unknownKeys]) => Object.entries(table).map(([name, decl]) => ({ prefix, name, decl, unknownKeys })));
  for (const { prefix, name, decl, unknownKeys } of walk) {
    it(`${decl.method} ${prefix}${decl.path} (${name}): 400 problem+json naming the field, nothing written`, async () => {
      const path = pathOf(prefix, decl.path);
      const before = await storeNow();
      for (const bad of badBodies(decl, unknownKeys)) {
        const answer = await send(d.url, decl.method, path, d.token, bad.body);
        const what = `${decl.method} ${path} with ${bad.body}`;
        assert.equal(answer.status, 400, `${what}: expected 400, got ${answer.status}: ${answer.text}`);
        assert.match(answer.type, /^application\/problem\+json/, what);
        const problem = JSON.parse(answer.text) as Problem;
        const named = problem.errors?.find((e) => e.path === bad.path);
        assert.ok(named, `${what}: the problem names ${bad.path}: ${answer.text}`);
        assert.match(named.message, bad.message, what);
        assert.ok(problem.detail.includes(problem.errors![0]!.path), `${what}: the detail names the field: ${problem.detail}`);
      }
      assert.equal(await storeNow(), before, `${decl.method} ${path}: a refused request changed the store`);
    });
  }
});
