/**
 * OTLP/HTTP trace receiver: POST /v1/traces with `application/x-protobuf` or `application/json`
 * (optionally gzip-encoded), as the OTLP spec defines, so any OpenTelemetry SDK exports an agent's
 * spans straight into the store. Spans are durable before the 200 answer. Spans that name no
 * rollout/attempt (attributes, resource attributes or x-agl-* headers), or an unknown rollout, are
 * rejected through OTLP's partial_success rather than failing the whole export; so are spans that are not
 * OTLP spans (otlp-validate.ts). An export whose envelope is not OTLP, or that is not UTF-8 (JSON bodies and
 * protobuf strings alike), is refused with 400 naming the field; a content type other than protobuf or JSON
 * with 415.
 * Its body rule is OTLP's, not the store API's: an unknown field is ignored (OTLP/JSON receivers must ignore
 * fields they do not know, so newer exporters keep working), a wrong-typed or non-object envelope is refused.
 */
import express, { type Request, type Response } from 'express';
import { HEADERS } from '../../protocol/spans.js';
import type { SpanInput } from '../../protocol/store.js';
import { NotFoundError, type LightningStore } from '../../protocol/lightning-store.js';
import protobuf from 'protobufjs';
import { requireToken } from './auth.js';
import { decodeUtf8 } from './body.js';
import { problemBody } from './errors.js';
import { convertOtlp } from './otlp-convert.js';
import { ExportTraceServiceRequest, ExportTraceServiceResponse, RpcStatus } from './otlp-proto.js';
import { checkEnvelope, OtlpShapeError } from './otlp-validate.js';

export interface OtlpContext {
  store: Pick<LightningStore, 'addSpans' | 'getRollout' | 'getAttempt'>;
  token?: string;
  /** Largest accepted request body (express/bytes syntax). */
  bodyLimit?: string;
}

const STORE_BATCH = 5_000;

/** A protobuf reader whose string fields must be UTF-8 (protobufjs' own reader turns bad bytes into U+FFFD). */
class StrictUtf8Reader extends protobuf.Reader {
  override string(): string {
    return decodeUtf8(this.bytes(), 'a protobuf string field');
  }
}

function isProtobuf(req: Request): boolean {
  return /application\/(x-)?protobuf/i.test(req.get('content-type') ?? '');
}

function reply(req: Request, res: Response, status: number, rejected: number, message: string, path = '(body)'): void {
  if (isProtobuf(req)) {
    const body =
      status === 200
        ? ExportTraceServiceResponse.encode(
            ExportTraceServiceResponse.create(rejected ? { partialSuccess: { rejectedSpans: rejected, errorMessage: message } } : {}),
          ).finish()
        : RpcStatus.encode(RpcStatus.create({ code: status === 400 ? 3 : 13, message })).finish();
    res.status(status).type('application/x-protobuf').send(Buffer.from(body));
  } else if (status === 200) {
    res.status(200).json(rejected ? { partialSuccess: { rejectedSpans: rejected, errorMessage: message } } : {});
  } else {
    // A problem (errors.ts) that also carries google.rpc.Status' code and message, as OTLP/JSON clients read them.
    const kind = status === 415 ? 'unsupported-media-type' : status === 413 ? 'too-large' : status < 500 ? 'invalid-otlp' : 'internal';
    res
      .status(status)
      .type('application/problem+json')
      .send(JSON.stringify({ ...problemBody(status, kind, message, [{ path, message }], req.originalUrl), code: status < 500 ? 3 : 13, message }));
  }
}

/** Writes spans; when a rollout or attempt is unknown, stores the others and counts those as rejected. */
async function store(ctx: OtlpContext, spans: SpanInput[]): Promise<{ rejected: number; reasons: string[] }> {
  try {
    for (let i = 0; i < spans.length; i += STORE_BATCH) await ctx.store.addSpans(spans.slice(i, i + STORE_BATCH));
    return { rejected: 0, reasons: [] };
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
  }
  // Rare path (a batch naming an unknown rollout or attempt): find which pairs exist, keep their spans.
  const known = new Map<string, boolean>();
  const reasons = new Set<string>();
  for (const s of spans) {
    const key = `${s.rolloutId}\n${s.attemptId}`;
    if (known.has(key)) continue;
    const attempt = await ctx.store.getAttempt(s.attemptId);
    const ok = attempt?.rolloutId === s.rolloutId;
    known.set(key, ok);
    if (!ok)
      reasons.add(
        (await ctx.store.getRollout(s.rolloutId)) ? `unknown attempt '${s.attemptId}' of rollout '${s.rolloutId}'` : `unknown rollout '${s.rolloutId}'`,
      );
  }
  const kept = spans.filter((s) => known.get(`${s.rolloutId}\n${s.attemptId}`));
  for (let i = 0; i < kept.length; i += STORE_BATCH) await ctx.store.addSpans(kept.slice(i, i + STORE_BATCH));
  return { rejected: spans.length - kept.length, reasons: [...reasons].slice(0, 5) };
}

export function otlpRouter(ctx: OtlpContext): express.Router {
  const router = express.Router();
  const raw = express.raw({ type: () => true, limit: ctx.bodyLimit ?? '64mb' }); // inflates gzip/deflate itself
  const auth: express.RequestHandler = ctx.token ? requireToken(ctx.token) : (_q, _s, next) => next();
  router.post('/v1/traces', auth, raw, async (req: Request, res: Response) => {
    const body = req.body as Buffer | undefined;
    let decoded: unknown;
    try {
      if (!isProtobuf(req) && !/^application\/json\s*(;|$)/i.test(req.get('content-type') ?? '')) {
        return reply(req, res, 415, 0, `unsupported Content-Type '${req.get('content-type') ?? ''}': send application/x-protobuf or application/json`);
      }
      if (!Buffer.isBuffer(body) || body.length === 0) decoded = {};
      else if (isProtobuf(req)) decoded = ExportTraceServiceRequest.decode(new StrictUtf8Reader(body));
      else decoded = JSON.parse(decodeUtf8(body).replace(/^\ufeff/, ''));
      checkEnvelope(decoded);
    } catch (err) {
      const why = err instanceof OtlpShapeError ? 'is not an OTLP trace export' : 'could not be decoded';
      return reply(req, res, 400, 0, `the export ${why}: ${(err as Error).message}`, err instanceof OtlpShapeError ? err.path : undefined);
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
    reply(req, res, status === 413 || status === 415 ? status : 400, 0, `invalid OTLP request: ${(err as Error).message}`);
  });
  return router;
}
