/**
 * Runs one attempt of an agent function in this process: sets the rollout context, records the root
 * span (`agentlightning.rollout`, with the deterministic id the gateway parents LLM calls under), turns
 * a numeric return value, or `{ reward, feedback, final }`, into the final reward (any other value is recorded on the root
 * span as the episode's answer, `agl.rollout.result`), and flushes every span before reporting the outcome. The
 * runner records the root span of an attempt whose process could not (recordFailedAttempt).
 * Used by the runner's worker processes and by tests.
 */
import { AGL, HEADERS, SPAN } from '../../protocol/spans.js';
import type { RolloutContext, SpanSink } from '../context.js';
import { rolloutStorage } from '../context.js';
import { emitException, emitReward, recordSpan } from '../emit.js';
import { formatTraceparent, rootSpanIdForAttempt, traceIdForAttempt } from '../../protocol/ids.js';
import type { LLM } from '../llm.js';
import type { AgentFunction, RolloutInfo } from '../rollout.js';

export interface AttemptSpec {
  rolloutId: string;
  attemptId: string;
  mode?: RolloutInfo['mode'];
  task: unknown;
  llm: LLM;
  agentName?: string;
}

export interface AttemptOutcome {
  status: 'succeeded' | 'failed';
  /** The final reward when the agent returned a number. */
  reward: number | null;
  /** The agent's return value (JSON-safe copy), when not a number. */
  result?: unknown;
  error?: { message: string; stack?: string };
}

function jsonSafe(v: unknown): unknown {
  try {
    return v === undefined ? undefined : JSON.parse(JSON.stringify(v));
  } catch {
    return String(v);
  }
}

/** The rollout context of an attempt, its spans under the attempt's root span (deterministic ids: protocol/ids.ts). */
function attemptContext(spec: Pick<AttemptSpec, 'rolloutId' | 'attemptId' | 'agentName'> & { llm?: LLM }, sink: SpanSink): RolloutContext {
  return {
    rolloutId: spec.rolloutId,
    attemptId: spec.attemptId,
    traceId: traceIdForAttempt(spec.attemptId),
    parentSpanId: rootSpanIdForAttempt(spec.attemptId),
    sink,
    llm: spec.llm,
    agentName: spec.agentName,
  };
}

/**
 * What an agent's return value scores: a finite number is the final reward; an object whose `reward` is a number is
 * the final reward with its `feedback` (a string) and `final` (true: no LLM judge overrides it), its other keys (if
 * any) the episode's answer. Null for anything else (the episode's answer, no reward). Throws naming the field for a
 * reward that is not finite, a feedback that is not a string or a final that is not a boolean.
 */
function returnedScore(value: unknown): { reward: number; feedback?: string; final?: boolean; result?: Record<string, unknown> } | null {
  if (typeof value === 'number') return Number.isFinite(value) ? { reward: value } : null;
  if (!value || typeof value !== 'object' || Array.isArray(value) || typeof (value as { reward?: unknown }).reward !== 'number') return null;
  const { reward, feedback, final, ...rest } = value as { reward: number; feedback?: unknown; final?: unknown };
  if (!Number.isFinite(reward)) throw new TypeError(`the agent returned { reward: ${reward} }: the reward must be a finite number`);
  if (feedback !== undefined && typeof feedback !== 'string')
    throw new TypeError(`the agent returned { feedback } of type ${feedback === null ? 'null' : typeof feedback}: give the grader's words as a string`);
  if (final !== undefined && typeof final !== 'boolean')
    throw new TypeError(`the agent returned { final } of type ${final === null ? 'null' : typeof final}: true locks the reward against an LLM judge`);
  return {
    reward,
    ...(feedback !== undefined ? { feedback } : {}),
    ...(final ? { final } : {}),
    ...(Object.keys(rest).length ? { result: rest } : {}),
  };
}

export async function runAttempt(agent: AgentFunction, spec: AttemptSpec, sink: SpanSink): Promise<AttemptOutcome> {
  const ctx = attemptContext(spec, sink);
  const startTime = Date.now();
  let outcome: AttemptOutcome;
  try {
    const value = await rolloutStorage.run(ctx, () =>
      agent(spec.task, spec.llm, { rolloutId: spec.rolloutId, attemptId: spec.attemptId, mode: spec.mode ?? 'train' }),
    );
    const score = returnedScore(value);
    if (score) {
      rolloutStorage.run(ctx, () =>
        emitReward(score.reward, { feedback: score.feedback, final: score.final, attributes: score.final ? {} : { [AGL.rewardFinal]: true } }),
      );
      outcome = { status: 'succeeded', reward: score.reward, ...(score.result ? { result: jsonSafe(score.result) } : {}) };
    } else {
      outcome = { status: 'succeeded', reward: null, result: jsonSafe(value) };
    }
  } catch (err) {
    rolloutStorage.run(ctx, () => emitException(err));
    const e = err instanceof Error ? err : new Error(String(err));
    outcome = { status: 'failed', reward: null, error: { message: e.message, stack: e.stack } };
  }
  recordRootSpan(ctx, spec, outcome, startTime);
  await sink.flush();
  return outcome;
}

/** The attempt's root span (`agentlightning.rollout`): the agent, the task, what it returned, how it ended. */
function recordRootSpan(ctx: RolloutContext, spec: Pick<AttemptSpec, 'task' | 'agentName'>, outcome: AttemptOutcome, startTime: number): void {
  recordSpan(
    ctx,
    SPAN.agentRun,
    {
      ...(spec.agentName ? { [AGL.agentName]: spec.agentName, 'gen_ai.agent.name': spec.agentName } : {}),
      'agl.task': JSON.stringify(spec.task) ?? 'null',
      // What it returned, when not a number: the episode's answer (protocol/span-reading.ts episodeAnswer).
      ...(outcome.result !== undefined && outcome.result !== null ? { [AGL.rolloutResult]: JSON.stringify(outcome.result) } : {}),
    },
    {
      spanId: ctx.parentSpanId,
      parentSpanId: null,
      startTime,
      endTime: Date.now(),
      status: outcome.status === 'succeeded' ? { code: 'ok' } : { code: 'error', message: outcome.error?.message },
    },
  );
}

/**
 * Records the root span of an attempt that failed where its agent's process could not record it (the runner killed
 * it at its timeout, it crashed, it never started), with the error as its status: what a prompt optimization reads
 * as the rollout's feedback (protocol/span-reading.ts rolloutFeedback), and the root the agent's spans hang under.
 */
export function recordFailedAttempt(
  spec: Pick<AttemptSpec, 'rolloutId' | 'attemptId' | 'task' | 'agentName'>,
  sink: SpanSink,
  error: { message: string },
  startTime: number,
): void {
  const ctx = attemptContext(spec, sink);
  recordRootSpan(ctx, spec, { status: 'failed', reward: null, error }, startTime);
}

let fetchPatched = false;

/**
 * Adds a W3C `traceparent` header to requests this process makes to its attempt's gateway URL while
 * inside a rollout, so the gateway parents each LLM call under the current operation() span. Installed
 * once per process before the agent module loads (clients capture `fetch` when they are constructed).
 */
export function installTraceparentFetch(): void {
  if (fetchPatched || typeof globalThis.fetch !== 'function') return;
  fetchPatched = true;
  const original = globalThis.fetch;
  globalThis.fetch = function patchedFetch(input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) {
    const ctx = rolloutStorage.getStore();
    const base = ctx?.llm?.baseUrl;
    if (ctx && base) {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : (input as Request).url;
      if (url.startsWith(base)) {
        const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
        if (!headers.has('traceparent')) headers.set('traceparent', formatTraceparent(ctx.traceId, ctx.parentSpanId));
        // The role making the call, so the gateway can serve it from that role's policy.
        if (ctx.agentName && !headers.has(HEADERS.agent)) headers.set(HEADERS.agent, ctx.agentName);
        return original(input, { ...init, headers });
      }
    }
    return original(input, init);
  } as typeof fetch;
}
