/**
 * The store API's hottest routes, answered straight from node's http server beside express: the calls every
 * rollout makes (dequeue, span batches, finish) and the algorithm's waits and span reads.
 *   POST /v1/agl/queues/rollouts/dequeue          POST /v1/agl/spans          POST /v1/agl/spans/search
 *   POST /v1/agl/rollouts/:id/attempts/:aid/finish                            POST /v1/agl/waits/rollouts
 * They are the routes marked `hot` in the one route table (store-api.ts), so they run the very work express
 * runs for them (routes-*.ts: same validation, store calls and answers),
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
import { AUTHENTICATE_HEADER, bearerCheck } from './auth.js';
import { parseJsonBytes } from './body.js';
import type { ServerContext } from './server-context.js';
import { settle, toProblem } from './errors.js';
import type { StoreRoute } from './route.js';
import { storeRoutes } from './store-api.js';

/** A body limit in express.json's syntax ('16mb', '64kb', bytes), read by the same `bytes` package it uses. */
export function parseByteSize(size: string | number): number {
  const n = bytes.parse(size);
  if (n === null || !Number.isFinite(n)) throw new Error(`invalid size '${size}': use a number of bytes or e.g. 64kb, 16mb`);
  return n;
}

const JSON_TYPE = /^application\/json\s*(?:;\s*charset="?utf-8"?\s*)?$/i;

interface Match {
  route: StoreRoute;
  params: Record<string, string>;
}

/**
 * A matcher of POST paths (under API_PREFIX) over the route table, tried in the table's order as express tries
 * it: the first route whose pattern matches decides, and only a hot one is answered here (null otherwise, and
 * for a path that does not decode as express decodes params: express then answers).
 */
export function hotRouteMatcher(routes: StoreRoute[]): (path: string) => Match | null {
  for (const r of routes)
    if (r.hot && r.method !== 'POST') throw new Error(`${r.method} ${r.path}: only POST routes can be hot (the hot path reads a JSON body, never a query)`);
  const compiled = routes
    .filter((r) => r.method === 'POST')
    .map((route) => {
      const names: string[] = [];
      const source = route.path
        .split('/')
        .map((seg) => {
          if (!seg.startsWith(':')) return seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
          names.push(seg.slice(1));
          return '([^/]+)';
        })
        .join('/');
      return { route, re: new RegExp(`^${source}$`), names };
    });
  return (path) => {
    for (const { route, re, names } of compiled) {
      const m = re.exec(path);
      if (!m) continue;
      if (!route.hot) return null;
      try {
        return { route, params: Object.fromEntries(names.map((name, i) => [name, decodeURIComponent(m[i + 1]!)])) };
      } catch {
        return null;
      }
    }
    return null;
  };
}

/**
 * The server's request listener: hot routes here, everything else (and every unusual request) to `app`.
 * Used by listen() (app.ts), so `agl serve` and the training host both get it.
 */
export function withHotPath(ctx: ServerContext, app: RequestListener): RequestListener {
  const match = hotRouteMatcher(storeRoutes(ctx));
  const checkToken = bearerCheck(ctx.token);
  const limit = parseByteSize(ctx.bodyLimit);

  // Hot routes are all POST (hotRouteMatcher checks): anything else, or a query string, goes to express.
  const route = (req: IncomingMessage): Match | null => {
    const url = req.url!;
    if (req.method !== 'POST' || !url.startsWith(API_PREFIX + '/') || url.includes('?')) return null;
    return match(url.slice(API_PREFIX.length));
  };

  return (req, res) => {
    const found = route(req);
    const type = req.headers['content-type'];
    const length = Number(req.headers['content-length']);
    if (
      !found ||
      type === undefined ||
      !JSON_TYPE.test(type) ||
      req.headers['content-encoding'] !== undefined ||
      req.headers['content-length'] === undefined ||
      !(length <= limit)
    ) {
      app(req, res);
      return;
    }
    const start = process.hrtime.bigint();
    const label = `${found.route.method} ${API_PREFIX}${found.route.path}`;
    const send = (status: number, body: string, contentType: string, extra?: Record<string, string>) => {
      res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), ...extra });
      res.end(body);
      ctx.metrics.observe(label, status, Number(process.hrtime.bigint() - start) / 1e9);
    };
    const fail = (err: unknown) => {
      const problem = toProblem(err, req.url);
      if (problem.status >= 500) ctx.log(`POST ${req.url} failed: ${(err as Error)?.stack ?? err}`);
      if (res.headersSent) {
        res.destroy();
        return;
      }
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
    req.on('error', () => {
      /* the client went away mid-body: nothing was accepted, nothing to answer */
    });
    req.on('end', () => {
      // The error boundary: a throw anywhere in reading, validating or handling (sync or async) is answered.
      settle(() => found.route.handle({ body: parseJsonBytes(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)), params: found.params, query: {} }))
        .then((reply) => send(reply.status, reply.body, 'application/json; charset=utf-8'))
        .catch(fail)
        .catch((err: unknown) => {
          ctx.log(`POST ${req.url}: could not answer: ${(err as Error)?.stack ?? err}`);
          res.destroy();
        });
    });
  };
}
