/**
 * The store API's hottest routes, answered straight from node's http server beside express: the calls every
 * rollout makes (dequeue, span batches, finish) and the algorithm's waits and span reads.
 *   POST /v1/agl/queues/rollouts/dequeue          POST /v1/agl/spans          POST /v1/agl/spans/search
 *   POST /v1/agl/rollouts/:id/attempts/:aid/finish                            POST /v1/agl/waits/rollouts
 * They run the same handlers as the express routes (routes-*.ts: same validation, store calls and answers),
 * read bodies with the same reader (body.ts: strict UTF-8, strict JSON), answer errors with the same
 * problem+json (token first, malformed JSON, field errors, 404/409, 500 logged) from inside one error
 * boundary (errors.ts settle: a synchronous throw is answered like a rejection), and count in /metrics under
 * the same route labels. What they skip is express's per-request
 * machinery (router walk over every layer, body-parser's type/charset/inflate checks, response helpers):
 * about 80 us of daemon CPU per request, a fifth of the daemon's CPU per rollout in bench:store longqueue.
 *
 * Anything unusual goes to express unchanged, which then answers it as before: another method or path, a
 * query string, a content type other than application/json (utf-8), a content encoding, a body without a
 * Content-Length (chunked) or one over the body limit (express sends the 413).
 */
import type { IncomingMessage, RequestListener } from 'node:http';
import bytes from 'bytes';
import { API_PREFIX } from '../../protocol/api.js';
import type { ServerContext } from './app.js';
import { AUTHENTICATE_HEADER, bearerCheck } from './auth.js';
import { parseJsonBytes } from './body.js';
import { settle, toProblem, type Reply } from './errors.js';
import { rolloutHandlers } from './routes-rollouts.js';
import { spanHandlers } from './routes-spans.js';

/** A hot route's work; its /metrics label is its path pattern under API_PREFIX, as express labels it. */
interface HotRoute { label: string; handle: (body: unknown, params: string[]) => Promise<Reply> }

/** A body limit in express.json's syntax ('16mb', '64kb', bytes), read by the same `bytes` package it uses. */
export function parseByteSize(size: string | number): number {
  const n = bytes.parse(size);
  if (n === null || !Number.isFinite(n)) throw new Error(`invalid size '${size}': use a number of bytes or e.g. 64kb, 16mb`);
  return n;
}

const JSON_TYPE = /^application\/json\s*(?:;\s*charset="?utf-8"?\s*)?$/i;
const FINISH = /^\/rollouts\/([^/]+)\/attempts\/([^/]+)\/finish$/;

/**
 * The server's request listener: hot routes here, everything else (and every unusual request) to `app`.
 * Used by listen() (app.ts), so `agl serve` and the training host both get it.
 */
export function withHotPath(ctx: ServerContext, app: RequestListener): RequestListener {
  const spans = spanHandlers(ctx);
  const rollouts = rolloutHandlers(ctx);
  const exact = new Map<string, HotRoute>(([
    ['/queues/rollouts/dequeue', rollouts.dequeue], ['/spans', spans.add], ['/spans/search', spans.search], ['/waits/rollouts', rollouts.wait],
  ] as const).map(([path, handle]) => [path, { label: path, handle: (b: unknown) => handle(b) }]));
  const finish: HotRoute = { label: '/rollouts/:id/attempts/:aid/finish', handle: (b, [id, aid]) => rollouts.finish(id!, aid!, b) };
  const checkToken = bearerCheck(ctx.token);
  const limit = parseByteSize(ctx.bodyLimit);

  const route = (req: IncomingMessage): { route: HotRoute; params: string[] } | null => {
    const url = req.url!;
    if (req.method !== 'POST' || !url.startsWith(API_PREFIX + '/') || url.includes('?')) return null;
    const path = url.slice(API_PREFIX.length);
    const hit = exact.get(path);
    if (hit) return { route: hit, params: [] };
    const m = FINISH.exec(path);
    if (!m) return null;
    try { return { route: finish, params: [decodeURIComponent(m[1]!), decodeURIComponent(m[2]!)] }; } catch { return null; }
  };

  return (req, res) => {
    const found = route(req);
    const type = req.headers['content-type'];
    const length = Number(req.headers['content-length']);
    if (!found || type === undefined || !JSON_TYPE.test(type) || req.headers['content-encoding'] !== undefined
      || req.headers['content-length'] === undefined || !(length <= limit)) {
      app(req, res);
      return;
    }
    const start = process.hrtime.bigint();
    const label = `POST ${API_PREFIX}${found.route.label}`;
    const send = (status: number, body: string, contentType: string, extra?: Record<string, string>) => {
      res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), ...extra });
      res.end(body);
      ctx.metrics.observe(label, status, Number(process.hrtime.bigint() - start) / 1e9);
    };
    const fail = (err: unknown) => {
      const problem = toProblem(err, req.url);
      if (problem.status >= 500) ctx.log(`POST ${req.url} failed: ${(err as Error)?.stack ?? err}`);
      if (res.headersSent) { res.destroy(); return; }
      send(problem.status, JSON.stringify(problem), 'application/problem+json; charset=utf-8');
    };

    const unauthorized = checkToken(req.headers.authorization, req.url!);
    if (unauthorized) {
      req.resume(); // drain what was sent; the answer does not depend on it
      send(401, JSON.stringify(unauthorized), 'application/problem+json; charset=utf-8', { 'www-authenticate': AUTHENTICATE_HEADER });
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', () => { /* the client went away mid-body: nothing was accepted, nothing to answer */ });
    req.on('end', () => {
      // The error boundary: a throw anywhere in reading, validating or handling (sync or async) is answered.
      settle(() => found.route.handle(parseJsonBytes(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)), found.params))
        .then((reply) => send(reply.status, reply.body, 'application/json; charset=utf-8'))
        .catch(fail)
        .catch((err: unknown) => { ctx.log(`POST ${req.url}: could not answer: ${(err as Error)?.stack ?? err}`); res.destroy(); });
    });
  };
}
