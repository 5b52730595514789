/**
 * Runs one attempt of an agent function in this process: sets the rollout context, records the root
 * span (`agentlightning.rollout`, with the deterministic id the gateway parents LLM calls under), turns
 * a numeric return value into the final reward (any other value is recorded on the root span as the episode's
 * answer, `agl.rollout.result`), and flushes every span before reporting the outcome.
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

export async function runAttempt(agent: AgentFunction, spec: AttemptSpec, sink: SpanSink): Promise<AttemptOutcome> {
  const traceId = traceIdForAttempt(spec.attemptId);
  const rootId = rootSpanIdForAttempt(spec.attemptId);
  const ctx: RolloutContext = {
    rolloutId: spec.rolloutId,
    attemptId: spec.attemptId,
    traceId,
    parentSpanId: rootId,
    sink,
    llm: spec.llm,
    agentName: spec.agentName,
  };
  const startTime = Date.now();
  let outcome: AttemptOutcome;
  try {
    const value = await rolloutStorage.run(ctx, () =>
      agent(spec.task, spec.llm, { rolloutId: spec.rolloutId, attemptId: spec.attemptId, mode: spec.mode ?? 'train' }),
    );
    if (typeof value === 'number' && Number.isFinite(value)) {
      rolloutStorage.run(ctx, () => emitReward(value, { attributes: { [AGL.rewardFinal]: true } }));
      outcome = { status: 'succeeded', reward: value };
    } else {
      outcome = { status: 'succeeded', reward: null, result: jsonSafe(value) };
    }
  } catch (err) {
    rolloutStorage.run(ctx, () => emitException(err));
    const e = err instanceof Error ? err : new Error(String(err));
    outcome = { status: 'failed', reward: null, error: { message: e.message, stack: e.stack } };
  }
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
      spanId: rootId,
      parentSpanId: null,
      startTime,
      endTime: Date.now(),
      status: outcome.status === 'succeeded' ? { code: 'ok' } : { code: 'error', message: outcome.error?.message },
    },
  );
  await sink.flush();
  return outcome;
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
