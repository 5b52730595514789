/**
 * HTTP errors as application/problem+json (RFC 9457): { type, title, status, detail, errors[] }.
 * Route handlers throw HttpProblem (or let a store's NotFoundError / ConflictError / a ZodError escape);
 * problemHandler turns whatever was thrown into one problem response, so every router mounted on the
 * app (store API, gateway, OTLP) answers errors the same way.
 */
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { z } from 'zod';
import type { Problem, ProblemFieldError } from '../../protocol/api.js';
import { ConflictError, NotFoundError } from '../../protocol/lightning-store.js';

const TYPE_BASE = 'urn:agl:problem:';
const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export class HttpProblem extends Error {
  constructor(
    public readonly status: number,
    /** Short machine-readable kind, e.g. `validation`, `not-found`; becomes `urn:agl:problem:<kind>`. */
    public readonly kind: string,
    public readonly detail: string,
    public readonly errors?: ProblemFieldError[],
  ) {
    super(detail);
  }
}

export const notFound = (entity: string, id: string) => new HttpProblem(404, 'not-found', `${entity} '${id}' not found`);

/** Readable field path: `rollouts[2].config.maxAttempts`; `(body)` for the whole body. */
function formatPath(path: PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${String(p)}` : String(p);
  return out || '(body)';
}

/** A JSON value's type in words: `array`, `null`, `object`, `string`... */
function typeName(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
}

/** What one issue says in words a user can act on; type errors name what was expected and what came. */
function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type') {
    // zod 4 keeps the value only when asked (parseOr400 asks): absent means the field was missing.
    if (!('input' in issue) || issue.input === undefined || /nonoptional/.test(issue.message)) return 'is required';
    return `expected ${issue.expected}, received ${typeName(issue.input)}`;
  }
  if (issue.code === 'invalid_union' && 'input' in issue && issue.input !== undefined) return `${issue.message} (received ${typeName(issue.input)})`;
  return issue.message;
}

/** One line per issue, saying what is wrong in words a user can act on. */
export function zodIssues(error: z.ZodError, where: 'body' | 'query' = 'body'): ProblemFieldError[] {
  const out: ProblemFieldError[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ path: formatPath([...issue.path, key]), message: `unknown field '${key}' in ${where}` });
      continue;
    }
    out.push({ path: formatPath(issue.path), message: issueMessage(issue) });
  }
  return out;
}

/** The 400 for a body that is not a JSON object (an array, a number, a string, null; undefined: none was sent). */
export function bodyNotAnObject(value: unknown): HttpProblem {
  const got = value === undefined ? 'missing or not JSON' : `expected object, received ${typeName(value)}`;
  return new HttpProblem(400, 'validation', `invalid body: (body): ${got}: the request body must be a JSON object (send Content-Type: application/json)`, [
    { path: '(body)', message: got },
  ]);
}

/** Validates `value` with `schema` or throws a 400 problem naming every bad field. */
export function parseOr400<S extends z.ZodType>(schema: S, value: unknown, where: 'body' | 'query' = 'body'): z.output<S> {
  if (where === 'body' && (value === undefined || value === null || typeof value !== 'object' || Array.isArray(value))) throw bodyNotAnObject(value);
  // reportInput: type errors can then say what was received (zod 4 leaves the value out otherwise).
  const result = schema.safeParse(value, { reportInput: true });
  if (result.success) return result.data;
  const errors = zodIssues(result.error, where);
  const first = errors[0];
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
  throw new HttpProblem(400, 'validation', `invalid ${where}: ${first.path}: ${first.message}${more}`, errors);
}

/**
 * Runs a route's work so that a synchronous throw becomes a rejection like any other: the one error boundary
 * both express (express 5 catches rejections) and the hot path answer from (toProblem below).
 */
export function settle<T>(work: () => T | Promise<T>): Promise<T> {
  return new Promise<T>((resolve) => resolve(work()));
}

export function problemBody(status: number, kind: string, detail: string, errors?: ProblemFieldError[], instance?: string): Problem {
  const body: Problem = { type: TYPE_BASE + kind, title: TITLES[status] ?? 'Error', status, detail };
  if (instance) body.instance = instance;
  if (errors && errors.length) body.errors = errors;
  return body;
}

export function sendProblem(res: Parameters<RequestHandler>[1], problem: Problem): void {
  res.status(problem.status).type('application/problem+json').send(JSON.stringify(problem));
}

/** Maps anything thrown in a route to a problem. Unknown errors are 500 and logged (their message is kept: the daemon is local). */
export function toProblem(err: unknown, instance?: string): Problem {
  if (err instanceof HttpProblem) return problemBody(err.status, err.kind, err.detail, err.errors, instance);
  if (err instanceof NotFoundError || (err as Error)?.name === 'NotFoundError')
    return problemBody(404, 'not-found', (err as Error).message, undefined, instance);
  if (err instanceof ConflictError || (err as Error)?.name === 'ConflictError')
    return problemBody(409, 'conflict', (err as Error).message, undefined, instance);
  if (err instanceof z.ZodError) {
    const errors = zodIssues(err);
    return problemBody(400, 'validation', `invalid request: ${errors[0]?.path}: ${errors[0]?.message}`, errors, instance);
  }
  // body-parser errors carry `type` and `status`.
  const e = err as { type?: string; status?: number; statusCode?: number; message?: string; limit?: number; length?: number };
  if (e?.type === 'entity.parse.failed') {
    return problemBody(400, 'malformed-json', `request body is not valid JSON: ${e.message}`, [{ path: '(body)', message: 'malformed JSON' }], instance);
  }
  if (e?.type === 'entity.too.large') {
    return problemBody(
      413,
      'too-large',
      `request body of ${e.length} bytes exceeds the limit of ${e.limit} bytes; send smaller batches`,
      [{ path: '(body)', message: 'too large' }],
      instance,
    );
  }
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported')
    return problemBody(415, 'unsupported-encoding', e.message ?? 'unsupported encoding', undefined, instance);
  const status = e?.status ?? e?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) return problemBody(status, 'client-error', e.message ?? 'bad request', undefined, instance);
  return problemBody(500, 'internal', `internal error: ${(err as Error)?.message ?? String(err)}`, undefined, instance);
}

export function problemHandler(log: (msg: string) => void): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const problem = toProblem(err, req.originalUrl);
    if (problem.status >= 500) log(`${req.method} ${req.originalUrl} failed: ${(err as Error)?.stack ?? err}`);
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendProblem(res, problem);
  };
}

/** The last handler: an unknown path is a 404 problem that names it. */
export const unknownRoute: RequestHandler = (req, res) => {
  sendProblem(res, problemBody(404, 'unknown-route', `no route ${req.method} ${req.path}`, undefined, req.originalUrl));
};
