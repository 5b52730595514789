/**
 * What a store API route is on the server. Each route is declared once in protocol/routes.ts (method, path
 * under /v1/agl, body or query schema, response type); each routes-*.ts gives the handlers of its routes, keyed
 * by route name (RouteHandler: the work, from the parsed request to a Reply of the route's response type, and
 * the server-side `hot` flag). store-api.ts joins declarations and handlers into the one table (StoreRoute[])
 * that express registers and the hot path (hot-path.ts) matches, so the two always run the same validation,
 * store calls and answers.
 */
import type { BodyOf, ParamsOf, QueryOf, ResponseOf, RouteName } from '../../protocol/routes.js';

/** A route's answer as a status and a serialised JSON body (what both express and the hot path send), of type `T`. */
export interface Reply<T = unknown> {
  status: number;
  body: string;
  /** The type `body` serialises (type only). */
  readonly _t?: T;
}

/** The request a route's work sees as it arrived: the JSON body (undefined when none was sent), path params, query. */
export interface RouteRequest {
  body: unknown;
  params: Record<string, string>;
  query: unknown;
}

/** One entry of the table express registers and the hot path matches (store-api.ts builds it). */
export interface StoreRoute {
  /** The declared route (protocol/routes.ts) this entry serves. */
  name?: RouteName;
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

/** The request a route's handler sees: body and query parsed with the route's declared schemas, its path params. */
export interface ParsedRequest<K extends RouteName> {
  body: BodyOf<K>;
  params: ParamsOf<K>;
  query: QueryOf<K>;
}

/** The server side of one declared route. */
export interface RouteHandler<K extends RouteName> {
  /** Also answered by the hot path (see StoreRoute.hot). */
  hot?: boolean;
  /**
   * Parses the body itself instead of with the declared schema as a whole, for a body whose shape picks the
   * schema (one item or a batch) so errors name the field; it must use the declared schema's parts.
   */
  parseBody?: (body: unknown) => BodyOf<K>;
  handle(req: ParsedRequest<K>): Reply<ResponseOf<K>> | Promise<Reply<ResponseOf<K>>>;
}

/** Handlers for some declared routes, keyed by route name (what each routes-*.ts returns). */
export type RouteHandlers<K extends RouteName = RouteName> = { [N in K]: RouteHandler<N> };

/** `value` as a JSON reply. */
export const json = <T>(status: number, value: T): Reply<T> => ({ status, body: JSON.stringify(value) });
/** A reply whose body is already JSON text of type `T` (a store that hands rows over serialised). */
export const jsonText = <T>(status: number, body: string): Reply<T> => ({ status, body });
