/**
 * Store API routes for rollouts, the queue, attempts and waits (mounted under /v1/agl):
 *   POST /rollouts (start a direct run)          GET  /rollouts (list: filters + cursor)
 *   POST /rollouts/search                        GET  /rollouts/:id        POST /rollouts/:id (metadata)
 *   POST /rollouts/:id/cancel                    GET  /rollouts/:id/attempts
 *   GET  /rollouts/:id/attempts/latest           GET  /rollouts/:id/attempts/:aid
 *   POST /rollouts/:id/attempts/:aid/heartbeat   POST /rollouts/:id/attempts/:aid/finish
 *   POST /queues/rollouts/enqueue (one or many)  POST /queues/rollouts/dequeue (claim for a worker)
 *   POST /waits/rollouts (long-poll until the rollouts end or the timeout)
 * Declared once for the route table (store-api.ts); dequeue, finish and waits are marked hot (hot-path.ts).
 */
import {
  DequeueRequest, EnqueueManyRequest, FinishAttemptRequest, RolloutInputRequest, RolloutListQuery,
  RolloutSearchRequest, StartRolloutRequest, UpdateRolloutRequest, WaitRolloutsRequest,
} from '../../protocol/api.js';
import type { Attempt } from '../../protocol/store.js';
import type { RolloutQuery } from '../store/types.js';
import type { ServerContext } from './context.js';
import { HttpProblem, notFound, parseOr400 } from './errors.js';
import { json, type StoreRoute } from './route.js';

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
        throw new HttpProblem(400, 'validation', `invalid cursor: pass back a nextCursor from a previous page (${err.message})`, [{ path: 'cursor', message: err.message }]);
      }
      throw err;
    }
  };
  const seen = (agent: string | null | undefined) => { if (agent) ctx.onAgentSeen?.(agent); };

  return [
    { method: 'POST', path: '/queues/rollouts/enqueue', async handle({ body }) {
      const b = body as Record<string, unknown> | undefined;
      // One rollout, or { rollouts: [...] }: chosen by shape so errors name the field, not "no union member matched".
      const many = b !== null && typeof b === 'object' && !Array.isArray(b) && 'rollouts' in b && !('input' in b);
      const inputs = many ? parseOr400(EnqueueManyRequest, b).rollouts : [parseOr400(RolloutInputRequest, b)];
      const rollouts = inputs.length === 1 ? [await store.enqueueRollout(inputs[0])] : await store.enqueueRollouts(inputs);
      for (const x of inputs) seen(x.agent);
      return json(201, { rollouts });
    } },

    { method: 'POST', path: '/queues/rollouts/dequeue', hot: true, async handle({ body }) {
      const { workerId, limit, agent, mode } = parseOr400(DequeueRequest, body);
      const opts = { agent, mode };
      const claims = limit === 1
        ? await store.claimNextRollout(workerId, opts).then((c) => (c ? [c] : []))
        : await store.claimRollouts(workerId, limit, opts);
      return json(200, { claims });
    } },

    { method: 'POST', path: '/rollouts', async handle({ body }) {
      const { workerId, ...input } = parseOr400(StartRolloutRequest, body);
      const claim = await store.startRollout(input, workerId);
      seen(input.agent);
      return json(201, claim);
    } },

    { method: 'GET', path: '/rollouts', handle: async ({ query }) =>
      json(200, await queryWithCursor(parseOr400(RolloutListQuery, query, 'query') as RolloutQuery)) },

    { method: 'POST', path: '/rollouts/search', handle: async ({ body }) =>
      json(200, await queryWithCursor(parseOr400(RolloutSearchRequest, body))) },

    { method: 'GET', path: '/rollouts/:id', async handle({ params }) {
      const rollout = await store.getRollout(params.id!);
      if (!rollout) throw notFound('rollout', params.id!);
      return json(200, rollout);
    } },

    { method: 'POST', path: '/rollouts/:id', async handle({ body, params }) {
      const { metadata } = parseOr400(UpdateRolloutRequest, body);
      return json(200, await store.updateRolloutMetadata(params.id!, metadata));
    } },

    { method: 'POST', path: '/rollouts/:id/cancel', handle: async ({ params }) => json(200, await store.cancelRollout(params.id!)) },

    { method: 'GET', path: '/rollouts/:id/attempts', async handle({ params }) {
      const items = await store.getAttempts(params.id!);
      if (items.length === 0 && !(await store.getRollout(params.id!))) throw notFound('rollout', params.id!);
      return json(200, { items });
    } },

    { method: 'GET', path: '/rollouts/:id/attempts/latest', async handle({ params }) {
      const attempt = await store.getLatestAttempt(params.id!);
      if (!attempt) {
        if (!(await store.getRollout(params.id!))) throw notFound('rollout', params.id!);
        throw notFound('attempt of rollout', params.id!);
      }
      return json(200, attempt);
    } },

    { method: 'GET', path: '/rollouts/:id/attempts/:aid', handle: async ({ params }) => json(200, await attemptOf(ctx, params.id!, params.aid!)) },

    { method: 'POST', path: '/rollouts/:id/attempts/:aid/heartbeat', async handle({ params }) {
      await attemptOf(ctx, params.id!, params.aid!);
      return json(200, await store.heartbeatAttempt(params.aid!));
    } },

    { method: 'POST', path: '/rollouts/:id/attempts/:aid/finish', hot: true, async handle({ body, params }) {
      const input = parseOr400(FinishAttemptRequest, body);
      await attemptOf(ctx, params.id!, params.aid!);
      return json(200, await store.finishAttempt(params.aid!, input));
    } },

    { method: 'POST', path: '/waits/rollouts', hot: true, async handle({ body }) {
      const { ids, timeoutMs } = parseOr400(WaitRolloutsRequest, body);
      return json(200, { items: await store.waitForRollouts(ids, timeoutMs) });
    } },
  ];
}
