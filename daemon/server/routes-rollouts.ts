/**
 * Store API routes for rollouts, the queue, attempts and waits (mounted under /v1/agl):
 *   POST /rollouts (start a direct run)          GET  /rollouts (list: filters + cursor)
 *   POST /rollouts/search                        GET  /rollouts/:id        POST /rollouts/:id (metadata)
 *   POST /rollouts/:id/cancel                    GET  /rollouts/:id/attempts
 *   GET  /rollouts/:id/attempts/latest           GET  /rollouts/:id/attempts/:aid
 *   POST /rollouts/:id/attempts/:aid/heartbeat   POST /rollouts/:id/attempts/:aid/finish
 *   POST /queues/rollouts/enqueue (one or many)  POST /queues/rollouts/dequeue (claim for a worker)
 *   GET  /attempts/:aid    POST /attempts/:aid/heartbeat    POST /attempts/:aid/finish   (by attempt id alone)
 *   POST /waits/rollouts (long-poll until the rollouts end or the timeout)
 *   POST /health-checks (run the store's health check now: timeouts, unresponsive attempts, retries)
 * Declared once for the route table (store-api.ts); dequeue, both finishes and waits are marked hot (hot-path.ts).
 */
import {
  DequeueRequest,
  EnqueueManyRequest,
  FinishAttemptRequest,
  HealthCheckRequest,
  RolloutInputRequest,
  RolloutListQuery,
  RolloutSearchRequest,
  StartRolloutRequest,
  UpdateRolloutRequest,
  WaitRolloutsRequest,
} from '../../protocol/api.js';
import type { Attempt } from '../../protocol/store.js';
import type { RolloutQuery } from '../../protocol/lightning-store.js';
import type { ServerContext } from './server-context.js';
import { HttpProblem, notFound, parseOr400 } from './errors.js';
import { json, type StoreRoute } from './route.js';

/** The attempt with this id (404 otherwise). */
async function attemptById(ctx: ServerContext, aid: string): Promise<Attempt> {
  const attempt = await ctx.store.getAttempt(aid);
  if (!attempt) throw notFound('attempt', aid);
  return attempt;
}

/** The attempt, checked to belong to the rollout in the path (404 otherwise). */
async function attemptOf(ctx: ServerContext, id: string, aid: string): Promise<Attempt> {
  const attempt = await ctx.store.getAttempt(aid);
  if (!attempt || attempt.rolloutId !== id) {
    if (!attempt && !(await ctx.store.getRollout(id))) throw notFound('rollout', id);
    throw notFound(`attempt of rollout '${id}'`, aid);
  }
  return attempt;
}

export function rolloutRoutes(ctx: ServerContext): StoreRoute[] {
  const { store } = ctx;
  // Everything but the cursor is validated by schema; a cursor the store cannot read is the caller's error.
  const queryWithCursor = async (q: RolloutQuery) => {
    try {
      return await store.queryRollouts(q);
    } catch (err) {
      if (err instanceof TypeError && q.cursor !== undefined && /cursor/.test(err.message)) {
        throw new HttpProblem(400, 'validation', `invalid cursor: pass back a nextCursor from a previous page (${err.message})`, [
          { path: 'cursor', message: err.message },
        ]);
      }
      throw err;
    }
  };
  const seen = (agent: string | null | undefined) => {
    if (agent) ctx.onAgentSeen?.(agent);
  };
  /** GET, heartbeat and finish of the attempt `find` reads from the path (404 when it finds none). */
  const attemptRoutes = (base: string, find: (params: Record<string, string>) => Promise<Attempt>): StoreRoute[] => [
    { method: 'GET', path: base, handle: async ({ params }) => json(200, await find(params)) },
    {
      method: 'POST',
      path: `${base}/heartbeat`,
      async handle({ params }) {
        await find(params);
        return json(200, await store.heartbeatAttempt(params.aid!));
      },
    },
    {
      method: 'POST',
      path: `${base}/finish`,
      hot: true,
      async handle({ body, params }) {
        const input = parseOr400(FinishAttemptRequest, body);
        await find(params);
        return json(200, await store.finishAttempt(params.aid!, input));
      },
    },
  ];

  return [
    {
      method: 'POST',
      path: '/queues/rollouts/enqueue',
      async handle({ body }) {
        const b = body as Record<string, unknown> | undefined;
        // One rollout, or { rollouts: [...] }: chosen by shape so errors name the field, not "no union member matched".
        const many = b !== null && typeof b === 'object' && !Array.isArray(b) && 'rollouts' in b && !('input' in b);
        const inputs = many ? parseOr400(EnqueueManyRequest, b).rollouts : [parseOr400(RolloutInputRequest, b)];
        const rollouts = inputs.length === 1 ? [await store.enqueueRollout(inputs[0])] : await store.enqueueRollouts(inputs);
        for (const x of inputs) seen(x.agent);
        return json(201, { rollouts });
      },
    },

    {
      method: 'POST',
      path: '/queues/rollouts/dequeue',
      hot: true,
      async handle({ body }) {
        const { workerId, limit, agent, mode } = parseOr400(DequeueRequest, body);
        const opts = { agent, mode };
        const claims =
          limit === 1 ? await store.claimNextRollout(workerId, opts).then((c) => (c ? [c] : [])) : await store.claimRollouts(workerId, limit, opts);
        return json(200, { claims });
      },
    },

    {
      method: 'POST',
      path: '/rollouts',
      async handle({ body }) {
        const { workerId, ...input } = parseOr400(StartRolloutRequest, body);
        const claim = await store.startRollout(input, workerId);
        seen(input.agent);
        return json(201, claim);
      },
    },

    {
      method: 'GET',
      path: '/rollouts',
      handle: async ({ query }) => json(200, await queryWithCursor(parseOr400(RolloutListQuery, query, 'query') as RolloutQuery)),
    },

    { method: 'POST', path: '/rollouts/search', handle: async ({ body }) => json(200, await queryWithCursor(parseOr400(RolloutSearchRequest, body))) },

    {
      method: 'GET',
      path: '/rollouts/:id',
      async handle({ params }) {
        const rollout = await store.getRollout(params.id!);
        if (!rollout) throw notFound('rollout', params.id!);
        return json(200, rollout);
      },
    },

    {
      method: 'POST',
      path: '/rollouts/:id',
      async handle({ body, params }) {
        const { metadata } = parseOr400(UpdateRolloutRequest, body);
        return json(200, await store.updateRolloutMetadata(params.id!, metadata));
      },
    },

    { method: 'POST', path: '/rollouts/:id/cancel', handle: async ({ params }) => json(200, await store.cancelRollout(params.id!)) },

    {
      method: 'GET',
      path: '/rollouts/:id/attempts',
      async handle({ params }) {
        const items = await store.getAttempts(params.id!);
        if (items.length === 0 && !(await store.getRollout(params.id!))) throw notFound('rollout', params.id!);
        return json(200, { items });
      },
    },

    {
      method: 'GET',
      path: '/rollouts/:id/attempts/latest',
      async handle({ params }) {
        const attempt = await store.getLatestAttempt(params.id!);
        if (!attempt) {
          if (!(await store.getRollout(params.id!))) throw notFound('rollout', params.id!);
          throw notFound('attempt of rollout', params.id!);
        }
        return json(200, attempt);
      },
    },

    // An attempt is addressed within its rollout (checked to belong to it) or by its id alone (the store's
    // own signatures, which the HTTP client implements): the same three routes under both paths.
    ...attemptRoutes('/rollouts/:id/attempts/:aid', (p) => attemptOf(ctx, p.id!, p.aid!)),
    ...attemptRoutes('/attempts/:aid', (p) => attemptById(ctx, p.aid!)),

    {
      method: 'POST',
      path: '/waits/rollouts',
      hot: true,
      async handle({ body }) {
        const { ids, timeoutMs } = parseOr400(WaitRolloutsRequest, body);
        return json(200, { items: await store.waitForRollouts(ids, timeoutMs) });
      },
    },

    {
      method: 'POST',
      path: '/health-checks',
      async handle({ body }) {
        // An empty body is a plain check; the daemon's clock decides (no `now` from a client).
        if (body !== undefined) parseOr400(HealthCheckRequest, body);
        return json(200, await store.runHealthCheck());
      },
    },
  ];
}
