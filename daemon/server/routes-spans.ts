/**
 * Store API routes for spans (mounted under /v1/agl):
 *   POST /spans          one span or { spans: [...] }; answered once durable, with each span's sequence id
 *   GET  /spans          ?rolloutId=&attemptId=(id|latest)&name=&afterSequenceId=&limit=  (tail with afterSequenceId)
 *   POST /spans/search   the same query as a JSON body
 * This is the hottest write path (benchmarks push thousands of spans/s): validate, write, acknowledge, nothing else.
 * Declared once for the route table (store-api.ts); POST /spans and /spans/search are marked hot (hot-path.ts).
 */
import { SpanListQuery, SpanSearchRequest } from '../../protocol/api.js';
import type { Span } from '../../protocol/store.js';
import type { SpanQuery } from '../../protocol/lightning-store.js';
import type { ServerContext } from './server-context.js';
import { parseOr400 } from './errors.js';
import type { Reply, StoreRoute } from './route.js';
import { parseSpanBody } from './span-input.js';

const ack = (s: Span) => ({ rolloutId: s.rolloutId, attemptId: s.attemptId, spanId: s.spanId, traceId: s.traceId, sequenceId: s.sequenceId });

export function spanRoutes(ctx: ServerContext): StoreRoute[] {
  const { store } = ctx;
  // Spans are stored as JSON: when the store can hand them over serialised, skip parse + re-stringify
  // (about 0.9 ms per 100 KB, ~15% of daemon CPU per rollout in bench:store).
  const spansReply = async (query: SpanQuery): Promise<Reply> => ({
    status: 200,
    body: store.querySpansJson ? `{"items":${await store.querySpansJson(query)}}` : JSON.stringify({ items: await store.querySpans(query) }),
  });
  return [
    {
      method: 'POST',
      path: '/spans',
      hot: true,
      async handle({ body }) {
        const spans = await store.addSpans(parseSpanBody(body)); // the one check of a span's shape (span-input.ts)
        return { status: 201, body: JSON.stringify({ count: spans.length, spans: spans.map(ack) }) };
      },
    },
    { method: 'GET', path: '/spans', handle: ({ query }) => spansReply(parseOr400(SpanListQuery, query, 'query')) },
    { method: 'POST', path: '/spans/search', hot: true, handle: ({ body }) => spansReply(parseOr400(SpanSearchRequest, body)) },
  ];
}
