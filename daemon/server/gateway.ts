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
 *
 * The routes and their bodies are declared in protocol/routes.ts (gatewayRoutes: unknown OpenAI fields pass
 * through, the fields the gateway reads are typed). A call goes through five steps, one function each: its body
 * is checked (validBody), it is routed to its attempt and policy (gateway-route.ts), served by its backend
 * (serve), its span recorded (recordSpan), and answered (CallAnswer: JSON, or server-sent events as the chunks
 * arrive).
 */
import express, { type Request, type Response } from 'express';
import type { z } from 'zod';
import type { ProblemFieldError } from '../../protocol/api.js';
import { ChatCompletionBody } from '../../protocol/api-gateway.js';
import { gatewayRoutes } from '../../protocol/routes.js';
import { MAX_JSON_DEPTH, tooDeepAt } from '../../protocol/store.js';
import { requireToken } from './auth.js';
import { jsonBody } from './body.js';
import { HttpProblem, parseOr400 } from './errors.js';
import { type Backend, type CallRequest, type CallResult, GatewayError, type OpenAiBody } from './gateway-backend.js';
import { LocalBackend } from './gateway-local.js';
import { CallRouter, type GatewayContext, type RoutedCall } from './gateway-route.js';
import { buildCallSpan } from './gateway-spans.js';
import { UpstreamBackend } from './gateway-upstream.js';

export type { GatewayContext } from './gateway-route.js';

const PREFIX = '/rollout/:rolloutId/attempt/:attemptId';
type GatewayRoute = (typeof gatewayRoutes)[keyof typeof gatewayRoutes];

export function sendOpenAiError(
  res: Response,
  status: number,
  message: string,
  code = 'invalid_request_error',
  param: string | null = null,
  errors?: ProblemFieldError[],
): void {
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
        ...(errors?.length && { errors }),
      }),
    );
}

function errorOf(err: unknown): { status: number; message: string; code: string; param: string | null } {
  if (err instanceof GatewayError) return { status: err.status, message: err.message, code: err.code, param: err.param };
  return { status: 500, message: `gateway error: ${err instanceof Error ? err.message : String(err)}`, code: 'internal_error', param: null };
}

/** Thrown when a call succeeded but its span could not be written: the result is withheld (503). */
class SpanNotRecorded extends GatewayError {}

/**
 * Step 1: the call's body as sent (unknown OpenAI fields included: they go upstream unchanged), or null once it
 * was refused with 400 naming the field: not a JSON object, nested too deep, or a field the gateway reads with
 * the wrong type (its declared schema, protocol/api-gateway.ts). Before routing: a refused call records nothing.
 */
function validBody(req: Request, res: Response, schema: z.ZodType): OpenAiBody | null {
  const body: unknown = req.body;
  const deep = body !== null && typeof body === 'object' && !Array.isArray(body) ? tooDeepAt(body) : null;
  try {
    if (deep) {
      const where = `${deep.slice(0, 3).map(String).join('.')}...`;
      throw new HttpProblem(400, 'validation', `the request body nests deeper than ${MAX_JSON_DEPTH} levels (the JSON depth limit) at ${where}`, [
        { path: String(deep[0]), message: `nested deeper than ${MAX_JSON_DEPTH} levels` },
      ]);
    }
    parseOr400(schema, body);
    return body as OpenAiBody;
  } catch (err) {
    if (!(err instanceof HttpProblem)) throw err;
    sendOpenAiError(res, 400, err.detail, 'invalid_request_error', err.errors?.[0]?.path ?? null, err.errors);
    return null;
  }
}

/**
 * Step 4: writes a served call's span. A span that cannot be written fails the call: its result is not served
 * unrecorded. A call that names no rollout has nothing to record.
 */
async function recordSpan(store: GatewayContext['store'], call: RoutedCall, result: CallResult): Promise<void> {
  if (!call.record) return;
  try {
    await store.addSpans([buildCallSpan(call.request, call.record, result, null)]);
  } catch (err) {
    throw new SpanNotRecorded(
      503,
      `the call's span could not be recorded (${(err as Error).message}); its result was withheld: retry the call`,
      'span_not_recorded',
    );
  }
}

/** A failed call is recorded when it can be (best effort: nothing was served). */
async function recordFailure(store: GatewayContext['store'], call: RoutedCall | null, message: string): Promise<void> {
  if (!call?.record) return;
  await store.addSpans([buildCallSpan(call.request, call.record, null, new Error(message))]).catch(() => {});
}

const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' };

/** Step 5, one call's answer on its response: JSON, or server-sent events from the first chunk; aborted when the client leaves. */
class CallAnswer {
  /** Whether the event stream started (its headers are sent: an error then goes in the stream). */
  private sse = false;
  readonly abort = new AbortController();

  constructor(private readonly res: Response) {
    res.on('close', () => {
      if (!res.writableFinished) this.abort.abort();
    });
  }

  chunk(chunk: Record<string, unknown>): void {
    const res = this.res;
    if (!this.sse) {
      res.writeHead(200, SSE_HEADERS);
      this.sse = true;
    }
    // Chunks that arrive together leave in one socket write (one syscall, not one per chunk).
    if (!res.writableCorked) {
      res.cork();
      process.nextTick(() => res.uncork());
    }
    res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  }

  served(streamed: boolean, result: CallResult): void {
    if (!streamed) this.res.json(result.response);
    else {
      if (!this.sse) this.res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
      this.res.end('data: [DONE]\n\n');
    }
  }

  failed(e: ReturnType<typeof errorOf>): void {
    if (this.sse) this.res.end(`data: ${JSON.stringify({ error: { message: e.message, type: 'server_error', code: e.code } })}\n\n`);
    else sendOpenAiError(this.res, e.status, e.message, e.code, e.param);
  }
}

/** Step 3: the backend serves the call, its chunks streamed to the answer as they come. */
function serve(backend: Backend, request: CallRequest, answer: CallAnswer): Promise<CallResult> {
  if (request.body.stream !== true) return backend.call(request, answer.abort.signal);
  return backend.stream(request, answer.abort.signal, (chunk) => answer.chunk(chunk));
}

export function gatewayRouter(ctx: GatewayContext): express.Router {
  const router = express.Router();
  const calls = new CallRouter(ctx);
  const upstream = new UpstreamBackend(ctx.allowedKeyEnvs);
  // Looked up per call: `agl serve` may load (or swap) the policy after the app was built.
  const local = new LocalBackend((model) => ctx.policies?.model(model) ?? null);
  const json = jsonBody('64mb');

  async function handle(route: GatewayRoute, req: Request, res: Response): Promise<void> {
    const startTime = Date.now();
    const kind: CallRequest['kind'] = route.body === ChatCompletionBody ? 'chat' : 'completion';
    const body = validBody(req, res, route.body);
    if (!body) return;
    const answer = new CallAnswer(res);
    let call: RoutedCall | null = null;
    try {
      call = await calls.route(kind, body, req, startTime);
      const result = await serve(call.request.resource.backend === 'upstream' ? upstream : local, call.request, answer);
      await recordSpan(ctx.store, call, result);
      answer.served(body.stream === true, result);
    } catch (err) {
      const e = errorOf(err);
      if (!(err instanceof SpanNotRecorded)) await recordFailure(ctx.store, call, e.message);
      answer.failed(e);
    }
  }

  async function models(req: Request, res: Response): Promise<void> {
    try {
      const resources = await calls.resourcesFor((await calls.attemptOf(req)).rollout);
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
  // The bare routes need the token; the per-attempt ones are reached by the ids in their path.
  const authFor = (path: string) => (!path.startsWith(PREFIX) && ctx.token ? requireToken(ctx.token) : pass);
  for (const route of Object.values(gatewayRoutes))
    router.post(route.path, authFor(route.path), ...json, (req: Request, res: Response) => handle(route, req, res));
  for (const prefix of ['', PREFIX]) router.get(`${prefix}/v1/models`, authFor(prefix), models);
  router.use(bodyRefused);
  return router;
}

/** Bodies refused by jsonBody (malformed JSON, not UTF-8, not application/json, too large): in the OpenAI error shape. */
function bodyRefused(err: unknown, req: Request, res: Response, next: (e?: unknown) => void): void {
  if (!/\/v1\/(chat\/completions|completions|models)$/.test(req.path)) return next(err);
  const e = err as { status?: number; message?: string };
  const status = err instanceof HttpProblem ? err.status : typeof e.status === 'number' && e.status >= 400 && e.status < 500 ? e.status : 400;
  const param = err instanceof HttpProblem ? (err.errors?.[0]?.path ?? null) : null;
  const code = status === 415 ? 'unsupported_media_type' : 'invalid_request_error';
  sendOpenAiError(res, status, `invalid request body: ${e.message ?? String(err)}`, code, param, err instanceof HttpProblem ? err.errors : undefined);
}

/** For tests and benchmarks: the backends a router built, to inspect batching. */
export { LocalBackend, UpstreamBackend };
