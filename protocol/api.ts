/**
 * The daemon's HTTP store API (`/v1/agl/...`): request and response schemas for every route.
 * Each route is declared once in routes.ts (method, path, which of these schemas its body or query takes, what it
 * answers); the server validates every request with these, the client (client/client.ts) types its calls
 * with the inferred types. Route shapes follow agent-lightning v0's store API where it has one.
 * Request bodies are strict: an unknown key is reported by name instead of being silently dropped.
 * Also here, outside the store API: GET /health (no token) -> Health, and the served policy of `agl serve --model`
 * (GET /v1/agl/policy -> PolicyInfo, POST /v1/agl/policy/load PolicyLoadRequest -> PolicyInfo).
 */
import { z } from 'zod';
import {
  Attempt,
  AttemptStatus,
  ClientJsonObject,
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
  TrainingRunStatus,
  Transition,
  Worker,
  WorkerStatus,
} from './store.js';

export const API_PREFIX = '/v1/agl';
/** Largest page a list route returns; larger `limit`s are refused with 400 naming `limit`. */
export const MAX_PAGE = 10_000;
/** Longest a wait (long-poll) may hold a request. */
export const MAX_WAIT_MS = 120_000;
/** Most items in one batch request (enqueue, spans, metrics, transitions). */
export const MAX_BATCH = 10_000;

// --- helpers for query strings (everything arrives as strings; lists as `a,b` or repeated keys) ---
const queryList = <T extends z.ZodType>(item: T) =>
  z.preprocess(
    (v) => (v === undefined || v === '' ? undefined : (Array.isArray(v) ? v : [v]).flatMap((s) => String(s).split(',')).filter((s) => s !== '')),
    z.array(item).optional(),
  );
const queryInt = (min: number, max: number) => z.coerce.number().int().min(min).max(max).optional();

// --- problem details (RFC 9457), the body of every error response ---
export const ProblemFieldError = z.object({ path: z.string(), message: z.string() });
export const Problem = z.object({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  detail: z.string(),
  instance: z.string().optional(),
  errors: z.array(ProblemFieldError).optional(),
});
export type Problem = z.infer<typeof Problem>;
export type ProblemFieldError = z.infer<typeof ProblemFieldError>;

// --- rollouts ---
/** One rollout to enqueue; `input` must be present (use null for a task without input). */
export const RolloutInputRequest = RolloutInput.strict();
export const EnqueueManyRequest = z.object({ rollouts: z.array(RolloutInputRequest).min(1).max(MAX_BATCH) }).strict();
/** POST /queues/rollouts/enqueue accepts one rollout, or `{ rollouts: [...] }`. */
export const EnqueueRequest = z.union([EnqueueManyRequest, RolloutInputRequest]);
export type EnqueueRequest = z.input<typeof EnqueueRequest>;
export const EnqueueResponse = z.object({ rollouts: z.array(Rollout) });
export type EnqueueResponse = z.infer<typeof EnqueueResponse>;

/** POST /rollouts: create a rollout and its first attempt at once (a direct run, not through the queue). */
export const StartRolloutRequest = RolloutInput.extend({ workerId: z.string().min(1).optional() }).strict();
export type StartRolloutRequest = z.input<typeof StartRolloutRequest>;
export const Claim = z.object({ rollout: Rollout, attempt: Attempt });
export type Claim = z.infer<typeof Claim>;

export const DequeueRequest = z
  .object({
    workerId: z.string().min(1),
    /** How many rollouts to claim at most (default 1). */
    limit: z.number().int().min(1).max(1000).default(1),
    agent: z.string().min(1).optional(),
    mode: RolloutMode.optional(),
  })
  .strict();
export type DequeueRequest = z.input<typeof DequeueRequest>;
/** Empty `claims` when nothing is queued. */
export const DequeueResponse = z.object({ claims: z.array(Claim) });
export type DequeueResponse = z.infer<typeof DequeueResponse>;

/** Longest search text accepted (the store uses its first 16 words). */
export const MAX_SEARCH_LENGTH = 1000;
const rolloutQueryFields = {
  status: z.array(RolloutStatus).optional(),
  mode: RolloutMode.optional(),
  resourcesId: z.string().optional(),
  resourcesVersion: z.number().int().min(1).optional(),
  agent: z.string().optional(),
  ids: z.array(z.string()).max(MAX_PAGE).optional(),
  /** Words to find in the task input or outputs; each a prefix, all must match. Any text is safe. */
  search: z.string().max(MAX_SEARCH_LENGTH).optional(),
  /** Final reward (latest attempt) at least / at most; rollouts without one are left out. */
  rewardMin: z.number().finite().optional(),
  rewardMax: z.number().finite().optional(),
  /** Training run and step that enqueued the rollout (its metadata's runId and step). */
  runId: z.string().min(1).optional(),
  step: z.number().int().min(0).optional(),
  /** The prompt candidate a prompt optimization ran the rollout with (its metadata's candidate). */
  candidate: z.string().min(1).optional(),
  /**
   * A prompt version the rollout read (its `agentlightning.prompt` spans, any attempt): a candidate id (scored by an
   * optimization, or promoted), `promoted`, `seed`, or a text's sha (12 hex digits), which matches that text whatever
   * its source.
   */
  promptVersion: z.string().min(1).max(200).optional(),
  /** A model that answered a call of the latest attempt: the local policy's name or the upstream model's (protocol/served-by.ts). */
  servedBy: z.string().min(1).max(200).optional(),
  hasError: z.boolean().optional(),
  sort: RolloutSort.optional(),
  order: z.enum(['asc', 'desc']).optional(),
  limit: z.number().int().min(1).max(MAX_PAGE).optional(),
  /** From a previous page's nextCursor; sort=createdAt only. */
  cursor: z.string().optional(),
  /** Rows to skip: pages any sort. */
  offset: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
  /** Count every match (`total`). */
  withTotal: z.boolean().optional(),
  /** Each item's RolloutSummary (`summaries`): final reward, duration, error, what answered its calls. */
  withSummaries: z.boolean().optional(),
};
type RolloutQueryShape = { rewardMin?: number; rewardMax?: number; cursor?: string; offset?: number; sort?: string };
/** What no single field can say: a reward range upside down, a cursor with another sort or with an offset. */
function checkRolloutQuery(q: RolloutQueryShape, ctx: z.RefinementCtx): void {
  if (q.rewardMin !== undefined && q.rewardMax !== undefined && q.rewardMin > q.rewardMax) {
    ctx.addIssue({ code: 'custom', path: ['rewardMax'], message: `rewardMax (${q.rewardMax}) is below rewardMin (${q.rewardMin})` });
  }
  if (q.cursor !== undefined && q.sort !== undefined && q.sort !== 'createdAt') {
    ctx.addIssue({ code: 'custom', path: ['cursor'], message: `a cursor pages sort=createdAt only; page sort=${q.sort} with offset` });
  }
  if (q.cursor !== undefined && q.offset !== undefined) ctx.addIssue({ code: 'custom', path: ['offset'], message: 'give a cursor or an offset, not both' });
}
/** POST /rollouts/search body. */
export const RolloutSearchRequest = z.object(rolloutQueryFields).strict().superRefine(checkRolloutQuery);
export type RolloutSearchRequest = z.input<typeof RolloutSearchRequest>;
/** `true`/`false` in a query string (anything else is refused, naming the parameter). */
const queryBool = z
  .enum(['true', 'false'])
  .transform((v) => v === 'true')
  .optional();
/** A finite number in a query string. */
const queryNumber = z.preprocess((v) => (v === '' ? undefined : v), z.coerce.number().finite().optional());
/** GET /rollouts query string: the same filters, lists as `status=running,failed`. */
export const RolloutListQuery = z
  .object({
    ...rolloutQueryFields,
    status: queryList(RolloutStatus),
    ids: queryList(z.string()),
    resourcesVersion: queryInt(1, Number.MAX_SAFE_INTEGER),
    limit: queryInt(1, MAX_PAGE),
    rewardMin: queryNumber,
    rewardMax: queryNumber,
    step: queryInt(0, Number.MAX_SAFE_INTEGER),
    offset: queryInt(0, Number.MAX_SAFE_INTEGER),
    hasError: queryBool,
    withTotal: queryBool,
    withSummaries: queryBool,
  })
  .superRefine(checkRolloutQuery);
export const RolloutPage = z.object({
  items: z.array(Rollout),
  nextCursor: z.string().nullable(),
  /** Every rollout the filters match (withTotal). */
  total: z.number().int().min(0).optional(),
  /** One per item, same order (withSummaries). */
  summaries: z.array(RolloutSummary).optional(),
});
export type RolloutPage = z.infer<typeof RolloutPage>;

/** POST /rollouts/:id: merge keys into the rollout's metadata. */
export const UpdateRolloutRequest = z.object({ metadata: ClientJsonObject }).strict();
export type UpdateRolloutRequest = z.input<typeof UpdateRolloutRequest>;

/** POST /waits/rollouts: resolves with the rollouts among `ids` that have ended, when all have or at the timeout. */
export const WaitRolloutsRequest = z
  .object({
    ids: z.array(z.string().min(1)).min(1).max(MAX_PAGE),
    timeoutMs: z.number().int().min(0).max(MAX_WAIT_MS).default(30_000),
  })
  .strict();
export type WaitRolloutsRequest = z.input<typeof WaitRolloutsRequest>;
export const RolloutList = z.object({ items: z.array(Rollout) });
export type RolloutList = z.infer<typeof RolloutList>;

// --- attempts ---
export const AttemptList = z.object({ items: z.array(Attempt) });
export type AttemptList = z.infer<typeof AttemptList>;
export const FinishAttemptRequest = z
  .object({
    status: AttemptStatus.extract(['succeeded', 'failed']),
    error: z.object({ message: z.string(), stack: z.string().optional() }).strict().optional(),
  })
  .strict();
export type FinishAttemptRequest = z.input<typeof FinishAttemptRequest>;
export const FinishAttemptResponse = z.object({ attempt: Attempt, rollout: Rollout });
export type FinishAttemptResponse = z.infer<typeof FinishAttemptResponse>;
/**
 * The body of a route that takes none (routes.ts `body: null`, and every GET route): no body, or an empty
 * object; anything else is refused with 400 naming it, so nothing a client meant to say is silently dropped.
 */
export const NoBody = z.object({}).strict();
/** POST /health-checks takes no fields: the check runs on the daemon's clock, never a client's. */
export const HealthCheckRequest = NoBody;
export const HealthCheckResult = z.object({
  timedOut: z.array(z.string()),
  unresponsive: z.array(z.string()),
  requeued: z.array(z.string()),
  failed: z.array(z.string()),
});
export type HealthCheckResult = z.infer<typeof HealthCheckResult>;

// --- spans ---
export const SpanInputRequest = SpanInput.strict();
export const AddSpansManyRequest = z.object({ spans: z.array(SpanInputRequest).min(1).max(MAX_BATCH) }).strict();
/** POST /spans accepts one span, or `{ spans: [...] }` (batch: one durable commit). */
export const AddSpansRequest = z.union([AddSpansManyRequest, SpanInputRequest]);
export type AddSpansRequest = z.input<typeof AddSpansRequest>;
/** The acknowledgement: each span's store-issued sequence id (in request order). Durable once received. */
export const SpanAck = z.object({ rolloutId: z.string(), attemptId: z.string(), spanId: z.string(), traceId: z.string(), sequenceId: z.number().int() });
export const AddSpansResponse = z.object({ count: z.number().int(), spans: z.array(SpanAck) });
export type AddSpansResponse = z.infer<typeof AddSpansResponse>;

const spanQueryFields = {
  rolloutId: z.string().min(1),
  /** An attempt id, or `latest`; omitted = all attempts. */
  attemptId: z.string().min(1).optional(),
  name: z.string().optional(),
  /** Only spans with a larger sequence id (tailing). */
  afterSequenceId: z.number().int().optional(),
  limit: z.number().int().min(1).max(MAX_PAGE).optional(),
};
export const SpanSearchRequest = z.object(spanQueryFields).strict();
export type SpanSearchRequest = z.input<typeof SpanSearchRequest>;
export const SpanListQuery = z.object({
  ...spanQueryFields,
  afterSequenceId: z.coerce.number().int().optional(),
  limit: queryInt(1, MAX_PAGE),
});
export const SpanList = z.object({ items: z.array(Span) });
export type SpanList = z.infer<typeof SpanList>;

// --- resources ---
export const AddResourcesRequest = ResourcesInput.strict();
export type AddResourcesRequest = z.input<typeof AddResourcesRequest>;
export const ResourcesListQuery = z.object({ limit: queryInt(1, MAX_PAGE) });
export const ResourcesList = z.object({ items: z.array(Resources) });
export type ResourcesList = z.infer<typeof ResourcesList>;

// --- workers ---
export const WorkerHeartbeatRequest = z
  .object({
    status: WorkerStatus.optional(),
    currentRolloutId: z.string().nullable().optional(),
    currentAttemptId: z.string().nullable().optional(),
    metadata: ClientJsonObject.optional(),
  })
  .strict();
export type WorkerHeartbeatRequest = z.input<typeof WorkerHeartbeatRequest>;
export const WorkerList = z.object({ items: z.array(Worker) });
export type WorkerList = z.infer<typeof WorkerList>;

// --- agents the daemon has seen (from enqueued rollouts; kept in daemon.json) ---
export const KnownAgent = z.object({ agent: z.string(), firstSeen: z.number(), lastSeen: z.number() });
export type KnownAgent = z.infer<typeof KnownAgent>;
export const AgentList = z.object({ items: z.array(KnownAgent) });
export type AgentList = z.infer<typeof AgentList>;

// --- training runs, metrics, transitions ---
export const CreateTrainingRunRequest = z
  .object({
    id: z.string().min(1).optional(),
    agent: z.string().min(1),
    /** What the run does: training (default), a prompt optimization, an evaluation. */
    kind: RunKind.default('train'),
    config: ClientJsonObject.default({}),
    totalSteps: z.number().int().min(0),
  })
  .strict();
export type CreateTrainingRunRequest = z.input<typeof CreateTrainingRunRequest>;
export const UpdateTrainingRunRequest = z
  .object({
    status: TrainingRunStatus.optional(),
    step: z.number().int().min(0).optional(),
    totalSteps: z.number().int().min(0).optional(),
    checkpointDir: z.string().nullable().optional(),
    /** Replaces the summary, keeping the run's label (summary.label) unless `label` is given. */
    summary: ClientJsonObject.optional(),
    /** The user's name for the run (the dashboard's run picker and legends); null or '' clears it. */
    label: z.string().max(200).nullable().optional(),
  })
  .strict();
export type UpdateTrainingRunRequest = z.input<typeof UpdateTrainingRunRequest>;
export const TrainingRunListQuery = z.object({ agent: z.string().optional(), kind: RunKind.optional() });
export const TrainingRunList = z.object({ items: z.array(TrainingRun) });
export type TrainingRunList = z.infer<typeof TrainingRunList>;

export const AddMetricsRequest = z
  .object({
    points: z
      .array(z.object({ step: z.number().int().min(0), name: z.string().min(1), value: z.number() }).strict())
      .min(1)
      .max(MAX_BATCH),
  })
  .strict();
export type AddMetricsRequest = z.input<typeof AddMetricsRequest>;
export const MetricsQuery = z.object({ afterStep: z.coerce.number().int().optional() });
export const MetricList = z.object({ items: z.array(MetricPoint) });
export type MetricList = z.infer<typeof MetricList>;

export const AddTransitionsRequest = z.object({ transitions: z.array(Transition.strict()).min(1).max(MAX_BATCH) }).strict();
export type AddTransitionsRequest = z.input<typeof AddTransitionsRequest>;
export const TransitionListQuery = z.object({
  runId: z.string().optional(),
  rolloutId: z.string().optional(),
  step: z.coerce.number().int().min(0).optional(),
  limit: queryInt(1, MAX_PAGE),
});
export type TransitionListQuery = z.input<typeof TransitionListQuery>;
export const TransitionList = z.object({ items: z.array(Transition) });
export type TransitionList = z.infer<typeof TransitionList>;

/** Count of accepted items for write routes that return nothing else. */
export const CountResponse = z.object({ count: z.number().int() });
export type CountResponse = z.infer<typeof CountResponse>;

export { Statistics };
export type { Attempt, Resources, Rollout, Span, TrainingRun, Transition, Worker, MetricPoint };

/** GET /health (no token needed): who is serving. */
export const Health = z.object({
  status: z.literal('ok'),
  version: z.string(),
  pid: z.number().int(),
  store: z.string(),
  startedAt: z.number(),
  uptimeSeconds: z.number(),
});
export type Health = z.infer<typeof Health>;

/** `POST /v1/agl/policy/load`: serve the model folder `dir` from the next call on (a trainer pushing new weights). */
export const PolicyLoadRequest = z.object({ dir: z.string().min(1) }).strict();
export type PolicyLoadRequest = z.infer<typeof PolicyLoadRequest>;

/** `GET /v1/agl/policy`: what an `agl serve --model` daemon serves. */
export const PolicyInfo = z.object({
  /** The folder or builtin:<size> being served. */
  spec: z.string(),
  engine: z.enum(['tfjs', 'torch']),
  /** The model name the policy answers to (null until the first load finished). */
  name: z.string().nullable(),
  backend: z.string().nullable(),
  /** When the current weights were loaded (ms since the epoch; null: not loaded yet, it loads on the first call). */
  loadedAt: z.number().nullable(),
  /** Loads through /policy/load so far. */
  reloads: z.number().int(),
  /** A checkpoint's policy set: the default policy (serves every role without its own; LoRA's base) and what a call naming no role gets. */
  default: z.string().optional(),
  unassignedCalls: z.enum(['refuse', 'default']).optional(),
  /** ... and each trained policy: its roles (null: every call, a run's one LoRA policy), folder and the training updates it had. */
  policies: z.array(z.object({ name: z.string(), roles: z.array(z.string()).nullable(), folder: z.string(), updates: z.number().int() })).optional(),
  /** `agl train`'s host: the run whose policies it serves live, and each policy's updates so far (they cannot be swapped). */
  training: z
    .object({
      runId: z.string().nullable(),
      policies: z.array(z.object({ name: z.string(), roles: z.array(z.string()).nullable(), updates: z.number().int() })),
    })
    .optional(),
});
export type PolicyInfo = z.infer<typeof PolicyInfo>;

/** `POST /v1/agl/views/groups`: a training step's GRPO groups, or the group of one rollout (protocol/webview-trajectory.ts GroupPage). */
export const GroupQueryRequest = z
  .object({
    runId: z.string().min(1).optional(),
    step: z.number().int().min(0).optional(),
    /** The group this rollout belongs to. */
    rolloutId: z.string().min(1).optional(),
  })
  .strict();
export type GroupQueryRequest = z.infer<typeof GroupQueryRequest>;

/** `POST /v1/agl/views/rollout`: one rollout as the viewer shows it (protocol/webview-trajectory.ts RolloutDetail). */
export const RolloutViewRequest = z
  .object({
    rolloutId: z.string().min(1),
    /** The attempt to show; default the latest. */
    attemptId: z.string().min(1).optional(),
  })
  .strict();
export type RolloutViewRequest = z.infer<typeof RolloutViewRequest>;

/** Rows one page of the viewer's rollouts list answers at most (the virtual list asks for about a screen at a time). */
export const MAX_LIST_ROWS = 200;
const q = rolloutQueryFields;
/**
 * `POST /v1/agl/views/rollouts`: one page of the viewer's rollouts list (protocol/webview-trajectory.ts RolloutPage):
 * the list's filters, search and sort as POST /rollouts/search takes them, and `limit` rows from `offset` (more than
 * MAX_LIST_ROWS are answered as MAX_LIST_ROWS).
 */
export const RolloutsViewRequest = z
  .object({
    ...{ status: q.status, mode: q.mode, agent: q.agent, resourcesVersion: q.resourcesVersion, search: q.search },
    ...{ rewardMin: q.rewardMin, rewardMax: q.rewardMax, runId: q.runId, step: q.step, candidate: q.candidate, promptVersion: q.promptVersion },
    ...{ servedBy: q.servedBy, hasError: q.hasError },
    ...{ sort: q.sort, order: q.order, offset: q.offset, limit: q.limit },
  })
  .strict()
  .superRefine(checkRolloutQuery);
export type RolloutsViewRequest = z.input<typeof RolloutsViewRequest>;

/** `GET /v1/agl/views/headline?agent=`: the agent's headline (protocol/agent-headline.ts AgentHeadline). */
export const HeadlineQuery = z.object({ agent: z.string().min(1) }).strict();
