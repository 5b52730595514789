/**
 * The LightningStore data model: the one definition of rollouts, attempts, spans, resources, workers,
 * training runs and transitions, shared by the daemon, the SDK, the extension and the webviews.
 * Zod schemas validate at every edge; the inferred types are what code inside trusts.
 * Times are epoch milliseconds (floats allowed for sub-ms span timing).
 */
import { z } from 'zod';

export const ROLLOUT_STATUSES = ['queuing', 'preparing', 'running', 'succeeded', 'failed', 'cancelled', 'requeuing'] as const;
export const ATTEMPT_STATUSES = ['preparing', 'running', 'succeeded', 'failed', 'timeout', 'unresponsive'] as const;
export const ROLLOUT_MODES = ['train', 'val', 'test'] as const;
/** Rollout statuses after which nothing changes any more. */
export const TERMINAL_ROLLOUT_STATUSES = ['succeeded', 'failed', 'cancelled'] as const;
/** Attempt statuses that end an attempt. */
export const TERMINAL_ATTEMPT_STATUSES = ['succeeded', 'failed', 'timeout', 'unresponsive'] as const;

export const RolloutStatus = z.enum(ROLLOUT_STATUSES);
export const AttemptStatus = z.enum(ATTEMPT_STATUSES);
export const RolloutMode = z.enum(ROLLOUT_MODES);
export type RolloutStatus = z.infer<typeof RolloutStatus>;
export type AttemptStatus = z.infer<typeof AttemptStatus>;
export type RolloutMode = z.infer<typeof RolloutMode>;

/** Arbitrary JSON value (task inputs, metadata). */
export const Json: z.ZodType<unknown> = z.unknown();

/**
 * Deepest nesting of objects and arrays accepted in free-form JSON a client sends (task inputs, metadata,
 * configs, gateway bodies): deeper values are refused at the edge, before anything stores or re-serialises them.
 */
export const MAX_JSON_DEPTH = 64;

/** The path to the first place where `value` nests deeper than `max` levels, or null (iterative: any depth is safe). */
export function tooDeepAt(value: unknown, max = MAX_JSON_DEPTH): PropertyKey[] | null {
  const stack: { v: unknown; path: PropertyKey[] }[] = [{ v: value, path: [] }];
  while (stack.length > 0) {
    const { v, path } = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (path.length >= max) return path;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) if (v[i] !== null && typeof v[i] === 'object') stack.push({ v: v[i], path: [...path, i] });
    } else
      for (const k in v) {
        const x = (v as Record<string, unknown>)[k];
        if (x !== null && typeof x === 'object') stack.push({ v: x, path: [...path, k] });
      }
  }
  return null;
}

/** `schema`, refusing values nested deeper than MAX_JSON_DEPTH with an issue at the field. */
export function depthLimited<T extends z.ZodType>(schema: T): T {
  return schema.superRefine((v, ctx) => {
    const at = tooDeepAt(v);
    if (at)
      ctx.addIssue({
        code: 'custom',
        message: `nested deeper than ${MAX_JSON_DEPTH} levels (the JSON depth limit) at ${at.slice(0, 3).map(String).join('.')}...`,
      });
  }) as T;
}
/** Free-form JSON a client sends: any value up to MAX_JSON_DEPTH levels deep. */
export const ClientJson = depthLimited(z.unknown());
/** A free-form JSON object a client sends (metadata, configs, summaries), up to MAX_JSON_DEPTH levels deep. */
export const ClientJsonObject = depthLimited(z.record(z.string(), z.unknown()));

export const RolloutConfig = z.object({
  /** An attempt running longer than this becomes `timeout`. null: no limit. */
  timeoutSeconds: z.number().positive().nullable().default(null),
  /** An attempt with no heartbeat and no span for this long becomes `unresponsive`. null: never. */
  unresponsiveSeconds: z.number().positive().nullable().default(null),
  /** Attempts allowed in total (1 = no retry). */
  maxAttempts: z.number().int().min(1).max(100).default(1),
  /** Attempt end statuses that cause a retry while attempts remain. */
  retryOn: z.array(z.enum(['failed', 'timeout', 'unresponsive'])).default([]),
});
export type RolloutConfig = z.infer<typeof RolloutConfig>;

export const Rollout = z.object({
  id: z.string(),
  input: Json,
  mode: RolloutMode,
  status: RolloutStatus,
  /** Which agent runs it: `path/to/file.ts#exportName` or `module:function` for Python; null = any worker's default. */
  agent: z.string().nullable(),
  /** Resources the rollout must run with; null = the latest at claim time. */
  resourcesId: z.string().nullable(),
  config: RolloutConfig,
  metadata: z.record(z.string(), z.unknown()),
  /** Number of attempts started so far. */
  attemptCount: z.number().int().min(0),
  createdAt: z.number(),
  updatedAt: z.number(),
  /** When the last attempt ended and the rollout reached a terminal status. */
  endedAt: z.number().nullable(),
});
export type Rollout = z.infer<typeof Rollout>;

/** How the rollouts list can be sorted: creation (the default), the latest attempt's duration, final reward, status. */
export const ROLLOUT_SORTS = ['createdAt', 'duration', 'reward', 'status'] as const;
export const RolloutSort = z.enum(ROLLOUT_SORTS);
export type RolloutSort = z.infer<typeof RolloutSort>;

/**
 * What the rollouts list shows beside a rollout, kept by the store so a page needs no span reads.
 * Duration is the latest attempt's run time (its start to its end), the same number the detail view shows
 * for that attempt: time spent queued before it is `startedAt - createdAt`, not part of it.
 */
export const RolloutSummary = z.object({
  /** The latest attempt's final reward (span-reading.ts's rule); null when it emitted none. */
  finalReward: z.number().nullable(),
  /** When the latest attempt started; null before the first claim. */
  startedAt: z.number().nullable(),
  /** The latest attempt's end minus its start; null while it runs or before it starts. */
  durationMs: z.number().nullable(),
  /** The latest attempt's error message, if it recorded one. */
  error: z.string().nullable(),
  /** Spans of the latest attempt with an error status (a tool that raised, say). */
  errorSpans: z.number().int().min(0),
  /**
   * What answered the latest attempt's LLM calls (protocol/served-by.ts, the gateway's `agl.served.*` on each call), in
   * the order first seen, at most MAX_SERVED_MODELS; empty when no call says.
   */
  served: z.array(z.object({ name: z.string(), updates: z.number().nullable(), upstream: z.boolean() })),
});
export type RolloutSummary = z.infer<typeof RolloutSummary>;

/** What a client sends to enqueue (or start) a rollout. */
export const RolloutInput = z.object({
  input: ClientJson,
  mode: RolloutMode.default('train'),
  agent: z.string().min(1).nullable().default(null),
  resourcesId: z.string().nullable().default(null),
  config: RolloutConfig.partial().default({}),
  metadata: ClientJsonObject.default({}),
});
export type RolloutInput = z.input<typeof RolloutInput>;
export type RolloutInputParsed = z.output<typeof RolloutInput>;

export const Attempt = z.object({
  id: z.string(),
  rolloutId: z.string(),
  /** 1 for the first attempt of a rollout, 2 for its first retry... */
  sequence: z.number().int().min(1),
  workerId: z.string().nullable(),
  status: AttemptStatus,
  startedAt: z.number(),
  endedAt: z.number().nullable(),
  lastHeartbeat: z.number(),
  error: z.object({ message: z.string(), stack: z.string().optional() }).nullable(),
});
export type Attempt = z.infer<typeof Attempt>;

export const AttributeValue = z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(z.union([z.string(), z.number(), z.boolean(), z.null()]))]);
export type AttributeValue = z.infer<typeof AttributeValue>;
export const Attributes = z.record(z.string(), AttributeValue);
export type Attributes = z.infer<typeof Attributes>;

export const SpanEvent = z.object({ name: z.string(), time: z.number(), attributes: Attributes.default({}) });
export const SpanStatus = z.object({ code: z.enum(['unset', 'ok', 'error']), message: z.string().optional() });
export const SpanKind = z.enum(['internal', 'server', 'client', 'producer', 'consumer']);

/** A span as stored: keyed by (rolloutId, attemptId, sequenceId); sequenceId is issued by the store per rollout, monotonic. */
export const Span = z.object({
  rolloutId: z.string(),
  attemptId: z.string(),
  sequenceId: z.number().int(),
  traceId: z.string(),
  spanId: z.string(),
  parentSpanId: z.string().nullable(),
  name: z.string(),
  kind: SpanKind,
  startTime: z.number(),
  endTime: z.number().nullable(),
  attributes: Attributes,
  events: z.array(SpanEvent),
  status: SpanStatus,
  resource: Attributes,
});
export type Span = z.infer<typeof Span>;

/** A span as a client sends it: the store issues sequenceId; ids are generated when missing. */
export const SpanInput = Span.omit({ sequenceId: true }).extend({
  traceId: z.string().min(1).optional(),
  spanId: z.string().min(1).optional(),
  parentSpanId: z.string().nullable().default(null),
  kind: SpanKind.default('internal'),
  endTime: z.number().nullable().default(null),
  attributes: Attributes.default({}),
  events: z.array(SpanEvent).default([]),
  status: SpanStatus.default({ code: 'unset' }),
  resource: Attributes.default({}),
});
export type SpanInput = z.input<typeof SpanInput>;
export type SpanInputParsed = z.output<typeof SpanInput>;

/**
 * SpanInput's defaults applied to a valid input, as the schema's parse applies them (without its checks):
 * the one place a span's defaults are written, used by the stores (with the ids they issue), the daemon's
 * fast accept-path for span batches and the HTTP client (rebuilding the stored spans from the daemon's acks).
 */
export function withSpanDefaults(input: SpanInput): SpanInputParsed {
  const out: SpanInputParsed = {
    rolloutId: input.rolloutId,
    attemptId: input.attemptId,
    parentSpanId: input.parentSpanId ?? null,
    name: input.name,
    kind: input.kind ?? 'internal',
    startTime: input.startTime,
    endTime: input.endTime ?? null,
    attributes: input.attributes ?? {},
    events: (input.events ?? []).map((e) => ({ name: e.name, time: e.time, attributes: e.attributes ?? {} })),
    status: input.status ?? { code: 'unset' },
    resource: input.resource ?? {},
  };
  if (input.traceId !== undefined) out.traceId = input.traceId;
  if (input.spanId !== undefined) out.spanId = input.spanId;
  return out;
}

export const SamplingParams = z.object({
  temperature: z.number().min(0).max(5).optional(),
  topP: z.number().gt(0).max(1).optional(),
  topK: z.number().int().min(0).optional(),
  maxTokens: z.number().int().min(1).optional(),
  stop: z.array(z.string()).optional(),
  seed: z.number().int().optional(),
});
export type SamplingParams = z.infer<typeof SamplingParams>;

export const LlmResource = z.object({
  type: z.literal('llm'),
  /** OpenAI-compatible base URL (ends with /v1). For the local policy this is the daemon's gateway. */
  endpoint: z.string(),
  model: z.string(),
  samplingParams: SamplingParams.default({}),
  /** `local` = the daemon's policy model; `upstream` = forwarded with the openai client. */
  backend: z.enum(['local', 'upstream']).default('local'),
  /** For upstream: where the gateway forwards to (the endpoint agents see is always the gateway). */
  upstreamUrl: z.string().optional(),
  /** Name of an environment variable holding the upstream API key (never the key itself). */
  apiKeyEnv: z.string().optional(),
  /**
   * For upstream: ask the server for token ids and log-probs (vLLM's `return_token_ids`, `logprobs`) so
   * calls are recorded with them. Only for servers that accept those fields (OpenAI itself rejects them).
   */
  requestTokenIds: z.boolean().optional(),
  /**
   * One policy per role: the model that serves each role's calls (the role is the call's `x-agl-agent` header, set by
   * the SDK from the current operation's agent name). Roles not listed get `model`.
   */
  roleModels: z.record(z.string(), z.string()).optional(),
  /** With roleModels: a call that names no role is refused (400 naming the header), or served by `model`. */
  unassignedRole: z.enum(['refuse', 'default']).optional(),
});
export const PromptTemplateResource = z.object({
  type: z.literal('prompt_template'),
  template: z.string(),
  engine: z.enum(['jinja', 'f-string']).default('f-string'),
});
export const Resource = z.discriminatedUnion('type', [LlmResource, PromptTemplateResource]);
export type LlmResource = z.infer<typeof LlmResource>;
export type PromptTemplateResource = z.infer<typeof PromptTemplateResource>;
export type Resource = z.infer<typeof Resource>;

export const Resources = z.object({
  id: z.string(),
  /** Monotonic per store, starting at 1. */
  version: z.number().int().min(1),
  createdAt: z.number(),
  resources: z.record(z.string(), Resource),
  metadata: z.record(z.string(), z.unknown()),
});
export type Resources = z.infer<typeof Resources>;
export const ResourcesInput = z.object({
  resources: z.record(z.string(), Resource),
  metadata: ClientJsonObject.default({}),
});
export type ResourcesInput = z.input<typeof ResourcesInput>;

export const WorkerStatus = z.enum(['idle', 'busy', 'offline']);
export const Worker = z.object({
  id: z.string(),
  status: WorkerStatus,
  lastHeartbeat: z.number(),
  currentRolloutId: z.string().nullable(),
  currentAttemptId: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()),
});
export type Worker = z.infer<typeof Worker>;

/**
 * The run kinds the store holds: training runs (`agl train`), prompt optimizations (`agl optimize`: protocol/prompts.ts),
 * evaluations (`agl eval`). A run's metrics, dashboard and CodeLens numbers are a training run's; the other kinds keep
 * their own records beside it. Runs stored before kinds existed are training runs.
 */
export const RUN_KINDS = ['train', 'optimize', 'eval'] as const;
export const RunKind = z.enum(RUN_KINDS);
export type RunKind = z.infer<typeof RunKind>;

/** A run of the agent: a training run (one `agl train`, its metrics plotted live by the dashboard), an optimization or an evaluation. */
export const TrainingRunStatus = z.enum(['running', 'succeeded', 'failed', 'cancelled']);
export const TrainingRun = z.object({
  id: z.string(),
  agent: z.string(),
  /** What the run does (default 'train': every run recorded before kinds existed). */
  kind: RunKind.default('train'),
  status: TrainingRunStatus,
  config: z.record(z.string(), z.unknown()),
  /** Steps done so far and planned. */
  step: z.number().int().min(0),
  totalSteps: z.number().int().min(0),
  checkpointDir: z.string().nullable(),
  summary: z.record(z.string(), z.unknown()),
  createdAt: z.number(),
  updatedAt: z.number(),
});
export type TrainingRun = z.infer<typeof TrainingRun>;

/** One metric value at one step, e.g. { step: 3, name: 'reward/mean', value: 0.41 }. */
export const MetricPoint = z.object({ runId: z.string(), step: z.number().int().min(0), name: z.string(), value: z.number(), time: z.number() });
export type MetricPoint = z.infer<typeof MetricPoint>;

/**
 * One transition (= one LLM call) as the algorithm used it: the credit it was assigned and its GRPO
 * advantage, written back so the viewer can show them next to the call's span.
 */
export const Transition = z.object({
  runId: z.string(),
  step: z.number().int().min(0),
  rolloutId: z.string(),
  attemptId: z.string(),
  /** The LLM-call span this transition came from. */
  spanId: z.string(),
  /** GRPO group key (normally the task id). */
  groupId: z.string(),
  /** 0-based position of the call in its trajectory. */
  index: z.number().int().min(0),
  agentName: z.string().nullable(),
  reward: z.number().nullable(),
  credit: z.number(),
  advantage: z.number(),
  promptTokens: z.number().int().min(0),
  completionTokens: z.number().int().min(0),
});
export type Transition = z.infer<typeof Transition>;

export const Statistics = z.object({
  rollouts: z.record(RolloutStatus, z.number().int()),
  attempts: z.record(AttemptStatus, z.number().int()),
  spans: z.number().int(),
  resources: z.number().int(),
  workers: z.number().int(),
  trainingRuns: z.number().int(),
});
export type Statistics = z.infer<typeof Statistics>;

/**
 * What a run writes into each of its rollouts' metadata (daemon/algorithm/trainer.ts, rollouts.ts; a prompt
 * optimization's candidate and split), what the stores index and filter by (`RolloutQuery.runId` / `.step` /
 * `.candidate`), and what the viewer reads to find a rollout's GRPO group: the keys are named here once. Other keys a
 * user sets are kept as they are.
 */
export const ROLLOUT_METADATA_KEYS = {
  runId: 'runId',
  step: 'step',
  taskId: 'taskId',
  sample: 'sample',
  samplingRound: 'samplingRound',
  candidate: 'candidate',
  split: 'split',
} as const;
export const RolloutMetadata = z
  .object({
    /** The run that enqueued the rollout (a training run, or a prompt optimization). */
    runId: z.string().optional(),
    /** The run's step (training rollouts), or the step it was validated at (validation rollouts). */
    step: z.number().int().optional(),
    /** The task's id: the GRPO group is the run's rollouts of one task at one step. */
    taskId: z.string().optional(),
    /** Which of the group's samples (0..groupSize-1). */
    sample: z.number().int().optional(),
    /** DAPO dynamic sampling: the extra round that rolled it out (absent for the step's scheduled tasks). */
    samplingRound: z.number().int().optional(),
    /** A prompt optimization's rollout: the candidate (protocol/prompts.ts PromptCandidate id) whose texts it ran with. */
    candidate: z.string().optional(),
    /** ... and the task set it scored the candidate on (a minibatch of train, the val set, the held-out test set). */
    split: RolloutMode.optional(),
  })
  .passthrough();
export type RolloutMetadata = z.infer<typeof RolloutMetadata>;

/** A rollout's training metadata, read safely: keys with the wrong type are left out, other keys kept. */
export function readRolloutMetadata(metadata: Record<string, unknown>): RolloutMetadata {
  const out: Record<string, unknown> = { ...metadata };
  for (const [key, schema] of Object.entries(RolloutMetadata.shape)) {
    if (key in out && !schema.safeParse(out[key]).success) delete out[key];
  }
  return out as RolloutMetadata;
}
