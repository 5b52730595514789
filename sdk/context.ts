/**
 * The rollout context an agent runs in, carried through awaits with AsyncLocalStorage: which rollout
 * and attempt, the current parent span (the rollout's root, or the innermost `operation()`), and the
 * sink spans go to. Emitters outside any rollout do nothing (an agent called from a plain test).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { SpanInput } from '../protocol/store.js';

/** Where the SDK's spans go: batched to the daemon over HTTP, or to the runner over IPC. */
export interface SpanSink {
  add(span: SpanInput): void;
  /** Resolves when every span added so far has been delivered. */
  flush(): Promise<void>;
}

export interface RolloutContext {
  rolloutId: string;
  attemptId: string;
  traceId: string;
  /** The span new spans become children of. */
  parentSpanId: string;
  sink: SpanSink;
  /** The attempt's LLM resource (sdk/llm.ts; only its base URL is read here: requests to it carry the trace context). */
  llm?: { readonly baseUrl: string };
  /** Name of the (sub-)agent in charge, recorded on spans for selective optimization. */
  agentName?: string;
}

/**
 * One storage per process, even when the agent imports the SDK through another path than the runner
 * (sources vs the bundled dist/sdk.mjs): otherwise emitReward() would not see the runner's context.
 */
const STORAGE_KEY = Symbol.for('agent-lightning.rollout-storage');
const globalSlot = globalThis as unknown as Record<symbol, AsyncLocalStorage<RolloutContext> | undefined>;
export const rolloutStorage: AsyncLocalStorage<RolloutContext> = (globalSlot[STORAGE_KEY] ??= new AsyncLocalStorage<RolloutContext>());

export function currentRollout(): RolloutContext | undefined {
  return rolloutStorage.getStore();
}

/**
 * The role (`operation(..., { agentName })`) outside any rollout: agent code run by a script of its own against a
 * daemon serving one policy per role (`agl serve --model <checkpoint>`) still names each call's role (roleFetch).
 */
const ROLE_KEY = Symbol.for('agent-lightning.role-storage');
const roleSlot = globalThis as unknown as Record<symbol, AsyncLocalStorage<string> | undefined>;
export const roleStorage: AsyncLocalStorage<string> = (roleSlot[ROLE_KEY] ??= new AsyncLocalStorage<string>());

/** The agent role of the innermost operation(), inside a rollout or not. */
export function currentAgentName(): string | undefined {
  return rolloutStorage.getStore()?.agentName ?? roleStorage.getStore();
}
