/**
 * What a store API route is: declared once (method, path pattern under /v1/agl, whether the hot path serves
 * it too) with its work as a function from the parsed request to a Reply. store-api.ts gathers every
 * routes-*.ts list into the one table that express registers and the hot path (hot-path.ts) matches, so the
 * two always run the same validation, store calls and answers.
 */

/** A route's answer as a status and a serialised JSON body (what both express and the hot path send). */
export interface Reply {
  status: number;
  body: string;
}

/** The parsed request a route's work sees: the JSON body (undefined when none was sent), path params, query. */
export interface RouteRequest {
  body: unknown;
  params: Record<string, string>;
  query: unknown;
}

export interface StoreRoute {
  method: 'GET' | 'POST';
  /** Express path syntax, relative to /v1/agl (`/rollouts/:id/attempts/:aid/finish`); also the /metrics label. */
  path: string;
  /**
   * Also answered by the hot path beside express (POST routes every rollout or wait makes: hot-path.ts).
   * Only POST routes (hotRouteMatcher refuses others): the hot path reads a JSON body and never a query.
   */
  hot?: boolean;
  handle(req: RouteRequest): Reply | Promise<Reply>;
}

/** `value` as a JSON reply. */
export const json = (status: number, value: unknown): Reply => ({ status, body: JSON.stringify(value) });
