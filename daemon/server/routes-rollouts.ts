/**
 * Store API routes for rollouts, the queue, attempts and waits (mounted under /v1/agl):
 *   POST /rollouts (start a direct run)          GET  /rollouts (list: filters + cursor)
 *   POST /rollouts/search                        GET  /rollouts/:id        POST /rollouts/:id (metadata)
 *   POST /rollouts/:id/cancel                    GET  /rollouts/:id/attempts
 *   GET  /rollouts/:id/attempts/latest           GET  /rollouts/:id/attempts/:aid
 *   POST /rollouts/:id/attempts/:aid/heartbeat   POST /rollouts/:id/attempts/:aid/finish
 *   POST /queues/rollouts/enqueue (one or many)  POST /queues/rollouts/dequeue (claim for a worker)
 *   POST /waits/rollouts (long-poll until the rollouts end or the timeout)
 * Dequeue, finish and waits are also served by the hot path (hot-path.ts) with the same handlers.
 */
import { Router } from 'express';
import {
  DequeueRequest, EnqueueManyRequest, FinishAttemptRequest, RolloutInputRequest, RolloutListQuery,
  RolloutSearchRequest, StartRolloutRequest, UpdateRolloutRequest, WaitRolloutsRequest,
} from '../../protocol/api.js';
import type { Attempt } from '../../protocol/store.js';
import type { RolloutQuery } from '../store/types.js';
import { HttpProblem, notFound, parseOr400, sendReply, type Reply } from './errors.js';
import type { ServerContext } from './app.js';

/** The attempt, checked to belong to the rollout in the path (404 otherwise). */
async function attemptOf(ctx: ServerContext, id: string, aid: string): Promise<Attempt> {
  const attempt = await ctx.store.getAttempt(aid);
  if (!attempt || attempt.rolloutId !== id) {
    if (!attempt && !(await ctx.store.getRollout(id))) throw notFound('rollout', id);
    throw notFound(`attempt of rollout '${id}'`, aid);
  }
  return attempt;
}

const json = (status: number, value: unknown): Reply => ({ status, body: JSON.stringify(value) });

/** The queue, finish and wait routes' work, from parsed body to reply: shared by the express routes and the hot path (hot-path.ts). */
export function rolloutHandlers(ctx: ServerContext) {
  const { store } = ctx;
  return {
    /** POST /queues/rollouts/dequeue */
    async dequeue(body: unknown): Promise<Reply> {
      const { workerId, limit, agent, mode } = parseOr400(DequeueRequest, body);
      const opts = { agent, mode };
      const claims = limit === 1
        ? await store.claimNextRollout(workerId, opts).then((c) => (c ? [c] : []))
        : await store.claimRollouts(workerId, limit, opts);
      return json(200, { claims });
    },
    /** POST /rollouts/:id/attempts/:aid/finish */
    async finish(id: string, aid: string, body: unknown): Promise<Reply> {
      const input = parseOr400(FinishAttemptRequest, body);
      await attemptOf(ctx, id, aid);
      return json(200, await store.finishAttempt(aid, input));
    },
    /** POST /waits/rollouts */
    async wait(body: unknown): Promise<Reply> {
      const { ids, timeoutMs } = parseOr400(WaitRolloutsRequest, body);
      return json(200, { items: await store.waitForRollouts(ids, timeoutMs) });
    },
  };
}

export function rolloutsRouter(ctx: ServerContext): Router {
  const r = Router();
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

  r.post('/queues/rollouts/enqueue', async (req, res) => {
    const body = req.body as Record<string, unknown> | undefined;
    // One rollout, or { rollouts: [...] }: chosen by shape so errors name the field, not "no union member matched".
    const many = body !== null && typeof body === 'object' && !Array.isArray(body) && 'rollouts' in body && !('input' in body);
    const inputs = many ? parseOr400(EnqueueManyRequest, body).rollouts : [parseOr400(RolloutInputRequest, body)];
    const rollouts = inputs.length === 1 ? [await store.enqueueRollout(inputs[0])] : await store.enqueueRollouts(inputs);
    for (const x of inputs) seen(x.agent);
    res.status(201).json({ rollouts });
  });

  const hot = rolloutHandlers(ctx);
  r.post('/queues/rollouts/dequeue', async (req, res) => sendReply(res, await hot.dequeue(req.body)));

  r.post('/rollouts', async (req, res) => {
    const { workerId, ...input } = parseOr400(StartRolloutRequest, req.body);
    const claim = await store.startRollout(input, workerId);
    seen(input.agent);
    res.status(201).json(claim);
  });

  r.get('/rollouts', async (req, res) => {
    res.json(await queryWithCursor(parseOr400(RolloutListQuery, req.query, 'query') as RolloutQuery));
  });

  r.post('/rollouts/search', async (req, res) => {
    res.json(await queryWithCursor(parseOr400(RolloutSearchRequest, req.body)));
  });

  r.get('/rollouts/:id', async (req, res) => {
    const rollout = await store.getRollout(req.params.id);
    if (!rollout) throw notFound('rollout', req.params.id);
    res.json(rollout);
  });

  r.post('/rollouts/:id', async (req, res) => {
    const { metadata } = parseOr400(UpdateRolloutRequest, req.body);
    res.json(await store.updateRolloutMetadata(req.params.id, metadata));
  });

  r.post('/rollouts/:id/cancel', async (req, res) => {
    res.json(await store.cancelRollout(req.params.id));
  });

  r.get('/rollouts/:id/attempts', async (req, res) => {
    const items = await store.getAttempts(req.params.id);
    if (items.length === 0 && !(await store.getRollout(req.params.id))) throw notFound('rollout', req.params.id);
    res.json({ items });
  });

  r.get('/rollouts/:id/attempts/latest', async (req, res) => {
    const attempt = await store.getLatestAttempt(req.params.id);
    if (!attempt) {
      if (!(await store.getRollout(req.params.id))) throw notFound('rollout', req.params.id);
      throw notFound('attempt of rollout', req.params.id);
    }
    res.json(attempt);
  });

  r.get('/rollouts/:id/attempts/:aid', async (req, res) => {
    res.json(await attemptOf(ctx, req.params.id, req.params.aid));
  });

  r.post('/rollouts/:id/attempts/:aid/heartbeat', async (req, res) => {
    await attemptOf(ctx, req.params.id, req.params.aid);
    res.json(await store.heartbeatAttempt(req.params.aid));
  });

  r.post('/rollouts/:id/attempts/:aid/finish', async (req, res) => sendReply(res, await hot.finish(req.params.id, req.params.aid, req.body)));

  r.post('/waits/rollouts', async (req, res) => sendReply(res, await hot.wait(req.body)));

  return r;
}
