/**
 * The LightningStore interface: everything the daemon keeps durably, and the one contract of the store API.
 * Implemented by the local backends (daemon/store/: SQLite, PostgreSQL) and over HTTP by the client
 * (client/client.ts AglClient), as agent-lightning's LightningStoreClient implements its LightningStore; all of
 * them pass one conformance suite (test/store/conformance.ts; test/store/client.test.ts runs it through
 * AglClient against a real daemon). The HTTP API (daemon/server) is a thin, validating skin over it.
 * Its errors are part of the contract: NotFoundError (unknown id) and ConflictError (a transition not
 * allowed), thrown by a local backend or, for the matching problem answers, by the HTTP client.
 */
import type {
  Attempt,
  AttemptStatus,
  MetricPoint,
  Resources,
  ResourcesInput,
  Rollout,
  RolloutInput,
  RolloutMode,
  RolloutSort,
  RolloutStatus,
  RolloutSummary,
  RunKind,
  Span,
  SpanInput,
  Statistics,
  TrainingRun,
  Transition,
  Worker,
} from './store.js';
import type { Claim, HealthCheckResult } from './api.js';
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
} from './prompts.js';
import type { StoreChange } from './events.js';

export interface RolloutQuery {
  status?: RolloutStatus[];
  mode?: RolloutMode;
  resourcesId?: string;
  /** Resources version the rollout ran (or will run) with. */
  resourcesVersion?: number;
  agent?: string;
  ids?: string[];
  /** Words to find in the task input or the outputs (LLM replies, messages); every word must match, each as a prefix. */
  search?: string;
  /** The latest attempt's final reward within [rewardMin, rewardMax]; rollouts without one are left out. */
  rewardMin?: number;
  rewardMax?: number;
  /** The training run and step that enqueued the rollout (its metadata's runId and step). */
  runId?: string;
  step?: number;
  /** The prompt candidate a prompt optimization ran the rollout with (its metadata's candidate). */
  candidate?: string;
  /**
   * A prompt version the rollout read (its prompt spans, any attempt): a version (candidate id, `promoted`, `seed`)
   * or a text's sha (protocol/spans.ts AGL.promptVersion / AGL.promptSha).
   */
  promptVersion?: string;
  /** A model that answered a call of the latest attempt: a local policy's name, or an upstream model's (RolloutSummary.served). */
  servedBy?: string;
  /** true: the latest attempt recorded an error or has spans with an error status; false: neither. */
  hasError?: boolean;
  /** createdAt (default), duration (of the latest attempt), reward (final), status; ties by creation. */
  sort?: RolloutSort;
  /** Newest (or largest) first by default. */
  order?: 'asc' | 'desc';
  limit?: number;
  /** Opaque cursor from a previous page's nextCursor (sort createdAt only). */
  cursor?: string;
  /** Rows to skip (any sort; the virtual list asks for the rows it shows). */
  offset?: number;
  /** Also count every rollout that matches (Page.total). */
  withTotal?: boolean;
  /** Also give each rollout's RolloutSummary (Page.summaries). */
  withSummaries?: boolean;
}
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}
/** A rollouts page, with what RolloutQuery asked for beside the items. */
export interface RolloutPage extends Page<Rollout> {
  /** How many rollouts match the query (withTotal). */
  total?: number;
  /** One per item, in the same order (withSummaries). */
  summaries?: RolloutSummary[];
}

export interface SpanQuery {
  rolloutId: string;
  /** An attempt id, or 'latest' for the rollout's latest attempt; omitted = all attempts. */
  attemptId?: string | 'latest';
  name?: string;
  /** Only spans with sequenceId > this (for tailing). */
  afterSequenceId?: number;
  limit?: number;
}

export interface ClaimOptions {
  /** Claim only rollouts of this agent (or with agent null). */
  agent?: string;
  mode?: RolloutMode;
}

/** A claimed rollout: the rollout (now `preparing`) and its new attempt (`preparing`). */
export type { Claim };

export interface FinishAttemptInput {
  status: Extract<AttemptStatus, 'succeeded' | 'failed'>;
  error?: { message: string; stack?: string };
}

/** What a health check did: ids of the attempts timed out / marked unresponsive, rollouts requeued / failed. */
export type { HealthCheckResult };

export interface TransitionQuery {
  runId?: string;
  rolloutId?: string;
  step?: number;
  limit?: number;
}

/**
 * What an update of a training run may change. `summary` replaces the stored summary (`agl train` keeps its own
 * copy whole), but never drops the run's label: the label is the user's (the dashboard edits it), so it is kept
 * unless `label` sets it (a string) or clears it (null or '').
 */
export type TrainingRunPatch = Partial<Pick<TrainingRun, 'status' | 'step' | 'totalSteps' | 'checkpointDir' | 'summary'>> & { label?: string | null };

export interface LightningStore {
  /** 'sqlite' | 'postgres' | 'http' (AglClient: a daemon's store over its HTTP API) */
  readonly kind: string;
  close(): Promise<void>;

  // --- rollouts -------------------------------------------------------------------------------
  enqueueRollout(input: RolloutInput): Promise<Rollout>;
  enqueueRollouts(inputs: RolloutInput[]): Promise<Rollout[]>;
  /** Create a rollout and its first attempt at once, already claimed by `workerId` (direct runs). */
  startRollout(input: RolloutInput, workerId?: string): Promise<Claim>;
  /** Claim the oldest queuing/requeuing rollout exactly once, across processes; null when none. */
  claimNextRollout(workerId: string, opts?: ClaimOptions): Promise<Claim | null>;
  claimRollouts(workerId: string, limit: number, opts?: ClaimOptions): Promise<Claim[]>;
  getRollout(id: string): Promise<Rollout | null>;
  queryRollouts(query?: RolloutQuery): Promise<RolloutPage>;
  /** Cancel a rollout that has not ended; its running attempt (if any) is marked failed. */
  cancelRollout(id: string): Promise<Rollout>;
  updateRolloutMetadata(id: string, metadata: Record<string, unknown>): Promise<Rollout>;
  /** Resolves with the rollouts among `ids` that have ended, as soon as all have or after timeoutMs. */
  waitForRollouts(ids: string[], timeoutMs: number): Promise<Rollout[]>;

  // --- attempts -------------------------------------------------------------------------------
  getAttempts(rolloutId: string): Promise<Attempt[]>;
  getLatestAttempt(rolloutId: string): Promise<Attempt | null>;
  getAttempt(attemptId: string): Promise<Attempt | null>;
  /** Marks the attempt alive (revives an `unresponsive` one while its rollout has not moved on). */
  heartbeatAttempt(attemptId: string): Promise<Attempt>;
  /** Ends an attempt; the rollout succeeds, or is requeued / failed per its config. */
  finishAttempt(attemptId: string, input: FinishAttemptInput): Promise<{ attempt: Attempt; rollout: Rollout }>;

  // --- spans ----------------------------------------------------------------------------------
  /** Durable when the promise resolves. Issues sequence ids; first span flips the attempt to running. */
  addSpans(spans: SpanInput[]): Promise<Span[]>;
  querySpans(query: SpanQuery): Promise<Span[]>;
  /**
   * Optional fast path for the HTTP layer: the same result as querySpans, already serialised as a JSON array
   * (spans are stored as JSON, so this skips a parse and a re-stringify: ~1 ms per 100 KB of spans).
   */
  querySpansJson?(query: SpanQuery): Promise<string>;

  // --- resources ------------------------------------------------------------------------------
  addResources(input: ResourcesInput): Promise<Resources>;
  getLatestResources(): Promise<Resources | null>;
  getResources(id: string): Promise<Resources | null>;
  listResources(limit?: number): Promise<Resources[]>;

  // --- workers --------------------------------------------------------------------------------
  heartbeatWorker(id: string, patch?: Partial<Pick<Worker, 'status' | 'currentRolloutId' | 'currentAttemptId' | 'metadata'>>): Promise<Worker>;
  getWorker(id: string): Promise<Worker | null>;
  listWorkers(): Promise<Worker[]>;

  // --- runs (training, optimization, evaluation), metrics, transitions -------------------------
  /** A new run, `running`, of `kind` (default 'train'). */
  createTrainingRun(run: Pick<TrainingRun, 'agent' | 'config' | 'totalSteps'> & { id?: string; kind?: RunKind }): Promise<TrainingRun>;
  /** A patch's `summary` replaces the stored one, except for the user's label (`summary.label`), which only `label` sets or clears (null). */
  updateTrainingRun(id: string, patch: TrainingRunPatch): Promise<TrainingRun>;
  getTrainingRun(id: string): Promise<TrainingRun | null>;
  /** Runs newest first: of `agent` (any stored form of its id) and of `kind`, when given. */
  listTrainingRuns(agent?: string, kind?: RunKind): Promise<TrainingRun[]>;
  addMetrics(points: Omit<MetricPoint, 'time'>[]): Promise<void>;
  queryMetrics(runId: string, afterStep?: number): Promise<MetricPoint[]>;
  addTransitions(transitions: Transition[]): Promise<void>;
  queryTransitions(query: TransitionQuery): Promise<Transition[]>;

  // --- prompt optimization (protocol/prompts.ts) ------------------------------------------------
  /**
   * Stores a candidate of an existing run, its parents being candidates of that run. Adding the same candidate again
   * (its texts and lineage as stored, status proposed or as decided) returns it as stored, so a resumed optimizer can
   * re-add; another candidate under a stored id, or at a stored (run, ordinal), is a ConflictError.
   */
  addPromptCandidate(input: PromptCandidateInput): Promise<PromptCandidate>;
  /** Decides a candidate once (protocol/prompts.ts CandidateDecision: the same decision again is a no-op). */
  decidePromptCandidate(id: string, decision: CandidateDecision): Promise<PromptCandidate>;
  getPromptCandidate(id: string): Promise<PromptCandidate | null>;
  /** The run's candidates in their order (ordinal). */
  listPromptCandidates(runId: string): Promise<PromptCandidate[]>;
  /** Stores a call of an existing run, unique on (runId, seq): the identical call again is a no-op, another a ConflictError. */
  addOptimizerCall(input: OptimizerCallInput): Promise<OptimizerCall>;
  /** The run's calls in their order (seq). */
  listOptimizerCalls(runId: string): Promise<OptimizerCall[]>;
  /** Publishes a text as what `agent` gets for prompt `name` outside optimization, replacing the one before (kept in its history). */
  promotePrompt(input: PromotePromptInput): Promise<PromotedPrompt>;
  /** The promoted prompts agents get now, one per (agent, name): of `agent` (any stored form of its id), or of every agent. */
  listPromotedPrompts(agent?: string): Promise<PromotedPrompt[]>;
  /** Back to the seed: `agent` no longer gets a promoted text for `name`. False when none was promoted. */
  clearPromotedPrompt(input: ClearPromotedPromptInput): Promise<boolean>;
  /** Every promotion and clear of the agent's prompt `name`, newest first. */
  listPromptPromotions(agent: string, name: string): Promise<PromptPromotion[]>;

  // --- health ---------------------------------------------------------------------------------
  /** Applies timeouts / unresponsiveness and retries. Called on a timer by the Watchdog, safe to call concurrently from many processes. */
  runHealthCheck(now?: number): Promise<HealthCheckResult>;
  statistics(): Promise<Statistics>;

  // --- changes --------------------------------------------------------------------------------
  /**
   * Calls `listener` with what the store committed, soon after each commit, whichever process wrote it (this one,
   * `agl train` on the same file, another daemon on the same PostgreSQL), until the function it resolves with is
   * called. It resolves once watching: every commit after that is reported. Notifications only: a listener re-reads
   * what it shows. Changes the backend may have missed (its database connection dropped) are reported as `truncated`.
   * Local backends have it; the daemon's event stream serves it.
   */
  watchChanges?(listener: (change: StoreChange) => void): Promise<() => void>;
}

/** Marks an error as one of the store contract's kinds, whichever side threw it (see StoreError below). */
export const STORE_ERROR = Symbol.for('agl.storeError');
type StoreErrorKind = 'not-found' | 'conflict';
const hasKind = (value: unknown, kind: StoreErrorKind): boolean =>
  typeof value === 'object' && value !== null && (value as { [STORE_ERROR]?: unknown })[STORE_ERROR] === kind;

/**
 * Thrown by stores for unknown ids; the HTTP layer maps it to 404. `instanceof NotFoundError` also holds for
 * the HTTP client's error for a 404 `not-found` problem (AglHttpError carries the same mark), so callers and
 * the conformance suite treat a local and a remote store alike.
 */
export class NotFoundError extends Error {
  readonly [STORE_ERROR] = 'not-found' as const;
  override readonly name = 'NotFoundError';
  constructor(
    public readonly entity: string,
    public readonly id: string,
  ) {
    super(`${entity} '${id}' not found`);
  }
  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasKind(value, 'not-found');
  }
}
/** Thrown for a transition that is not allowed (e.g. finishing an ended attempt); HTTP 409. Recognised like NotFoundError. */
export class ConflictError extends Error {
  readonly [STORE_ERROR] = 'conflict' as const;
  override readonly name = 'ConflictError';
  static override [Symbol.hasInstance](value: unknown): boolean {
    return hasKind(value, 'conflict');
  }
}
