/**
 * The store API's routes are declared once (protocol/routes.ts) and both sides are built from the declarations:
 * the declarations are unique and ordered so that none shadows another; express registers exactly them, in
 * their order, and a request to each reaches that route (its /metrics label); and for each declared route the
 * client method named in `clientMethods` (client/client.ts) sends that route's request: its method, its
 * path with the params encoded, and a body or query that the route's own schema accepts.
 * (That a route without a handler or a client method does not compile is tsc's part: `npx tsc -b`.)
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { routes, type BodyOf, type ParamsOf, type PathParamNames, type ResponseOf, type RouteDecl, type RouteName } from '../../protocol/routes.js';
import type { Rollout } from '../../protocol/store.js';
import { createServerContext } from '../../daemon/server/server-context.js';
import { storeApiRouter, storeRoutes } from '../../daemon/server/store-api.js';
import { AglClient, clientMethods } from '../../client/client.js';
import { startDaemon, type Harness } from '../helpers/daemon.js';

// ---- types derived from the declarations (checked by tsc -b; nothing to run) --------------------------------
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const _types: [
  Equal<PathParamNames<'/rollouts/:id/attempts/:aid/finish'>, 'id' | 'aid'>,
  Equal<ParamsOf<'getRolloutAttempt'>, { id: string; aid: string }>,
  Equal<keyof ParamsOf<'addSpans'>, never>,
  Equal<ResponseOf<'getRollout'>, Rollout>,
  Equal<BodyOf<'cancelRollout'>, undefined>,
  Equal<BodyOf<'dequeueRollouts'>['limit'], number>, // parsed: the default is filled in
] = [true, true, true, true, true, true];
// @ts-expect-error a path param missing
const _missing: ParamsOf<'finishRolloutAttempt'> = { id: 'r' };

const NAMES = Object.keys(routes) as RouteName[];
const DECLS: [RouteName, RouteDecl][] = NAMES.map((name) => [name, routes[name]]);

/** The route's path as a regular expression (params as groups), as express and the hot path match it. */
function pattern(path: string): { re: RegExp; names: string[] } {
  const names: string[] = [];
  const source = path
    .split('/')
    .map((seg) => {
      if (!seg.startsWith(':')) return seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      names.push(seg.slice(1));
      return '([^/]+)';
    })
    .join('/');
  return { re: new RegExp(`^${source}$`), names };
}
/** The declared route a request for `method path` goes to: the first whose pattern matches, with its decoded params. */
function dispatch(method: string, path: string): { name: RouteName; params: Record<string, string> } | null {
  for (const [name, decl] of DECLS) {
    if (decl.method !== method) continue;
    const { re, names } = pattern(decl.path);
    const m = re.exec(path);
    if (m) return { name, params: Object.fromEntries(names.map((n, i) => [n, decodeURIComponent(m[i + 1]!)])) };
  }
  return null;
}
const concrete = (path: string) => path.replace(/:\w+/g, 'zz-none');

describe('store API routes declared once (protocol/routes.ts)', () => {
  it('each route has its own method and path, params as whole segments, and no route is shadowed by an earlier one', () => {
    assert.ok(NAMES.length >= 40, `${NAMES.length} routes`);
    const keys = DECLS.map(([, d]) => `${d.method} ${d.path}`);
    assert.equal(new Set(keys).size, keys.length, 'method + path unique');
    for (const [name, decl] of DECLS) {
      assert.match(decl.path, /^(\/(:[A-Za-z_]\w*|[\w.-]+))+$/, `${name}: path segments are literals or whole :params`);
      if (decl.method === 'POST') assert.equal((decl as { query?: unknown }).query, undefined, `${name}: a POST takes a body, not a query`);
      // The route a request to this route's path is dispatched to is this one (order: literal paths before :params).
      assert.equal(dispatch(decl.method, concrete(decl.path))?.name, name, `${name}: ${decl.method} ${decl.path} is shadowed`);
    }
  });

  it('the server table holds exactly the declared routes in their order, and express registers exactly them', () => {
    const ctx = createServerContext({ store: {} as never, token: 't', dataDir: '.' });
    const table = storeRoutes(ctx);
    assert.deepEqual(
      table.map((r) => `${r.name} ${r.method} ${r.path}`),
      DECLS.map(([name, d]) => `${name} ${d.method} ${d.path}`),
    );
    const stack = (storeApiRouter(ctx) as unknown as { stack: { route?: { path: string; methods: Record<string, boolean> } }[] }).stack;
    const registered = stack.filter((l) => l.route).map((l) => `${Object.keys(l.route!.methods).join(',').toUpperCase()} ${l.route!.path}`);
    assert.deepEqual(
      registered,
      DECLS.map(([, d]) => `${d.method} ${d.path}`),
    );
  });

  describe('over HTTP', () => {
    let d: Harness;
    before(async () => {
      d = await startDaemon();
    });
    after(async () => {
      await d?.close();
    });

    it('a request to each declared route reaches that route in express (counted under its pattern in /metrics)', async () => {
      for (const [name, decl] of DECLS) {
        // POST bodies go chunked (no Content-Length), which the hot path leaves to express.
        const status = await new Promise<number>((resolve, reject) => {
          const req = request(`${d.url}/v1/agl${concrete(decl.path)}`, {
            method: decl.method,
            headers: { authorization: `Bearer ${d.token}`, ...(decl.method === 'POST' && { 'content-type': 'application/json' }) },
          });
          req.on('response', (res) => res.resume().on('end', () => resolve(res.statusCode!)));
          req.on('error', reject);
          if (decl.method === 'POST') req.write('{}');
          req.end();
        });
        assert.ok([200, 201, 400, 404].includes(status), `${name}: ${status}`);
      }
      const text = await d.client.metrics();
      for (const [name, decl] of DECLS) {
        const label = `method="${decl.method}",route="/v1/agl${decl.path}"`;
        assert.ok(text.includes(label), `${name}: no request counted under ${label}`);
      }
      assert.doesNotMatch(text, /route="\(unmatched\)",status="404"/, 'no request fell through to express 404');
    });
  });

  it('every declared route has a client method that sends its request', async () => {
    const ID = 'ro 1/ü';
    const AID = 'at?2';
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
    const CANDIDATE = { id: 'pc-x-1', runId: 'x', ordinal: 1, prompts: { system: 'Be brief.' }, parents: ['pc-x-0'], origin: 'reflection' as const };
    const LINEAGE = { component: 'system', reflection: 'too long', minibatch: ['t1', 't2'] };
    const CALL = {
      ...{ runId: 'x', seq: 0, purpose: 'reflect' as const, model: 'm', requestHash: 'h', messages: [{ role: 'user' as const, content: 'q' }] },
      ...{ response: 'a', error: null, attempts: 1, promptTokens: 1, completionTokens: 1, cost: null, ms: 1 },
    };
    // One call of each method the table names (a method added to the table needs one here: tsc says so).
    const calls: { [M in (typeof clientMethods)[RouteName]]: (c: AglClient) => Promise<unknown> } = {
      addSpans: (c) => c.addSpans([{ rolloutId: ID, attemptId: AID, name: 'n', startTime: 1 }]),
      listSpans: (c) => c.listSpans({ rolloutId: ID, attemptId: 'latest', afterSequenceId: 3, limit: 5 }),
      querySpans: (c) => c.querySpans({ rolloutId: ID, name: 'n' }),
      enqueueRollouts: (c) => c.enqueueRollouts([{ input: null }, { input: { q: 1 }, agent: 'a' }]),
      dequeueRollouts: (c) => c.dequeueRollouts({ workerId: 'w', limit: 2 }),
      startRollout: (c) => c.startRollout({ input: null }, 'w'),
      listRollouts: (c) => c.listRollouts({ status: ['running', 'failed'], limit: 3, withTotal: true, rewardMin: 0.5 }),
      queryRollouts: (c) => c.queryRollouts({ limit: 1, search: 'x' }),
      getRollout: (c) => c.getRollout(ID),
      updateRolloutMetadata: (c) => c.updateRolloutMetadata(ID, { a: 1 }),
      cancelRollout: (c) => c.cancelRollout(ID),
      getAttempts: (c) => c.getAttempts(ID),
      getLatestAttempt: (c) => c.getLatestAttempt(ID),
      getRolloutAttempt: (c) => c.getRolloutAttempt(ID, AID),
      heartbeatRolloutAttempt: (c) => c.heartbeatRolloutAttempt(ID, AID),
      finishRolloutAttempt: (c) => c.finishRolloutAttempt(ID, AID, { status: 'succeeded' }),
      getAttempt: (c) => c.getAttempt(AID),
      heartbeatAttempt: (c) => c.heartbeatAttempt(AID),
      finishAttempt: (c) => c.finishAttempt(AID, { status: 'failed', error: { message: 'x' } }),
      waitForRollouts: (c) => c.waitForRollouts([ID], 10),
      runHealthCheck: (c) => c.runHealthCheck(),
      addResources: (c) => c.addResources({ resources: {} }),
      listResources: (c) => c.listResources(5),
      getLatestResources: (c) => c.getLatestResources(),
      getResources: (c) => c.getResources(ID),
      listWorkers: (c) => c.listWorkers(),
      getWorker: (c) => c.getWorker(ID),
      heartbeatWorker: (c) => c.heartbeatWorker(ID, { status: 'idle' }),
      agents: (c) => c.agents(),
      statistics: (c) => c.statistics(),
      createTrainingRun: (c) => c.createTrainingRun({ agent: 'a', totalSteps: 1 }),
      listTrainingRuns: (c) => c.listTrainingRuns('a', 'optimize'),
      getTrainingRun: (c) => c.getTrainingRun(ID),
      updateTrainingRun: (c) => c.updateTrainingRun(ID, { step: 1 }),
      addMetrics: (c) => c.addMetrics([{ runId: ID, step: 0, name: 'm', value: 1 }]),
      queryMetrics: (c) => c.queryMetrics(ID, 2),
      addTransitions: (c) => c.addTransitions([TRANSITION]),
      queryTransitions: (c) => c.queryTransitions({ runId: 'x', step: 1 }),
      agentHeadline: (c) => c.agentHeadline('a'),
      getGroups: (c) => c.getGroups({ runId: 'x', step: 0 }),
      getRolloutView: (c) => c.getRolloutView({ rolloutId: ID, attemptId: AID }),
      getRolloutsView: (c) => c.getRolloutsView({ status: ['running'], search: 'x', sort: 'reward', offset: 100, limit: 50, candidate: 'pc-x-1' }),
      getOptimizationView: (c) => c.getOptimizationView('x'),
      addPromptCandidate: (c) => c.addPromptCandidate({ ...CANDIDATE, ...LINEAGE }),
      listPromptCandidates: (c) => c.listPromptCandidates('x'),
      getPromptCandidate: (c) => c.getPromptCandidate(ID),
      decidePromptCandidate: (c) => c.decidePromptCandidate(ID, { status: 'accepted', scores: { val: 0.5 } }),
      addOptimizerCall: (c) => c.addOptimizerCall(CALL),
      listOptimizerCalls: (c) => c.listOptimizerCalls('x'),
      promotePrompt: (c) => c.promotePrompt({ agent: 'a', name: 'system', text: 't', candidateId: null, by: 'editor' }),
      listPromotedPrompts: (c) => c.listPromotedPrompts('a'),
      clearPromotedPrompt: (c) => c.clearPromotedPrompt({ agent: 'a', name: 'system', by: 'editor' }),
      listPromptPromotions: (c) => c.listPromptPromotions('a', 'system'),
    };
    assert.deepEqual(Object.keys(clientMethods).sort(), [...NAMES].sort(), 'a client method for each route, and no other');
    for (const name of NAMES) {
      const method = clientMethods[name];
      assert.equal(typeof AglClient.prototype[method], 'function', `${name}: AglClient.${method}`);
      // The request the method sends, caught at the transport (a reply any method can read).
      const sent: { method: string; url: URL; payload: string | undefined }[] = [];
      const client = new AglClient({ url: 'http://127.0.0.1:9', token: 't' });
      (client as any).send = async (m: string, url: string, payload: string | undefined) => {
        sent.push({ method: m, url: new URL(url), payload });
        return { status: 200, text: '{"items":[],"rollouts":[],"claims":[],"spans":[],"count":0}' };
      };
      await calls[method](client);
      assert.equal(sent.length, 1, `${name}: ${method} sends one request`);
      const [{ method: m, url, payload }] = sent as [(typeof sent)[0]];
      const decl: RouteDecl = routes[name];
      assert.ok(url.pathname.startsWith('/v1/agl/'), `${name}: ${url.pathname}`);
      const hit = dispatch(m, url.pathname.slice('/v1/agl'.length));
      assert.equal(hit?.name, name, `${name}: ${method} sent ${m} ${url.pathname}, which goes to ${hit?.name ?? 'no route'}`);
      for (const value of Object.values(hit!.params)) assert.ok([ID, AID].includes(value), `${name}: param ${value} encoded and decoded back`);
      if (decl.method === 'POST') {
        assert.equal(url.search, '', `${name}: no query`);
        if (decl.body) assert.ok(decl.body.safeParse(JSON.parse(payload!)).success, `${name}: the route's schema accepts ${payload}`);
        else assert.equal(payload, undefined, `${name}: no body`);
      } else {
        assert.equal(payload, undefined, `${name}: a GET sends no body`);
        const query = Object.fromEntries(url.searchParams);
        if (decl.query) assert.ok(decl.query.safeParse(query).success, `${name}: the route's schema accepts ?${url.searchParams}`);
        else assert.equal(url.search, '', `${name}: no query`);
      }
    }
  });
});
