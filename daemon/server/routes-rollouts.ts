/**
 * Store API handlers for rollouts, the queue, attempts and waits (routes declared in protocol/routes.ts):
 *   enqueueRollouts (one or many)   dequeueRollouts (claim for a worker)   startRollout (a direct run)
 *   listRollouts, searchRollouts (filters + cursor)   getRollout   updateRollout (metadata)   cancelRollout
 *   listAttempts   getLatestAttempt   get/heartbeat/finishRolloutAttempt   get/heartbeat/finishAttempt (by attempt id alone)
 *   waitRollouts (long-poll until the rollouts end or the timeout)
 *   runHealthCheck (the store's health check now: timeouts, unresponsive attempts, retries)
 * Dequeue, both finishes and waits are marked hot (hot-path.ts).
 */
import type { Attempt } from '../../protocol/store.js';
import type { RolloutQuery } from '../../protocol/lightning-store.js';
import { routes } from '../../protocol/routes.js';
import type { ServerContext } from './server-context.js';
import { HttpProblem, notFound, parseOr400 } from './errors.js';
import { json, type RouteHandlers } from './route.js';

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

/** Reads rollouts by query; everything but the cursor is validated by schema: a cursor the store cannot read is the caller's error. */
async function queryWithCursor(ctx: ServerContext, q: RolloutQuery) {
  try {
    return await ctx.store.queryRollouts(q);
  } catch (err) {
    if (err instanceof TypeError && q.cursor !== undefined && /cursor/.test(err.message)) {
      throw new HttpProblem(400, 'validation', `invalid cursor: pass back a nextCursor from a previous page (${err.message})`, [
        { path: 'cursor', message: err.message },
      ]);
    }
    throw err;
  }
}

export function rolloutRoutes(ctx: ServerContext) {
  return { ...queueRoutes(ctx), ...rolloutRecordRoutes(ctx), ...attemptRoutes(ctx) } satisfies Partial<RouteHandlers>;
}

/** The queue: enqueue, claim, a direct run, waits and the health check. */
function queueRoutes(ctx: ServerContext) {
  const { store } = ctx;
  const seen = (agent: string | null | undefined) => {
    if (agent) ctx.onAgentSeen?.(agent);
  };
  // One rollout, or { rollouts: [...] }: chosen by shape so errors name the field, not "no union member matched".
  const [EnqueueMany, EnqueueOne] = routes.enqueueRollouts.body.options;

  return {
    enqueueRollouts: {
      parseBody(body) {
        const b = body as Record<string, unknown> | undefined;
        const many = b !== null && typeof b === 'object' && !Array.isArray(b) && 'rollouts' in b && !('input' in b);
        return many ? parseOr400(EnqueueMany, b) : parseOr400(EnqueueOne, b);
      },
      async handle({ body }) {
        const inputs = 'rollouts' in body ? body.rollouts : [body];
        const rollouts = inputs.length === 1 ? [await store.enqueueRollout(inputs[0]!)] : await store.enqueueRollouts(inputs);
        for (const x of inputs) seen(x.agent);
        return json(201, { rollouts });
      },
    },

    dequeueRollouts: {
      hot: true,
      async handle({ body: { workerId, limit, agent, mode } }) {
        const opts = { agent, mode };
        const claims =
          limit === 1 ? await store.claimNextRollout(workerId, opts).then((c) => (c ? [c] : [])) : await store.claimRollouts(workerId, limit, opts);
        return json(200, { claims });
      },
    },

    startRollout: {
      async handle({ body: { workerId, ...input } }) {
        const claim = await store.startRollout(input, workerId);
        seen(input.agent);
        return json(201, claim);
      },
    },

    waitRollouts: {
      hot: true,
      handle: async ({ body: { ids, timeoutMs } }) => json(200, { items: await store.waitForRollouts(ids, timeoutMs) }),
    },

    // No body is a plain check; the daemon's clock decides (no `now` from a client).
    runHealthCheck: { handle: async () => json(200, await store.runHealthCheck()) },
  } satisfies Partial<RouteHandlers>;
}

/** Rollout records: list and search, one by id, its metadata, its cancellation. */
function rolloutRecordRoutes(ctx: ServerContext) {
  const { store } = ctx;
  return {
    listRollouts: { handle: async ({ query }) => json(200, await queryWithCursor(ctx, query as RolloutQuery)) },

    searchRollouts: { handle: async ({ body }) => json(200, await queryWithCursor(ctx, body)) },

    getRollout: {
      async handle({ params }) {
        const rollout = await store.getRollout(params.id);
        if (!rollout) throw notFound('rollout', params.id);
        return json(200, rollout);
      },
    },

    updateRollout: { handle: async ({ body, params }) => json(200, await store.updateRolloutMetadata(params.id, body.metadata)) },

    cancelRollout: { handle: async ({ params }) => json(200, await store.cancelRollout(params.id)) },
  } satisfies Partial<RouteHandlers>;
}

/** A rollout's attempts: listed, the latest, and each read, heartbeaten or finished. */
function attemptRoutes(ctx: ServerContext) {
  const { store } = ctx;
  return {
    listAttempts: {
      async handle({ params }) {
        const items = await store.getAttempts(params.id);
        if (items.length === 0 && !(await store.getRollout(params.id))) throw notFound('rollout', params.id);
        return json(200, { items });
      },
    },

    getLatestAttempt: {
      async handle({ params }) {
        const attempt = await store.getLatestAttempt(params.id);
        if (!attempt) {
          if (!(await store.getRollout(params.id))) throw notFound('rollout', params.id);
          throw notFound('attempt of rollout', params.id);
        }
        return json(200, attempt);
      },
    },

    // An attempt is addressed within its rollout (checked to belong to it) or by its id alone (the store's
    // own signatures, which the HTTP client implements): the same three routes under both paths.
    getRolloutAttempt: { handle: async ({ params }) => json(200, await attemptOf(ctx, params.id, params.aid)) },
    heartbeatRolloutAttempt: {
      async handle({ params }) {
        await attemptOf(ctx, params.id, params.aid);
        return json(200, await store.heartbeatAttempt(params.aid));
      },
    },
    finishRolloutAttempt: {
      hot: true,
      async handle({ body, params }) {
        await attemptOf(ctx, params.id, params.aid);
        return json(200, await store.finishAttempt(params.aid, body));
      },
    },
    getAttempt: { handle: async ({ params }) => json(200, await attemptById(ctx, params.aid)) },
    heartbeatAttempt: {
      async handle({ params }) {
        await attemptById(ctx, params.aid);
        return json(200, await store.heartbeatAttempt(params.aid));
      },
    },
    finishAttempt: {
      hot: true,
      async handle({ body, params }) {
        await attemptById(ctx, params.aid);
        return json(200, await store.finishAttempt(params.aid, body));
      },
    },
  } satisfies Partial<RouteHandlers>;
}
