/**
 * Store API handlers for spans (routes declared in protocol/routes.ts):
 *   addSpans      POST /spans: one span or { spans: [...] }; answered once durable, with each span's sequence id
 *   listSpans     GET /spans?rolloutId=&attemptId=(id|latest)&name=&afterSequenceId=&limit=  (tail with afterSequenceId)
 *   searchSpans   POST /spans/search: the same query as a JSON body
 * This is the hottest write path (benchmarks push thousands of spans/s): validate, write, acknowledge, nothing else.
 * addSpans and searchSpans are marked hot (hot-path.ts).
 */
import type { Span } from '../../protocol/store.js';
import type { SpanQuery } from '../../protocol/lightning-store.js';
import type { SpanList } from '../../protocol/api.js';
import type { ServerContext } from './server-context.js';
import { json, jsonText, type Reply, type RouteHandlers } from './route.js';
import { parseSpanBody } from './span-input.js';

const ack = (s: Span) => ({ rolloutId: s.rolloutId, attemptId: s.attemptId, spanId: s.spanId, traceId: s.traceId, sequenceId: s.sequenceId });

export function spanRoutes(ctx: ServerContext) {
  const { store } = ctx;
  // Spans are stored as JSON: when the store can hand them over serialised, skip parse + re-stringify
  // (about 0.9 ms per 100 KB, ~15% of daemon CPU per rollout in bench:store).
  const spansReply = async (query: SpanQuery): Promise<Reply<SpanList>> =>
    store.querySpansJson ? jsonText(200, `{"items":${await store.querySpansJson(query)}}`) : json(200, { items: await store.querySpans(query) });
  return {
    addSpans: {
      hot: true,
      // The one check of a span's shape (span-input.ts: a fast path, else the declared schema's parts).
      parseBody: (body) => ({ spans: parseSpanBody(body) }),
      async handle({ body }) {
        const spans = await store.addSpans('spans' in body ? body.spans : [body]);
        return json(201, { count: spans.length, spans: spans.map(ack) });
      },
    },
    listSpans: { handle: ({ query }) => spansReply(query) },
    searchSpans: { hot: true, handle: ({ body }) => spansReply(body) },
  } satisfies Partial<RouteHandlers>;
}
