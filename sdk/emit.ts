/**
 * Emitters an agent calls: rewards, messages, objects, exceptions, and `operation()` for custom
 * (nested) spans. Each becomes a span in the current rollout's tree; outside a rollout they are no-ops.
 */
import { AGL, AGL_V0_REWARD_PREFIX, GENAI, SPAN } from '../protocol/spans.js';
import type { Attributes, AttributeValue } from '../protocol/store.js';
import { type RolloutContext, currentRollout, roleStorage, rolloutStorage } from './context.js';
import { newSpanId } from '../protocol/ids.js';

function toAttr(v: unknown): AttributeValue {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  if (Array.isArray(v) && v.every((x) => x === null || ['string', 'number', 'boolean'].includes(typeof x))) return v as AttributeValue;
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

function record(
  ctx: RolloutContext,
  name: string,
  attributes: Attributes,
  extra: {
    spanId?: string;
    startTime?: number;
    endTime?: number;
    status?: { code: 'unset' | 'ok' | 'error'; message?: string };
    parentSpanId?: string | null;
  } = {},
): string {
  const now = Date.now();
  const spanId = extra.spanId ?? newSpanId();
  ctx.sink.add({
    rolloutId: ctx.rolloutId,
    attemptId: ctx.attemptId,
    traceId: ctx.traceId,
    spanId,
    parentSpanId: extra.parentSpanId !== undefined ? extra.parentSpanId : ctx.parentSpanId,
    name,
    kind: 'internal',
    startTime: extra.startTime ?? now,
    endTime: extra.endTime ?? now,
    attributes: { [AGL.rolloutId]: ctx.rolloutId, [AGL.attemptId]: ctx.attemptId, ...(ctx.agentName ? { [AGL.agentName]: ctx.agentName } : {}), ...attributes },
    events: [],
    status: extra.status ?? { code: 'ok' },
    resource: { 'service.name': 'agl-sdk' },
  });
  return spanId;
}

export interface RewardOptions {
  /** The component that is the primary value, when named components are given. */
  primaryKey?: string;
  /** What the grader said about the answer, in words (`agl.reward.feedback`): what a prompt optimization reflects on. */
  feedback?: string;
  /**
   * This is the rollout's final reward, and it stands: an LLM judge (train.yaml `judge:`) neither replaces nor adds to
   * it (`agl.reward.final` and `agl.reward.locked`). For rollouts the agent can grade exactly, beside ones it cannot.
   */
  final?: boolean;
  attributes?: Record<string, unknown>;
}

/**
 * Records a reward. A number, or named components whose first entry (or `primaryKey`) is the primary
 * value the trainer uses: emitReward({ exact: 1, format: 0.5 }); with `feedback`, what was right or wrong, in
 * words: emitReward(0, { feedback: 'the total misses the shipping fee' }); with `final: true`, the rollout's final reward,
 * which no LLM judge overrides: emitReward(1, { final: true }). Also written in agent-lightning v0's shape
 * (agentlightning.reward.{i}.name / .value) so v0 tools read it too.
 */
export function emitReward(reward: number | Record<string, number>, opts: RewardOptions = {}): void {
  const ctx = currentRollout();
  if (!ctx) return;
  if (opts.feedback !== undefined && typeof opts.feedback !== 'string')
    throw new TypeError(`emitReward: feedback must be a string (what the grader said), got ${typeof opts.feedback}`);
  if (opts.final !== undefined && typeof opts.final !== 'boolean') throw new TypeError(`emitReward: final must be true or false, got ${typeof opts.final}`);
  const entries: [string, number][] = typeof reward === 'number' ? [['reward', reward]] : Object.entries(reward);
  if (entries.length === 0) throw new TypeError('emitReward: give a number or a non-empty object of named numbers');
  for (const [k, v] of entries)
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new TypeError(`emitReward: reward '${k}' is ${String(v)}, not a finite number`);
  if (opts.primaryKey) {
    const i = entries.findIndex(([k]) => k === opts.primaryKey);
    if (i < 0) throw new TypeError(`emitReward: primaryKey '${opts.primaryKey}' is not among ${entries.map(([k]) => k).join(', ')}`);
    entries.unshift(...entries.splice(i, 1));
  }
  const attrs: Attributes = { [AGL.rewardValue]: entries[0][1], [AGL.rewardName]: entries[0][0] };
  if (entries.length > 1) attrs[AGL.rewardComponents] = JSON.stringify(Object.fromEntries(entries));
  entries.forEach(([k, v], i) => {
    attrs[`${AGL_V0_REWARD_PREFIX}.${i}.name`] = k;
    attrs[`${AGL_V0_REWARD_PREFIX}.${i}.value`] = v;
  });
  if (opts.feedback !== undefined) attrs[AGL.rewardFeedback] = opts.feedback;
  if (opts.final) Object.assign(attrs, { [AGL.rewardFinal]: true, [AGL.rewardLocked]: true });
  for (const [k, v] of Object.entries(opts.attributes ?? {})) attrs[k] = toAttr(v);
  record(ctx, SPAN.reward, attrs);
}

export function emitMessage(message: string, attributes: Record<string, unknown> = {}): void {
  const ctx = currentRollout();
  if (!ctx) return;
  record(ctx, SPAN.message, { [AGL.message]: message, ...Object.fromEntries(Object.entries(attributes).map(([k, v]) => [k, toAttr(v)])) });
}

export function emitObject(object: unknown, attributes: Record<string, unknown> = {}): void {
  const ctx = currentRollout();
  if (!ctx) return;
  record(ctx, SPAN.object, {
    [AGL.objectJson]: JSON.stringify(object) ?? 'null',
    ...Object.fromEntries(Object.entries(attributes).map(([k, v]) => [k, toAttr(v)])),
  });
}

export function emitException(error: unknown, attributes: Record<string, unknown> = {}): void {
  const ctx = currentRollout();
  if (!ctx) return;
  const e = error instanceof Error ? error : new Error(String(error));
  record(
    ctx,
    SPAN.exception,
    {
      [AGL.exceptionType]: e.name,
      [AGL.exceptionMessage]: e.message,
      [AGL.exceptionStacktrace]: e.stack ?? '',
      ...Object.fromEntries(Object.entries(attributes).map(([k, v]) => [k, toAttr(v)])),
    },
    { status: { code: 'error', message: e.message } },
  );
}

export interface OperationOptions {
  attributes?: Record<string, unknown>;
  /** Marks the spans inside as made by this (sub-)agent (selective optimization, per-agent views). */
  agentName?: string;
  /** Record it as a tool execution (GenAI `execute_tool`) instead of a generic operation: its `input` and
   *  what `fn` returns are kept as `gen_ai.tool.call.arguments` / `.result`, so viewers show name(input) -> output. */
  tool?: boolean;
  input?: unknown;
}

/** A tool's input or output as an attribute: strings as they are, anything else as JSON, cut at 16k characters. */
function toolPayload(v: unknown): string {
  const text =
    typeof v === 'string'
      ? v
      : (() => {
          try {
            return JSON.stringify(v) ?? String(v);
          } catch {
            return String(v);
          }
        })();
  return text.length > 16_000 ? `${text.slice(0, 16_000)}…` : text;
}

/**
 * Runs `fn` inside a custom span named `name`; spans emitted and LLM calls made inside become its
 * children. The span records the outcome (error status when fn throws) and its duration.
 */
export async function operation<T>(name: string, fn: () => T | Promise<T>, opts: OperationOptions = {}): Promise<T> {
  const ctx = currentRollout();
  if (!ctx) return opts.agentName ? roleStorage.run(opts.agentName, fn) : fn();
  const spanId = newSpanId();
  const startTime = Date.now();
  const inner: RolloutContext = { ...ctx, parentSpanId: spanId, agentName: opts.agentName ?? ctx.agentName };
  const attrs: Attributes = { 'agl.operation.name': name, ...Object.fromEntries(Object.entries(opts.attributes ?? {}).map(([k, v]) => [k, toAttr(v)])) };
  if (opts.tool) {
    attrs[GENAI.operationName] = 'execute_tool';
    attrs[GENAI.toolName] = name;
    if (opts.input !== undefined) attrs[GENAI.toolCallArguments] = toolPayload(opts.input);
  }
  if (opts.agentName) attrs[AGL.agentName] = opts.agentName;
  try {
    const result = await rolloutStorage.run(inner, fn);
    if (opts.tool) {
      attrs[AGL.toolSucceeded] = true;
      if (result !== undefined) attrs[GENAI.toolCallResult] = toolPayload(result);
    }
    record(ctx, opts.tool ? SPAN.tool : name, attrs, { spanId, startTime, endTime: Date.now() });
    return result;
  } catch (err) {
    if (opts.tool) attrs[AGL.toolSucceeded] = false;
    record(ctx, opts.tool ? SPAN.tool : name, attrs, {
      spanId,
      startTime,
      endTime: Date.now(),
      status: { code: 'error', message: (err as Error)?.message ?? String(err) },
    });
    throw err;
  }
}

/** Internal: the runner writes the rollout's root span through the same path. */
export const recordSpan = record;
