/**
 * OTLP/HTTP trace receiver: POST /v1/traces with `application/x-protobuf` or `application/json`
 * (optionally gzip-encoded), as the OTLP spec defines, so any OpenTelemetry SDK exports an agent's
 * spans straight into the store. Spans are durable before the 200 answer. Spans that name no
 * rollout/attempt (attributes, resource attributes or x-agl-* headers), or an unknown rollout, are
 * rejected through OTLP's partial_success rather than failing the whole export.
 */
import express, { type Request, type Response } from 'express';
import { HEADERS } from '../../protocol/spans.js';
import type { SpanInput } from '../../protocol/store.js';
import { NotFoundError, type LightningStore } from '../store/types.js';
import { requireToken } from './auth.js';
import { convertOtlp } from './otlp-convert.js';
import { ExportTraceServiceRequest, ExportTraceServiceResponse, RpcStatus } from './otlp-proto.js';

export interface OtlpContext {
  store: Pick<LightningStore, 'addSpans' | 'getRollout'>;
  token?: string;
  /** Largest accepted request body (express/bytes syntax). */
  bodyLimit?: string;
}

const STORE_BATCH = 5_000;

function isProtobuf(req: Request): boolean {
  return /application\/(x-)?protobuf/i.test(req.get('content-type') ?? '');
}

function reply(req: Request, res: Response, status: number, rejected: number, message: string): void {
  if (isProtobuf(req)) {
    const body = status === 200
      ? ExportTraceServiceResponse.encode(ExportTraceServiceResponse.create(rejected ? { partialSuccess: { rejectedSpans: rejected, errorMessage: message } } : {})).finish()
      : RpcStatus.encode(RpcStatus.create({ code: status === 400 ? 3 : 13, message })).finish();
    res.status(status).type('application/x-protobuf').send(Buffer.from(body));
  } else if (status === 200) {
    res.status(200).json(rejected ? { partialSuccess: { rejectedSpans: rejected, errorMessage: message } } : {});
  } else {
    res.status(status).type('application/problem+json').send(JSON.stringify({ type: 'about:blank', title: 'invalid OTLP export', status, detail: message, code: status === 400 ? 3 : 13, message }));
  }
}

/** Writes spans; when a rollout is unknown, stores the others and counts those as rejected. */
async function store(ctx: OtlpContext, spans: SpanInput[]): Promise<{ rejected: number; reasons: string[] }> {
  try {
    for (let i = 0; i < spans.length; i += STORE_BATCH) await ctx.store.addSpans(spans.slice(i, i + STORE_BATCH));
    return { rejected: 0, reasons: [] };
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
  }
  // Rare path (a batch whose rollout is unknown): find which rollouts exist, keep their spans.
  const known = new Map<string, boolean>();
  for (const id of new Set(spans.map((s) => s.rolloutId))) known.set(id, (await ctx.store.getRollout(id)) !== null);
  const kept = spans.filter((s) => known.get(s.rolloutId));
  const unknown = [...known].filter(([, ok]) => !ok).map(([id]) => id);
  for (let i = 0; i < kept.length; i += STORE_BATCH) await ctx.store.addSpans(kept.slice(i, i + STORE_BATCH));
  return { rejected: spans.length - kept.length, reasons: [`unknown rollout(s): ${unknown.slice(0, 5).join(', ')}`] };
}

export function otlpRouter(ctx: OtlpContext): express.Router {
  const router = express.Router();
  const raw = express.raw({ type: () => true, limit: ctx.bodyLimit ?? '64mb' }); // inflates gzip/deflate itself
  const auth: express.RequestHandler = ctx.token ? requireToken(ctx.token) : (_q, _s, next) => next();
  router.post('/v1/traces', auth, raw, async (req: Request, res: Response) => {
    const body = req.body as Buffer | undefined;
    let decoded: unknown;
    try {
      if (!Buffer.isBuffer(body) || body.length === 0) decoded = {};
      else if (isProtobuf(req)) decoded = ExportTraceServiceRequest.decode(body);
      else if (/json/i.test(req.get('content-type') ?? '')) decoded = JSON.parse(body.toString('utf8'));
      else return reply(req, res, 415 as never, 0, `unsupported Content-Type '${req.get('content-type') ?? ''}': send application/x-protobuf or application/json`);
    } catch (err) {
      return reply(req, res, 400, 0, `could not decode the OTLP export: ${(err as Error).message}`);
    }
    try {
      const converted = convertOtlp(decoded, { rolloutId: req.get(HEADERS.rolloutId), attemptId: req.get(HEADERS.attemptId) });
      const stored = converted.spans.length ? await store(ctx, converted.spans) : { rejected: 0, reasons: [] };
      const rejected = converted.rejected + stored.rejected;
      reply(req, res, 200, rejected, [...converted.reasons, ...stored.reasons].join('; '));
    } catch (err) {
      reply(req, res, 500, 0, `could not store the spans: ${(err as Error).message}`);
    }
  });
  router.use('/v1/traces', (err: unknown, req: Request, res: Response, _next: (e?: unknown) => void) => {
    const status = (err as { status?: number }).status ?? 400;
    reply(req, res, status === 413 ? 413 as never : 400, 0, `invalid OTLP request: ${(err as Error).message}`);
  });
  return router;
}
