/**
 * The OpenAI-compatible LLM gateway: POST /v1/chat/completions, POST /v1/completions, GET /v1/models,
 * also under /rollout/:rolloutId/attempt/:attemptId/v1/... so each call is tied to its attempt (or via
 * the x-agl-rollout-id / x-agl-attempt-id headers). Serves the published LLM resource: the daemon's
 * local policy or an upstream OpenAI-compatible server. Every call tied to an attempt becomes a span,
 * durable before the response completes (streams keep their token ids). A call that names an attempt the
 * gateway cannot record into (unknown, another rollout's, or ended) is refused before anything is forwarded,
 * and a call whose span cannot be written is not answered with its result: no LLM call of a rollout goes
 * unrecorded. Calls naming no rollout (plain OpenAI-endpoint use, token required) are served as before.
 * Errors use OpenAI's error shape inside an application/problem+json body, so both OpenAI clients and our
 * tools read them.
 */
import express, { type Request, type Response } from 'express';
import { HEADERS } from '../../protocol/spans.js';
import { LlmResource, MAX_JSON_DEPTH, tooDeepAt, type Rollout } from '../../protocol/store.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { pickLlmResource, ResourcesCache } from '../store/resources-cache.js';
import { requireToken } from './auth.js';
import { jsonBody } from './body.js';
import { HttpProblem } from './errors.js';
import { type Backend, type CallRequest, type CallResult, GatewayError, type OpenAiBody } from './gateway-backend.js';
import { LocalBackend, type PolicyProvider } from './gateway-local.js';
import { routeByRole } from './gateway-roles.js';
import { buildCallSpan } from './gateway-spans.js';
import { UpstreamBackend } from './gateway-upstream.js';

export interface GatewayContext {
  store: Pick<LightningStore, 'addSpans' | 'getRollout' | 'getAttempt' | 'getResources' | 'getLatestResources'>;
  /** The daemon's loaded policy model for a model name (local backend); absent = none loaded. */
  getPolicy?: PolicyProvider;
  /**
   * The daemon's bearer token: required on the bare /v1/* routes. The per-attempt routes need none: the
   * rollout and attempt ids in the URL (random, known only to the runner and the agent) are the capability.
   */
  token?: string;
  /** Environment variables an upstream resource's `apiKeyEnv` may name (default: OPENAI_API_KEY only). */
  allowedKeyEnvs?: readonly string[];
  /** A served policy's version (its training updates so far), recorded with each call it serves; absent = not tracked. */
  policyVersion?: (model: string) => number | null;
  /** A checkpoint of one policy per role being served (agl serve --model): routing for local resources without their own. */
  servedRoles?: () => { roleModels: Record<string, string>; unassignedRole: 'refuse' | 'default' };
}

/** Attempt statuses no call can be recorded into any more (`unresponsive` is revived by its next span). */
const ENDED_ATTEMPT = new Set(['succeeded', 'failed', 'timeout']);

const PREFIX = '/rollout/:rolloutId/attempt/:attemptId';
const LATEST_TTL_MS = 250;
const ROLLOUT_TTL_MS = 5_000;

export function sendOpenAiError(res: Response, status: number, message: string, code = 'invalid_request_error', param: string | null = null): void {
  if (res.headersSent) return;
  res
    .status(status)
    .type('application/problem+json')
    .send(
      JSON.stringify({
        type: `https://agent-lightning.dev/problems/${code}`,
        title: code.replace(/_/g, ' '),
        status,
        detail: message,
        error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', param, code },
      }),
    );
}

function errorOf(err: unknown): { status: number; message: string; code: string; param: string | null } {
  if (err instanceof GatewayError) return { status: err.status, message: err.message, code: err.code, param: err.param };
  return { status: 500, message: `gateway error: ${err instanceof Error ? err.message : String(err)}`, code: 'internal_error', param: null };
}

/** Thrown when a call succeeded but its span could not be written: the result is withheld (503). */
class SpanNotRecorded extends GatewayError {}

/** Writes a served call's span; when that fails, the call is refused rather than served unrecorded. */
async function recorded(span: ((result: CallResult | null, err: Error | null) => Promise<void>) | null, result: CallResult): Promise<void> {
  try {
    await span?.(result, null);
  } catch (err) {
    throw new SpanNotRecorded(
      503,
      `the call's span could not be recorded (${(err as Error).message}); its result was withheld: retry the call`,
      'span_not_recorded',
    );
  }
}

/** The rollouts calls name, cached briefly (a call's rollout is read on every call of its attempt). */
class RolloutCache {
  private readonly rollouts = new Map<string, { at: number; rollout: Rollout }>();

  constructor(private readonly store: GatewayContext['store']) {}

  async get(id: string): Promise<Rollout | null> {
    const hit = this.rollouts.get(id);
    if (hit && Date.now() - hit.at < ROLLOUT_TTL_MS) return hit.rollout;
    const rollout = await this.store.getRollout(id);
    if (rollout) {
      if (this.rollouts.size > 10_000) this.rollouts.clear();
      this.rollouts.set(id, { at: Date.now(), rollout });
    }
    return rollout;
  }
}

export function gatewayRouter(ctx: GatewayContext): express.Router {
  const router = express.Router();
  const rollouts = new RolloutCache(ctx.store);
  const resourcesCache = new ResourcesCache(ctx.store, LATEST_TTL_MS);
  const upstream = new UpstreamBackend(ctx.allowedKeyEnvs);
  // Looked up per call: `agl serve` may load (or swap) the policy after the app was built.
  const local = new LocalBackend((model) => ctx.getPolicy?.(model) ?? null);
  const json = jsonBody('64mb');

  /** The attempt a call is for (path or x-agl-* headers), checked to be recordable: else refused before any forwarding. */
  async function callIds(req: Request): Promise<{ rolloutId?: string; attemptId?: string; rollout: Rollout | null }> {
    const rolloutId = (req.params.rolloutId as string | undefined) ?? req.get(HEADERS.rolloutId);
    const attemptId = (req.params.attemptId as string | undefined) ?? req.get(HEADERS.attemptId);
    if (!rolloutId && !attemptId) return { rollout: null };
    if (!attemptId)
      throw new GatewayError(
        400,
        `rollout '${rolloutId}' given without an attempt id (header ${HEADERS.attemptId}); the call was not forwarded`,
        'attempt_missing',
      );
    const attempt = await ctx.store.getAttempt(attemptId);
    if (!attempt || (rolloutId && attempt.rolloutId !== rolloutId)) {
      if (rolloutId && !(await rollouts.get(rolloutId)))
        throw new GatewayError(
          404,
          `rollout '${rolloutId}' not found: use the base URL the runner gave this attempt; the call was not forwarded`,
          'rollout_not_found',
          'rolloutId',
        );
      const where = rolloutId ? ` of rollout '${rolloutId}'` : '';
      throw new GatewayError(
        404,
        `attempt '${attemptId}'${where} not found: use the base URL the runner gave this attempt; the call was not forwarded`,
        'attempt_not_found',
        'attemptId',
      );
    }
    if (ENDED_ATTEMPT.has(attempt.status)) {
      throw new GatewayError(
        409,
        `attempt '${attemptId}' already ended (status '${attempt.status}'): its calls can no longer be recorded, so the call was not forwarded`,
        'attempt_ended',
        'attemptId',
      );
    }
    return { rolloutId: attempt.rolloutId, attemptId, rollout: await rollouts.get(attempt.rolloutId) };
  }

  async function handle(kind: CallRequest['kind'], req: Request, res: Response): Promise<void> {
    const startTime = Date.now();
    const body = req.body as OpenAiBody | undefined;
    if (!body || typeof body !== 'object' || Array.isArray(body))
      return sendOpenAiError(res, 400, 'the request body must be a JSON object (Content-Type: application/json)');
    const deep = tooDeepAt(body);
    if (deep)
      return sendOpenAiError(
        res,
        400,
        `the request body nests deeper than ${MAX_JSON_DEPTH} levels (the JSON depth limit) at ${deep.slice(0, 3).map(String).join('.')}...`,
        'invalid_request_error',
        String(deep[0]),
      );
    let span: ((result: CallResult | null, err: Error | null) => Promise<void>) | null = null;
    let sse = false;
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    try {
      const ids = await callIds(req);
      const resources = await resourcesCache.forRollout(ids.rollout);
      const picked =
        pickLlmResource(resources, body.model) ?? LlmResource.parse({ type: 'llm', endpoint: '', model: body.model ?? 'default', backend: 'local' });
      // One policy per role: the call's role decides which model serves it (gateway-roles.ts); a daemon serving a
      // checkpoint of role policies gives its routing to local resources that bring none.
      const routed = ctx.servedRoles && picked.backend === 'local' && !picked.roleModels ? { ...picked, ...ctx.servedRoles() } : picked;
      const { resource, role } = routeByRole(routed, req.get(HEADERS.agent));
      const callReq: CallRequest = { kind, body, resource };
      if (ids.rolloutId && ids.attemptId) {
        const call = {
          rolloutId: ids.rolloutId,
          attemptId: ids.attemptId,
          traceparent: req.get('traceparent'),
          resourcesId: resources?.id ?? null,
          resourcesVersion: resources?.version ?? null,
          startTime,
          streamed: body.stream === true,
          role,
          policy: resource.roleModels ? { name: resource.model, version: ctx.policyVersion?.(resource.model) ?? null } : null,
        };
        const r = callReq;
        // A span that cannot be written fails the call: its result is not served unrecorded (see recorded below).
        span = async (result, err) => {
          await ctx.store.addSpans([buildCallSpan(r, call, result, err)]);
        };
      }
      const backend: Backend = resource.backend === 'upstream' ? upstream : local;
      if (body.stream === true) {
        const result = await backend.stream(callReq, abort.signal, (chunk) => {
          if (!sse) {
            res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
            sse = true;
          }
          // Chunks that arrive together leave in one socket write (one syscall, not one per chunk).
          if (!res.writableCorked) {
            res.cork();
            process.nextTick(() => res.uncork());
          }
          res.write(`data: ${JSON.stringify(chunk)}\n\n`);
        });
        await recorded(span, result);
        if (!sse) res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
        res.end('data: [DONE]\n\n');
      } else {
        const result = await backend.call(callReq, abort.signal);
        await recorded(span, result);
        res.json(result.response);
      }
    } catch (err) {
      const e = errorOf(err);
      // The failed call is recorded when it can be (best effort: nothing was served).
      if (!(err instanceof SpanNotRecorded)) await span?.(null, new Error(e.message)).catch(() => {});
      if (sse) res.end(`data: ${JSON.stringify({ error: { message: e.message, type: 'server_error', code: e.code } })}\n\n`);
      else sendOpenAiError(res, e.status, e.message, e.code, e.param);
    }
  }

  async function models(req: Request, res: Response): Promise<void> {
    try {
      const ids = await callIds(req);
      const resources = await resourcesCache.forRollout(ids.rollout);
      const names = new Set<string>();
      for (const r of Object.values(resources?.resources ?? {})) if (r.type === 'llm') names.add(r.model);
      const created = Math.floor((resources?.createdAt ?? Date.now()) / 1000);
      res.json({ object: 'list', data: [...names].map((id) => ({ id, object: 'model', created, owned_by: 'agl' })) });
    } catch (err) {
      const e = errorOf(err);
      sendOpenAiError(res, e.status, e.message, e.code, e.param);
    }
  }

  const pass: express.RequestHandler = (_req, _res, next) => next();
  for (const prefix of ['', PREFIX]) {
    const auth = prefix === '' && ctx.token ? requireToken(ctx.token) : pass;
    router.post(`${prefix}/v1/chat/completions`, auth, ...json, (req: Request, res: Response) => handle('chat', req, res));
    router.post(`${prefix}/v1/completions`, auth, ...json, (req: Request, res: Response) => handle('completion', req, res));
    router.get(`${prefix}/v1/models`, auth, models);
  }
  // Bodies refused by jsonBody (malformed JSON, not UTF-8, not application/json, too large): in the OpenAI error shape.
  router.use((err: unknown, req: Request, res: Response, next: (e?: unknown) => void) => {
    if (!/\/v1\/(chat\/completions|completions|models)$/.test(req.path)) return next(err);
    const e = err as { status?: number; message?: string };
    const status = err instanceof HttpProblem ? err.status : typeof e.status === 'number' && e.status >= 400 && e.status < 500 ? e.status : 400;
    const param = err instanceof HttpProblem ? (err.errors?.[0]?.path ?? null) : null;
    sendOpenAiError(
      res,
      status,
      `invalid request body: ${e.message ?? String(err)}`,
      status === 415 ? 'unsupported_media_type' : 'invalid_request_error',
      param,
    );
  });
  return router;
}

/** For tests and benchmarks: the backends a router built, to inspect batching. */
export { LocalBackend, UpstreamBackend };
