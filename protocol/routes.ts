/**
 * Every route of the daemon's store API (`/v1/agl/...`), declared once and imported by both sides: its method,
 * its path (express syntax, relative to API_PREFIX), the zod schema of its JSON body (POST) or query string (GET)
 * from api.ts, and the type it answers with (a phantom: nothing is checked at run time). The server
 * (daemon/server/store-api.ts) registers exactly these routes and validates each request with its schema before
 * the route's handler runs; the client (client/client.ts) builds each call from the same declaration. A route
 * declared here without a server handler or a client method does not compile, nor does a handler for a route
 * not declared here.
 *
 * Every route refuses what it does not declare, before its handler runs (so nothing is written): a body that
 * is not its schema's shape (not an object, an unknown key, a wrong-typed field), and any body but none or `{}`
 * on a route that takes none (GET routes, POST routes with `body: null`); 400 naming the field
 * (test/server/declared-bodies.test.ts walks this table).
 * Every route needs `Authorization: Bearer <token>`; errors are application/problem+json (api.ts Problem).
 * Routes that create something answer 201 (enqueue, start, spans, resources, training runs, metrics, transitions,
 * prompt candidates, optimizer calls, promotions), the others 200. The order is the order the server tries them in: a literal path comes before a `:param` path
 * that would match it (`/rollouts/search` before `/rollouts/:id`; test/server/routes.test.ts checks).
 * Not store routes: `GET /health` (no token) and `GET /metrics` outside the prefix, the served policy's
 * `/policy` routes (daemon/server/routes-policy.ts, mounted by `agl serve --model` only), and the event stream
 * `GET /v1/agl/events` (server-sent events, not JSON: declared in protocol/events.ts, served by daemon/server/events.ts).
 * Those GET routes never read a body (no body reader runs for them), so nothing sent in one reaches a handler;
 * `POST /policy/load` takes api.ts PolicyLoadRequest (strict). Below the store routes: the gateway's
 * OpenAI-compatible calls (gatewayRoutes), whose bodies follow OpenAI's rules.
 */
import type { z } from 'zod';
import type { AgentHeadline } from './agent-headline.js';
import { ChatCompletionBody, CompletionBody } from './api-gateway.js';
import {
  AddMetricsRequest,
  AddResourcesRequest,
  AddSpansRequest,
  AddTransitionsRequest,
  CreateTrainingRunRequest,
  DequeueRequest,
  EnqueueRequest,
  FinishAttemptRequest,
  GroupQueryRequest,
  HeadlineQuery,
  HealthCheckRequest,
  MetricsQuery,
  ResourcesListQuery,
  RolloutListQuery,
  RolloutSearchRequest,
  RolloutViewRequest,
  RolloutsViewRequest,
  SpanListQuery,
  SpanSearchRequest,
  StartRolloutRequest,
  TrainingRunListQuery,
  TransitionListQuery,
  UpdateRolloutRequest,
  UpdateTrainingRunRequest,
  WaitRolloutsRequest,
  WorkerHeartbeatRequest,
  type AddSpansResponse,
  type AgentList,
  type AttemptList,
  type Claim,
  type CountResponse,
  type DequeueResponse,
  type EnqueueResponse,
  type FinishAttemptResponse,
  type HealthCheckResult,
  type MetricList,
  type ResourcesList,
  type RolloutList,
  type RolloutPage,
  type SpanList,
  type TrainingRunList,
  type TransitionList,
  type WorkerList,
} from './api.js';
import {
  AddOptimizerCallRequest,
  AddPromptCandidateRequest,
  ClearPromotedPromptRequest,
  DecideCandidateRequest,
  OptimizationViewQuery,
  OptimizerCallListQuery,
  PromotePromptRequest,
  PromotedPromptListQuery,
  PromptCandidateListQuery,
  PromptPromotionsQuery,
  type ClearPromotedPromptResponse,
  type OptimizerCallList,
  type PromotedPromptList,
  type PromptCandidateList,
  type PromptPromotionList,
} from './api-prompts.js';
import type { OptimizerCall, PromotedPrompt, PromptCandidate } from './prompts.js';
import type { Attempt, Resources, Rollout, Statistics, TrainingRun, Worker } from './store.js';
import type { OptimizationView } from './webview-optimize.js';
import type { GroupPage, RolloutDetail, RolloutPage as RolloutListPage } from './webview-trajectory.js';

/** The type a route answers with, carried by the declaration's type alone (its value is an empty marker). */
export interface Returns<T> {
  readonly _r?: T;
}
const MARKER: Returns<never> = Object.freeze({});
const returns = <T>(): Returns<T> => MARKER;

/** A GET route: path params and a query string, no body (one sent is refused unless empty: api.ts NoBody). */
export interface GetRoute {
  readonly method: 'GET';
  readonly path: string;
  /** The query string's schema (strings in, typed values out); none: the query is ignored. */
  readonly query?: z.ZodType;
  readonly response: Returns<unknown>;
}
/** A POST route: path params and a JSON body, no query. */
export interface PostRoute {
  readonly method: 'POST';
  readonly path: string;
  /**
   * The body's schema (a store route's is strict: an unknown key is refused by name), or null for a route that
   * takes no body: then only none or `{}` is accepted (api.ts NoBody). Required, so a new POST route cannot leave
   * its body unchecked.
   */
  readonly body: z.ZodType | null;
  /** A request without any body counts as `{}` (the body stays checked when one is sent). */
  readonly optionalBody?: true;
  readonly response: Returns<unknown>;
}
export type RouteDecl = GetRoute | PostRoute;

export const routes = {
  // --- spans (the hottest writes and reads) ---
  /** One span or `{spans}` (one durable commit): 201, each span's ids and sequence id. */
  addSpans: { method: 'POST', path: '/spans', body: AddSpansRequest, response: returns<AddSpansResponse>() },
  /** `?rolloutId&attemptId(|latest)&name&afterSequenceId&limit` (tail with afterSequenceId). */
  listSpans: { method: 'GET', path: '/spans', query: SpanListQuery, response: returns<SpanList>() },
  searchSpans: { method: 'POST', path: '/spans/search', body: SpanSearchRequest, response: returns<SpanList>() },

  // --- rollouts, the queue, attempts, waits ---
  /** One rollout or `{rollouts}`: 201. */
  enqueueRollouts: { method: 'POST', path: '/queues/rollouts/enqueue', body: EnqueueRequest, response: returns<EnqueueResponse>() },
  /** Claims for a worker (`{claims: []}` when none are queued). */
  dequeueRollouts: { method: 'POST', path: '/queues/rollouts/dequeue', body: DequeueRequest, response: returns<DequeueResponse>() },
  /** A rollout and its first attempt at once (a direct run, not through the queue): 201. */
  startRollout: { method: 'POST', path: '/rollouts', body: StartRolloutRequest, response: returns<Claim>() },
  /** Filters, sort and paging as a query string (lists as `status=a,b`). */
  listRollouts: { method: 'GET', path: '/rollouts', query: RolloutListQuery, response: returns<RolloutPage>() },
  searchRollouts: { method: 'POST', path: '/rollouts/search', body: RolloutSearchRequest, response: returns<RolloutPage>() },
  getRollout: { method: 'GET', path: '/rollouts/:id', response: returns<Rollout>() },
  /** Merges keys into the rollout's metadata. */
  updateRollout: { method: 'POST', path: '/rollouts/:id', body: UpdateRolloutRequest, response: returns<Rollout>() },
  cancelRollout: { method: 'POST', path: '/rollouts/:id/cancel', body: null, response: returns<Rollout>() },
  listAttempts: { method: 'GET', path: '/rollouts/:id/attempts', response: returns<AttemptList>() },
  getLatestAttempt: { method: 'GET', path: '/rollouts/:id/attempts/latest', response: returns<Attempt>() },
  // An attempt within its rollout (checked to belong to it), or by its id alone (the store's own signatures).
  getRolloutAttempt: { method: 'GET', path: '/rollouts/:id/attempts/:aid', response: returns<Attempt>() },
  heartbeatRolloutAttempt: { method: 'POST', path: '/rollouts/:id/attempts/:aid/heartbeat', body: null, response: returns<Attempt>() },
  finishRolloutAttempt: { method: 'POST', path: '/rollouts/:id/attempts/:aid/finish', body: FinishAttemptRequest, response: returns<FinishAttemptResponse>() },
  getAttempt: { method: 'GET', path: '/attempts/:aid', response: returns<Attempt>() },
  heartbeatAttempt: { method: 'POST', path: '/attempts/:aid/heartbeat', body: null, response: returns<Attempt>() },
  finishAttempt: { method: 'POST', path: '/attempts/:aid/finish', body: FinishAttemptRequest, response: returns<FinishAttemptResponse>() },
  /** Long-polls until the rollouts have ended or the timeout: those ended. */
  waitRollouts: { method: 'POST', path: '/waits/rollouts', body: WaitRolloutsRequest, response: returns<RolloutList>() },
  /** The store's health check now, on the daemon's clock (timeouts, unresponsive attempts, retries). */
  runHealthCheck: { method: 'POST', path: '/health-checks', body: HealthCheckRequest, optionalBody: true, response: returns<HealthCheckResult>() },

  // --- resources, workers, agents, statistics ---
  /** 201. */
  addResources: { method: 'POST', path: '/resources', body: AddResourcesRequest, response: returns<Resources>() },
  listResources: { method: 'GET', path: '/resources', query: ResourcesListQuery, response: returns<ResourcesList>() },
  getLatestResources: { method: 'GET', path: '/resources/latest', response: returns<Resources>() },
  getResources: { method: 'GET', path: '/resources/:id', response: returns<Resources>() },
  listWorkers: { method: 'GET', path: '/workers', response: returns<WorkerList>() },
  getWorker: { method: 'GET', path: '/workers/:id', response: returns<Worker>() },
  heartbeatWorker: { method: 'POST', path: '/workers/:id/heartbeat', body: WorkerHeartbeatRequest, optionalBody: true, response: returns<Worker>() },
  /** Agents seen in enqueued rollouts. */
  listAgents: { method: 'GET', path: '/agents', response: returns<AgentList>() },
  getStatistics: { method: 'GET', path: '/statistics', response: returns<Statistics>() },

  // --- runs (training, optimization, evaluation), their metrics, the transitions the algorithm used ---
  /** 201. */
  createTrainingRun: { method: 'POST', path: '/training-runs', body: CreateTrainingRunRequest, response: returns<TrainingRun>() },
  /** `?agent=&kind=`: newest first. */
  listTrainingRuns: { method: 'GET', path: '/training-runs', query: TrainingRunListQuery, response: returns<TrainingRunList>() },
  getTrainingRun: { method: 'GET', path: '/training-runs/:id', response: returns<TrainingRun>() },
  updateTrainingRun: { method: 'POST', path: '/training-runs/:id', body: UpdateTrainingRunRequest, response: returns<TrainingRun>() },
  /** 201. */
  addMetrics: { method: 'POST', path: '/training-runs/:id/metrics', body: AddMetricsRequest, response: returns<CountResponse>() },
  listMetrics: { method: 'GET', path: '/training-runs/:id/metrics', query: MetricsQuery, response: returns<MetricList>() },
  /** 201. */
  addTransitions: { method: 'POST', path: '/transitions', body: AddTransitionsRequest, response: returns<CountResponse>() },
  listTransitions: { method: 'GET', path: '/transitions', query: TransitionListQuery, response: returns<TransitionList>() },

  // --- prompt optimization: a run's candidates and optimizer calls, the prompts agents get (protocol/prompts.ts) ---
  /** 201: the candidate as stored (an identical one again: as stored; another under its id or ordinal: 409). */
  addPromptCandidate: { method: 'POST', path: '/prompt-candidates', body: AddPromptCandidateRequest, response: returns<PromptCandidate>() },
  /** `?runId=`: the run's candidates by ordinal. */
  listPromptCandidates: { method: 'GET', path: '/prompt-candidates', query: PromptCandidateListQuery, response: returns<PromptCandidateList>() },
  getPromptCandidate: { method: 'GET', path: '/prompt-candidates/:id', response: returns<PromptCandidate>() },
  /** Decides a candidate once (the same decision again: as stored; another: 409). */
  decidePromptCandidate: { method: 'POST', path: '/prompt-candidates/:id/decision', body: DecideCandidateRequest, response: returns<PromptCandidate>() },
  /** 201: the call as stored (the identical one again: as stored; another at its (runId, seq): 409). */
  addOptimizerCall: { method: 'POST', path: '/optimizer-calls', body: AddOptimizerCallRequest, response: returns<OptimizerCall>() },
  /** `?runId=`: the run's calls by seq. */
  listOptimizerCalls: { method: 'GET', path: '/optimizer-calls', query: OptimizerCallListQuery, response: returns<OptimizerCallList>() },
  /** 201: what the agent gets for the prompt from now on. */
  promotePrompt: { method: 'POST', path: '/prompts/promoted', body: PromotePromptRequest, response: returns<PromotedPrompt>() },
  /** `?agent=`: the promoted texts agents get now. */
  listPromotedPrompts: { method: 'GET', path: '/prompts/promoted', query: PromotedPromptListQuery, response: returns<PromotedPromptList>() },
  /** Back to the seed. */
  clearPromotedPrompt: {
    method: 'POST',
    path: '/prompts/promoted/clear',
    body: ClearPromotedPromptRequest,
    response: returns<ClearPromotedPromptResponse>(),
  },
  /** `?agent=&name=`: the prompt's promotions and clears, newest first. */
  listPromptPromotions: { method: 'GET', path: '/prompts/promoted/history', query: PromptPromotionsQuery, response: returns<PromptPromotionList>() },

  // --- what the editor's views show (daemon/store/views.ts) ---
  /** An agent's headline number and its words (CodeLens, dashboard). */
  viewHeadline: { method: 'GET', path: '/views/headline', query: HeadlineQuery, response: returns<AgentHeadline>() },
  /** A training step's GRPO groups, or one rollout's group (the viewer's group view). */
  viewGroups: { method: 'POST', path: '/views/groups', body: GroupQueryRequest, optionalBody: true, response: returns<GroupPage>() },
  /** One rollout with its calls (number, role, policy, trained or not and why) and answer (the viewer's rollout view). */
  viewRollout: { method: 'POST', path: '/views/rollout', body: RolloutViewRequest, response: returns<RolloutDetail>() },
  /** One page of the rollouts list: its rows with reward, duration and error, the total, and the filters' choices (the viewer's list). */
  viewRollouts: { method: 'POST', path: '/views/rollouts', body: RolloutsViewRequest, response: returns<RolloutListPage>() },
  /** A prompt optimization: its candidates with their per-val-task scores, the Pareto front, best val by rollouts used, the optimizer's calls (daemon/store/views-optimize.ts). */
  viewOptimization: { method: 'GET', path: '/views/optimization', query: OptimizationViewQuery, response: returns<OptimizationView>() },
} as const satisfies Record<string, RouteDecl>;

/**
 * The gateway's OpenAI-compatible calls (daemon/server/gateway.ts), outside API_PREFIX: bare (token required) and
 * per attempt (the ids in the path are the capability). Their bodies follow OpenAI's rules, not the store API's:
 * unknown keys pass through to upstream servers untouched, and what is refused (400 naming the field, in OpenAI's
 * error shape inside problem+json, before the call is routed, forwarded or recorded) is a body that is not a JSON
 * object or a field the gateway reads with the wrong type (api-gateway.ts). `GET /v1/models` reads no body.
 * Not here either: `POST /v1/traces` (OTLP/HTTP, protobuf or JSON: daemon/server/otlp.ts), whose envelope is
 * checked by otlp-validate.ts and whose unknown fields are ignored, as the OTLP spec asks of receivers.
 */
export const gatewayRoutes = {
  chatCompletions: { method: 'POST', path: '/v1/chat/completions', body: ChatCompletionBody, response: returns<Record<string, unknown>>() },
  completions: { method: 'POST', path: '/v1/completions', body: CompletionBody, response: returns<Record<string, unknown>>() },
  attemptChatCompletions: {
    method: 'POST',
    path: '/rollout/:rolloutId/attempt/:attemptId/v1/chat/completions',
    body: ChatCompletionBody,
    response: returns<Record<string, unknown>>(),
  },
  attemptCompletions: {
    method: 'POST',
    path: '/rollout/:rolloutId/attempt/:attemptId/v1/completions',
    body: CompletionBody,
    response: returns<Record<string, unknown>>(),
  },
} as const satisfies Record<string, PostRoute>;

export type Routes = typeof routes;
export type RouteName = keyof Routes;

/** The names of a path's `:params`: `'/rollouts/:id/attempts/:aid'` -> `'id' | 'aid'`. */
export type PathParamNames<P extends string> = P extends `${string}:${infer N}/${infer Rest}`
  ? N | PathParamNames<`/${Rest}`>
  : P extends `${string}:${infer N}`
    ? N
    : never;
/** A route's path params, as strings (decoded). */
export type ParamsOf<K extends RouteName> = { [N in PathParamNames<Routes[K]['path']>]: string };
/** A route's body as its handler sees it (parsed: defaults filled in); undefined for a route without a body. */
export type BodyOf<K extends RouteName> = Routes[K] extends { body: infer B extends z.ZodType } ? z.output<B> : undefined;
/** A route's body as a client sends it (before defaults). */
export type BodyInputOf<K extends RouteName> = Routes[K] extends { body: infer B extends z.ZodType } ? z.input<B> : undefined;
/** A route's query as its handler sees it (parsed from the query string); undefined for a route without one. */
export type QueryOf<K extends RouteName> = Routes[K] extends { query: infer Q extends z.ZodType } ? z.output<Q> : undefined;
/** What a route answers with (its success body). */
export type ResponseOf<K extends RouteName> = Routes[K]['response'] extends Returns<infer R> ? R : never;
