/**
 * Typed client for the daemon's store API (/v1/agl/...), used by the runner, the CLI, the language server
 * and the benchmarks. Every call is built from the route's declaration in protocol/routes.ts (method, path,
 * body or query, response type), the same declarations the daemon registers, through one private `call`;
 * `clientMethods` below names the method that calls each declared route, so a route the client does not
 * call does not compile. It implements the LightningStore interface (protocol/lightning-store.ts) with the
 * same signatures as the local backends, so code written against a store (the trainer, the watchdog) can drive
 * a daemon's store remotely; test/sdk/client-conformance.test.ts runs the store conformance suite through it.
 * What cannot be remote: runHealthCheck(now) with an injected `now` (the daemon's clock decides, so one
 * client cannot time out another's attempts by claiming a later time; without `now` it runs remotely). Transport: node:http with a keep-alive agent (measured here at 4-5x less client CPU per
 * request than the global fetch, which matters to runners and benchmarks making thousands of calls/s).
 * Responses are typed by the declarations, not parsed (the hot calls stay cheap).
 * Errors: a problem+json answer throws AglHttpError (status, detail, field errors; a `not-found` or `conflict`
 * problem is also `instanceof` the store's NotFoundError / ConflictError); a daemon that cannot be reached
 * throws AglConnectionError saying so.
 *   const agl = new AglClient({ url: 'http://127.0.0.1:4747', token });
 *   const agl = AglClient.fromDataDir();   // the local daemon of ~/.agent-lightning (or AGL_DATA_DIR)
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import { API_PREFIX, MAX_BATCH } from '../protocol/api.js';
import type {
  Claim,
  CreateTrainingRunRequest,
  DequeueRequest,
  FinishAttemptRequest,
  FinishAttemptResponse,
  GroupQueryRequest,
  Health,
  HealthCheckResult,
  KnownAgent,
  Problem,
  ProblemFieldError,
  RolloutPage,
  RolloutSearchRequest,
  RolloutViewRequest,
  RolloutsViewRequest,
  SpanSearchRequest,
  TransitionListQuery,
  UpdateTrainingRunRequest,
  WorkerHeartbeatRequest,
} from '../protocol/api.js';
import type { AgentHeadline } from '../protocol/agent-headline.js';
import type { OptimizationView } from '../protocol/webview-optimize.js';
import type {
  CandidateDecision,
  ClearPromotedPromptInput,
  OptimizerCall,
  OptimizerCallInput,
  PromotePromptInput,
  PromotedPrompt,
  PromptCandidate,
  PromptCandidateInput,
  PromptPromotion,
} from '../protocol/prompts.js';
import { DAEMON_STATE_FILE, TOKEN_FILE } from '../protocol/daemon-state.js';
import type { GroupPage, RolloutDetail, RolloutPage as RolloutListPage } from '../protocol/webview-trajectory.js';
import { STORE_ERROR, type ClaimOptions, type LightningStore, type RolloutQuery, type SpanQuery } from '../protocol/lightning-store.js';
import { routes, type BodyInputOf, type ParamsOf, type QueryOf, type ResponseOf, type RouteName } from '../protocol/routes.js';
import {
  withSpanDefaults,
  type Attempt,
  type MetricPoint,
  type Resources,
  type ResourcesInput,
  type Rollout,
  type RolloutInput,
  type RunKind,
  type Span,
  type SpanInput,
  type Statistics,
  type TrainingRun,
  type Transition,
  type Worker,
} from '../protocol/store.js';
import { readDaemonState, resolveDataDir } from './daemon-state.js';

export { API_PREFIX };

/** An error answer from the daemon (application/problem+json). */
export class AglHttpError extends Error {
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  readonly type: string;
  readonly errors: ProblemFieldError[];
  /** Set for the store contract's errors, so `instanceof NotFoundError` / `ConflictError` hold (protocol/lightning-store.ts). */
  readonly [STORE_ERROR]?: 'not-found' | 'conflict';
  constructor(
    readonly method: string,
    readonly url: string,
    status: number,
    problem: Partial<Problem> | null,
    text: string,
  ) {
    const detail = problem?.detail ?? (text.slice(0, 500) || `HTTP ${status}`);
    super(`${method} ${url} -> ${status}: ${detail}`);
    this.name = 'AglHttpError';
    this.status = status;
    this.title = problem?.title ?? '';
    this.detail = detail;
    this.type = problem?.type ?? 'about:blank';
    this.errors = problem?.errors ?? [];
    if (status === 404 && this.type === 'urn:agl:problem:not-found') this[STORE_ERROR] = 'not-found';
    if (status === 409 && this.type === 'urn:agl:problem:conflict') this[STORE_ERROR] = 'conflict';
  }
}

/** `items` in slices the API takes in one request (MAX_BATCH); none for an empty list. */
function batches<T>(items: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += MAX_BATCH) out.push(items.slice(i, i + MAX_BATCH));
  return out;
}

/** The daemon did not answer at all (not running, wrong port, crashed). */
export class AglConnectionError extends Error {
  readonly code: string;
  constructor(
    readonly url: string,
    cause: unknown,
  ) {
    const code = (cause as NodeJS.ErrnoException)?.code ?? (cause as Error)?.message ?? String(cause);
    super(`cannot reach the agl daemon at ${url} (${code}): is \`agl serve\` running? \`agl status\` tells where it is`);
    this.name = 'AglConnectionError';
    this.code = code;
    this.cause = cause;
  }
}

/** No daemon runs for a data dir (found from daemon.json without any network call). */
export class AglNotRunningError extends Error {
  constructor(
    readonly dataDir: string,
    reason: string,
  ) {
    super(`the agl daemon of ${dataDir} is not running (${reason}): start it with \`agl serve --data-dir ${dataDir}\``);
    this.name = 'AglNotRunningError';
  }
}

export interface AglClientOptions {
  /** Base URL of the daemon, e.g. http://127.0.0.1:4747 (no trailing /v1/agl). */
  url: string;
  token: string;
  /** Give up on a request silent for this long (ms); long-polls add their own wait on top. Default 60 s. */
  timeoutMs?: number;
  /** Most concurrent connections to the daemon (default 256); more requests queue in the client. */
  maxSockets?: number;
}

/** The data dir the daemon uses: AGL_DATA_DIR, else ~/.agent-lightning. */
export function defaultDataDir(): string {
  return resolveDataDir();
}

type Query = Record<string, string | number | boolean | string[] | undefined | null>;

/** What one call of a declared route takes: its path params, its body (POST) or query (GET), and how much longer than the usual timeout a long-poll may take. */
type CallArgs<K extends RouteName> = ([keyof ParamsOf<K>] extends [never] ? { params?: undefined } : { params: ParamsOf<K> }) &
  (BodyInputOf<K> extends undefined ? { body?: undefined } : { body: BodyInputOf<K> }) &
  (QueryOf<K> extends undefined ? { query?: undefined } : { query?: { [F in keyof QueryOf<K>]?: QueryOf<K>[F] | null } }) & { extraWaitMs?: number };
/** `call(name)` alone for a route that takes nothing. */
type CallRest<K extends RouteName> = object extends CallArgs<K> ? [args?: CallArgs<K>] : [args: CallArgs<K>];

/** A declared path as a function of its params, each encodeURIComponent'd: `/rollouts/:id` -> `(p) => '/rollouts/' + enc(p.id)`. */
function pathBuilder(path: string): (params: Record<string, string> | undefined) => string {
  const parts = path.split(/:([A-Za-z_$][\w$]*)/); // literal, param name, literal, ...
  if (parts.length === 1) return () => path;
  return (params) => {
    let out = parts[0]!;
    for (let i = 1; i < parts.length; i += 2) out += encodeURIComponent(params![parts[i]!]!) + parts[i + 1]!;
    return out;
  };
}
/** Every declared route's path builder, made once. */
const PATHS = Object.fromEntries(Object.entries(routes).map(([name, route]) => [name, pathBuilder(route.path)])) as Record<
  RouteName,
  ReturnType<typeof pathBuilder>
>;

export class AglClient implements LightningStore {
  readonly kind = 'http';
  readonly url: string;
  private readonly auth: string;
  private readonly timeoutMs: number;
  private readonly base: URL;
  private readonly transport: typeof http | typeof https;
  private readonly agent: http.Agent;

  constructor(opts: AglClientOptions) {
    this.url = opts.url.replace(/\/+$/, '');
    this.base = new URL(this.url);
    this.auth = `Bearer ${opts.token}`;
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    this.transport = this.base.protocol === 'https:' ? https : http;
    // Idle keep-alive sockets are unref'd by the agent, so a client never keeps a process alive.
    this.agent = new this.transport.Agent({ keepAlive: true, maxSockets: opts.maxSockets ?? 256 });
  }

  /** Closes the client's idle keep-alive connections (the daemon and its store keep running). */
  async close(): Promise<void> {
    this.agent.destroy();
  }

  /** A client for the daemon recorded in `<dataDir>/daemon.json`, with the token from `<dataDir>/token`. */
  static fromDataDir(dataDir = defaultDataDir(), opts: Partial<AglClientOptions> = {}): AglClient {
    const { state, stale } = readDaemonState(dataDir);
    if (!state) throw new AglNotRunningError(dataDir, `no ${DAEMON_STATE_FILE}: no daemon ever ran with this data dir`);
    if (!state.url || !state.pid) throw new AglNotRunningError(dataDir, 'it was stopped');
    if (stale) throw new AglNotRunningError(dataDir, `its process (pid ${state.pid}) is gone: killed or crashed`);
    const token = readFileSync(join(dataDir, TOKEN_FILE), 'utf8').trim();
    return new AglClient({ url: state.url, token, ...opts });
  }

  // --- transport -------------------------------------------------------------------------------------
  /** One request to `/v1/agl${path}` (or `path` as is when it starts with `//`); JSON in, JSON out. */
  async request<T>(method: string, path: string, body?: unknown, query?: Query, extraWaitMs = 0): Promise<T> {
    let url = this.url + (path.startsWith('//') ? path.slice(1) : API_PREFIX + path);
    if (query) {
      const qs = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) {
        if (v === undefined || v === null) continue;
        qs.set(k, Array.isArray(v) ? v.join(',') : String(v));
      }
      const s = qs.toString();
      if (s) url += `?${s}`;
    }
    const payload = body === undefined ? undefined : JSON.stringify(body);
    // Reads may be retried once when a reused keep-alive socket turns out closed; writes never are.
    const retryable = method === 'GET' || /\/search$|\/heartbeat$|^\/waits\//.test(path);
    const { status, text } = await this.send(method, url, payload, this.timeoutMs + extraWaitMs, retryable);
    if (status >= 400) {
      let problem: Partial<Problem> | null = null;
      try {
        problem = JSON.parse(text);
      } catch {
        /* not JSON: keep the text */
      }
      throw new AglHttpError(method, url, status, problem, text);
    }
    return (text ? JSON.parse(text) : undefined) as T;
  }

  private send(method: string, url: string, payload: string | undefined, timeoutMs: number, retryable: boolean): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string | number> = { authorization: this.auth, accept: 'application/json' };
      if (payload !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = Buffer.byteLength(payload);
      }
      const req = this.transport.request(url, { method, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', (err) => reject(new AglConnectionError(this.url, err)));
      });
      req.setTimeout(timeoutMs, () => req.destroy(Object.assign(new Error(`${method} ${url}: no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })));
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (retryable && req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) {
          this.send(method, url, payload, timeoutMs, false).then(resolve, reject);
        } else if (err.code === 'ETIMEDOUT') {
          reject(err);
        } else {
          reject(new AglConnectionError(this.url, err));
        }
      });
      req.end(payload);
    });
  }

  /** One call of the declared route `name` (protocol/routes.ts): its method, its path with `params` filled in, `body` or `query`. */
  private call<K extends RouteName>(name: K, ...[args]: CallRest<K>): Promise<ResponseOf<K>> {
    const { params, body, query, extraWaitMs } = (args ?? {}) as { params?: Record<string, string>; body?: unknown; query?: Query; extraWaitMs?: number };
    return this.request<ResponseOf<K>>(routes[name].method, PATHS[name](params), body, query, extraWaitMs);
  }

  /** A call that maps 404 to null (for "get by id" calls). */
  private async callOrNull<K extends RouteName>(name: K, ...args: CallRest<K>): Promise<ResponseOf<K> | null> {
    try {
      return await this.call(name, ...args);
    } catch (err) {
      if (err instanceof AglHttpError && err.status === 404) return null;
      throw err;
    }
  }

  // --- daemon ----------------------------------------------------------------------------------------
  health(): Promise<Health> {
    return this.request('GET', '//health');
  }
  /** Prometheus text. */
  async metrics(): Promise<string> {
    const url = `${this.url}/metrics`;
    const { status, text } = await this.send('GET', url, undefined, this.timeoutMs, true);
    if (status >= 400) {
      let problem: Partial<Problem> | null = null;
      try {
        problem = JSON.parse(text);
      } catch {
        /* not JSON */
      }
      throw new AglHttpError('GET', url, status, problem, text);
    }
    return text;
  }
  statistics(): Promise<Statistics> {
    return this.call('getStatistics');
  }
  async agents(): Promise<KnownAgent[]> {
    return (await this.call('listAgents')).items;
  }

  // --- rollouts and the queue ------------------------------------------------------------------------
  async enqueueRollout(input: RolloutInput): Promise<Rollout> {
    return (await this.call('enqueueRollouts', { body: input })).rollouts[0]!;
  }
  async enqueueRollouts(inputs: RolloutInput[]): Promise<Rollout[]> {
    const out: Rollout[] = [];
    for (const rollouts of batches(inputs)) out.push(...(await this.call('enqueueRollouts', { body: { rollouts } })).rollouts);
    return out;
  }
  /** Claims up to `limit` (default 1) rollouts for a worker; [] when none are queued. */
  async dequeueRollouts(req: DequeueRequest): Promise<Claim[]> {
    return (await this.call('dequeueRollouts', { body: req })).claims;
  }
  async claimNextRollout(workerId: string, opts: ClaimOptions = {}): Promise<Claim | null> {
    return (await this.dequeueRollouts({ workerId, limit: 1, ...opts }))[0] ?? null;
  }
  claimRollouts(workerId: string, limit: number, opts: ClaimOptions = {}): Promise<Claim[]> {
    return this.dequeueRollouts({ workerId, limit, ...opts });
  }
  /** Creates a rollout with its first attempt already claimed by `workerId` (a direct run). */
  startRollout(input: RolloutInput, workerId?: string): Promise<Claim> {
    return this.call('startRollout', { body: workerId === undefined ? input : { ...input, workerId } });
  }
  getRollout(id: string): Promise<Rollout | null> {
    return this.callOrNull('getRollout', { params: { id } });
  }

  // --- what the editor's views show, assembled by the daemon (one request each) -----------------------
  /** The agent's headline number and its words (CodeLens, dashboard). */
  agentHeadline(agent: string): Promise<AgentHeadline> {
    return this.call('viewHeadline', { query: { agent } });
  }
  /** A training step's GRPO groups, or the group of one rollout: samples, rewards, credits, stored advantages. */
  getGroups(q: GroupQueryRequest): Promise<GroupPage> {
    return this.call('viewGroups', { body: q });
  }
  /** One rollout as the viewer shows it: attempts, spans, transitions, its calls (role, policy, training) and answer. */
  getRolloutView(q: RolloutViewRequest): Promise<RolloutDetail> {
    return this.call('viewRollout', { body: q });
  }
  /** One page of the viewer's rollouts list: rows with reward, duration and error, the total, the filters' choices. */
  getRolloutsView(q: RolloutsViewRequest): Promise<RolloutListPage> {
    return this.call('viewRollouts', { body: q });
  }
  /** A prompt optimization as the editor's view shows it: candidates with per-val-task scores, the front, the curve, the calls. */
  getOptimizationView(runId: string): Promise<OptimizationView> {
    return this.call('viewOptimization', { query: { runId } });
  }
  /**
   * Rollouts matching filters and a text search (task input and outputs), sorted by creation, duration, reward or
   * status; `offset` pages any sort, `withTotal` counts every match, `withSummaries` adds each row's final reward,
   * duration and error (protocol/api.ts RolloutSearchRequest).
   */
  queryRollouts(q: RolloutQuery = {}): Promise<RolloutPage> {
    return this.call('searchRollouts', { body: q });
  }
  /** GET /rollouts with query-string filters (same result as queryRollouts). */
  listRollouts(q: RolloutSearchRequest = {}): Promise<RolloutPage> {
    return this.call('listRollouts', { query: q });
  }
  updateRolloutMetadata(id: string, metadata: Record<string, unknown>): Promise<Rollout> {
    return this.call('updateRollout', { params: { id }, body: { metadata } });
  }
  cancelRollout(id: string): Promise<Rollout> {
    return this.call('cancelRollout', { params: { id } });
  }
  /** Resolves with those of `ids` that have ended, once all have or after timeoutMs (max 120 s per call). */
  async waitForRollouts(ids: string[], timeoutMs: number): Promise<Rollout[]> {
    return (await this.call('waitRollouts', { body: { ids, timeoutMs }, extraWaitMs: timeoutMs })).items;
  }

  // --- attempts (by attempt id, as the store addresses them: /attempts/:aid) ---------------------------
  async getAttempts(rolloutId: string): Promise<Attempt[]> {
    return (await this.call('listAttempts', { params: { id: rolloutId } })).items;
  }
  getLatestAttempt(rolloutId: string): Promise<Attempt | null> {
    return this.callOrNull('getLatestAttempt', { params: { id: rolloutId } });
  }
  getAttempt(attemptId: string): Promise<Attempt | null> {
    return this.callOrNull('getAttempt', { params: { aid: attemptId } });
  }
  heartbeatAttempt(attemptId: string): Promise<Attempt> {
    return this.call('heartbeatAttempt', { params: { aid: attemptId } });
  }
  finishAttempt(attemptId: string, req: FinishAttemptRequest): Promise<FinishAttemptResponse> {
    return this.call('finishAttempt', { params: { aid: attemptId }, body: req });
  }
  // The same three within the attempt's rollout (/rollouts/:id/attempts/:aid): the daemon checks that the attempt belongs to it.
  /** The attempt, if it is one of the rollout's (null otherwise). */
  getRolloutAttempt(rolloutId: string, attemptId: string): Promise<Attempt | null> {
    return this.callOrNull('getRolloutAttempt', { params: { id: rolloutId, aid: attemptId } });
  }
  heartbeatRolloutAttempt(rolloutId: string, attemptId: string): Promise<Attempt> {
    return this.call('heartbeatRolloutAttempt', { params: { id: rolloutId, aid: attemptId } });
  }
  finishRolloutAttempt(rolloutId: string, attemptId: string, req: FinishAttemptRequest): Promise<FinishAttemptResponse> {
    return this.call('finishRolloutAttempt', { params: { id: rolloutId, aid: attemptId }, body: req });
  }

  // --- spans -----------------------------------------------------------------------------------------
  /**
   * Writes a batch in one durable commit (larger than MAX_BATCH: one commit per slice); resolves with the
   * spans as stored: the input with its defaults, the ids the daemon issued and each sequence id, in order.
   */
  async addSpans(spans: SpanInput[]): Promise<Span[]> {
    const out: Span[] = [];
    for (const batch of batches(spans)) {
      const { spans: acks } = await this.call('addSpans', { body: { spans: batch } });
      acks.forEach((ack, i) => out.push({ ...withSpanDefaults(batch[i]!), traceId: ack.traceId, spanId: ack.spanId, sequenceId: ack.sequenceId }));
    }
    return out;
  }
  async addSpan(span: SpanInput): Promise<Span> {
    return (await this.addSpans([span]))[0]!;
  }
  /** attemptId: an id, 'latest', or omitted for all attempts; afterSequenceId tails. */
  async querySpans(q: SpanQuery): Promise<Span[]> {
    return (await this.call('searchSpans', { body: q satisfies SpanSearchRequest })).items;
  }
  /** querySpans through GET /spans (query-string filters; same result). */
  async listSpans(q: SpanSearchRequest): Promise<Span[]> {
    return (await this.call('listSpans', { query: q })).items;
  }
  /** querySpans' result as JSON text (the store interface's serialised form). */
  async querySpansJson(q: SpanQuery): Promise<string> {
    return JSON.stringify(await this.querySpans(q));
  }

  // --- resources -------------------------------------------------------------------------------------
  addResources(input: ResourcesInput): Promise<Resources> {
    return this.call('addResources', { body: input });
  }
  getLatestResources(): Promise<Resources | null> {
    return this.callOrNull('getLatestResources');
  }
  getResources(id: string): Promise<Resources | null> {
    return this.callOrNull('getResources', { params: { id } });
  }
  async listResources(limit?: number): Promise<Resources[]> {
    return (await this.call('listResources', { query: { limit } })).items;
  }

  // --- workers ---------------------------------------------------------------------------------------
  heartbeatWorker(id: string, patch: WorkerHeartbeatRequest = {}): Promise<Worker> {
    return this.call('heartbeatWorker', { params: { id }, body: patch });
  }
  getWorker(id: string): Promise<Worker | null> {
    return this.callOrNull('getWorker', { params: { id } });
  }
  async listWorkers(): Promise<Worker[]> {
    return (await this.call('listWorkers')).items;
  }

  // --- training runs, metrics, transitions -----------------------------------------------------------
  createTrainingRun(req: CreateTrainingRunRequest): Promise<TrainingRun> {
    return this.call('createTrainingRun', { body: req });
  }
  updateTrainingRun(id: string, patch: UpdateTrainingRunRequest): Promise<TrainingRun> {
    return this.call('updateTrainingRun', { params: { id }, body: patch });
  }
  getTrainingRun(id: string): Promise<TrainingRun | null> {
    return this.callOrNull('getTrainingRun', { params: { id } });
  }
  async listTrainingRuns(agent?: string, kind?: RunKind): Promise<TrainingRun[]> {
    return (await this.call('listTrainingRuns', { query: { agent, kind } })).items;
  }
  /** Points of any runs (each names its runId): one request per run and slice, in order. */
  async addMetrics(points: Omit<MetricPoint, 'time'>[]): Promise<void> {
    const byRun = new Map<string, { step: number; name: string; value: number }[]>();
    for (const { runId, step, name, value } of points) {
      let list = byRun.get(runId);
      if (!list) byRun.set(runId, (list = []));
      list.push({ step, name, value });
    }
    for (const [runId, list] of byRun) {
      for (const batch of batches(list)) await this.call('addMetrics', { params: { id: runId }, body: { points: batch } });
    }
  }
  async queryMetrics(runId: string, afterStep?: number): Promise<MetricPoint[]> {
    return (await this.call('listMetrics', { params: { id: runId }, query: { afterStep } })).items;
  }
  async addTransitions(transitions: Transition[]): Promise<void> {
    for (const batch of batches(transitions)) await this.call('addTransitions', { body: { transitions: batch } });
  }
  async queryTransitions(q: TransitionListQuery = {}): Promise<Transition[]> {
    // The schema's input type leaves coerced fields (step, limit) unknown; the parsed type is what is sent.
    return (await this.call('listTransitions', { query: q as QueryOf<'listTransitions'> })).items;
  }

  // --- prompt optimization: candidates, optimizer calls, promoted prompts -------------------------------
  addPromptCandidate(input: PromptCandidateInput): Promise<PromptCandidate> {
    return this.call('addPromptCandidate', { body: input });
  }
  decidePromptCandidate(id: string, decision: CandidateDecision): Promise<PromptCandidate> {
    return this.call('decidePromptCandidate', { params: { id }, body: decision });
  }
  getPromptCandidate(id: string): Promise<PromptCandidate | null> {
    return this.callOrNull('getPromptCandidate', { params: { id } });
  }
  async listPromptCandidates(runId: string): Promise<PromptCandidate[]> {
    return (await this.call('listPromptCandidates', { query: { runId } })).items;
  }
  addOptimizerCall(input: OptimizerCallInput): Promise<OptimizerCall> {
    return this.call('addOptimizerCall', { body: input });
  }
  async listOptimizerCalls(runId: string): Promise<OptimizerCall[]> {
    return (await this.call('listOptimizerCalls', { query: { runId } })).items;
  }
  promotePrompt(input: PromotePromptInput): Promise<PromotedPrompt> {
    return this.call('promotePrompt', { body: input });
  }
  async listPromotedPrompts(agent?: string): Promise<PromotedPrompt[]> {
    return (await this.call('listPromotedPrompts', { query: { agent } })).items;
  }
  async clearPromotedPrompt(input: ClearPromotedPromptInput): Promise<boolean> {
    return (await this.call('clearPromotedPrompt', { body: input })).cleared;
  }
  async listPromptPromotions(agent: string, name: string): Promise<PromptPromotion[]> {
    return (await this.call('listPromptPromotions', { query: { agent, name } })).items;
  }

  // --- health ----------------------------------------------------------------------------------------
  /** Runs the store's health check in the daemon, on the daemon's clock: an injected `now` cannot be remote. */
  runHealthCheck(now?: number): Promise<HealthCheckResult> {
    if (now !== undefined) {
      return Promise.reject(
        new TypeError("runHealthCheck(now): the daemon's clock decides over HTTP; call it without `now` (only a local store takes an injected time)"),
      );
    }
    return this.call('runHealthCheck', { body: {} });
  }
}

/** A public method of AglClient. */
type ClientMethod = { [M in keyof AglClient]: AglClient[M] extends (...args: never[]) => Promise<unknown> ? M : never }[keyof AglClient];

/**
 * For each declared route (protocol/routes.ts), the client method that calls it: a declared route missing here,
 * or a name that is no route, does not compile. test/server/routes.test.ts checks that each method calls its route.
 */
export const clientMethods = {
  addSpans: 'addSpans',
  listSpans: 'listSpans',
  searchSpans: 'querySpans',
  enqueueRollouts: 'enqueueRollouts',
  dequeueRollouts: 'dequeueRollouts',
  startRollout: 'startRollout',
  listRollouts: 'listRollouts',
  searchRollouts: 'queryRollouts',
  getRollout: 'getRollout',
  updateRollout: 'updateRolloutMetadata',
  cancelRollout: 'cancelRollout',
  listAttempts: 'getAttempts',
  getLatestAttempt: 'getLatestAttempt',
  getRolloutAttempt: 'getRolloutAttempt',
  heartbeatRolloutAttempt: 'heartbeatRolloutAttempt',
  finishRolloutAttempt: 'finishRolloutAttempt',
  getAttempt: 'getAttempt',
  heartbeatAttempt: 'heartbeatAttempt',
  finishAttempt: 'finishAttempt',
  waitRollouts: 'waitForRollouts',
  runHealthCheck: 'runHealthCheck',
  addResources: 'addResources',
  listResources: 'listResources',
  getLatestResources: 'getLatestResources',
  getResources: 'getResources',
  listWorkers: 'listWorkers',
  getWorker: 'getWorker',
  heartbeatWorker: 'heartbeatWorker',
  listAgents: 'agents',
  getStatistics: 'statistics',
  createTrainingRun: 'createTrainingRun',
  listTrainingRuns: 'listTrainingRuns',
  getTrainingRun: 'getTrainingRun',
  updateTrainingRun: 'updateTrainingRun',
  addMetrics: 'addMetrics',
  listMetrics: 'queryMetrics',
  addTransitions: 'addTransitions',
  listTransitions: 'queryTransitions',
  viewHeadline: 'agentHeadline',
  viewGroups: 'getGroups',
  viewRollout: 'getRolloutView',
  viewRollouts: 'getRolloutsView',
  addPromptCandidate: 'addPromptCandidate',
  listPromptCandidates: 'listPromptCandidates',
  getPromptCandidate: 'getPromptCandidate',
  decidePromptCandidate: 'decidePromptCandidate',
  addOptimizerCall: 'addOptimizerCall',
  listOptimizerCalls: 'listOptimizerCalls',
  promotePrompt: 'promotePrompt',
  listPromotedPrompts: 'listPromotedPrompts',
  clearPromotedPrompt: 'clearPromotedPrompt',
  listPromptPromotions: 'listPromptPromotions',
  viewOptimization: 'getOptimizationView',
} as const satisfies Record<RouteName, ClientMethod>;
