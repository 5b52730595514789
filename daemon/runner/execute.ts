/**
 * Runs one claimed rollout attempt end to end: picks the agent and the LLM resource, builds the
 * per-attempt base URL on the gateway, gives the agent its prompts (a candidate's texts, else its promoted ones:
 * attempt-prompts.ts) and its folder, runs it in a warm worker process with heartbeats and the rollout's timeout,
 * forwards its spans to the daemon (recording the root span of an attempt whose process could not), and finishes
 * the attempt (the store then requeues or fails the rollout per its config).
 */
import { dirname } from 'node:path';
import type { Claim } from '../../protocol/api.js';
import type { Rollout, SpanInput } from '../../protocol/store.js';
import { AglHttpError, type AglClient } from '../../client/client.js';
import { attemptBaseUrl, rootSpanIdForAttempt } from '../../protocol/ids.js';
import { BatchingSink, recordFailedAttempt } from '../../sdk/runner/index.js';
import { pickLlmResource, ResourcesCache } from '../store/resources-cache.js';
import { type AgentRef, parseAgentRef, storedAgentId } from './agent-ref.js';
import { attemptPrompts, PromotedPromptsCache } from './attempt-prompts.js';
import type { JobOutcome, RunJob } from './protocol.js';
import type { WorkerKind, WorkerProcess } from './worker-process.js';

export interface ExecuteOptions {
  client: AglClient;
  /** Base URL of the daemon (the gateway lives there). */
  daemonUrl: string;
  cwd: string;
  /** Agent for rollouts that name none. */
  defaultAgent?: string;
  /**
   * What to run for a stored agent id, when the id alone may not find its file from `cwd`: `agl train /abs/agent.ts#a`
   * run from another folder records `agent.ts#a` (the path from the file's project root) and runs the file it named.
   */
  agentSpecs?: Record<string, string>;
  /** Applied when the rollout's config sets no timeout. */
  defaultTimeoutSeconds?: number | null;
  heartbeatMs?: number;
  log?: (message: string) => void;
  /** The resources rollouts run with, cached across attempts (a runner shares one: runnerResourcesCache); default: a fresh one. */
  resources?: ResourcesCache;
  /** The agents' promoted prompts, cached across attempts (a runner shares one); default: a fresh one. */
  promoted?: PromotedPromptsCache;
}

/** Rollouts that pin no resources use the latest, re-read at most this often. */
const LATEST_TTL_MS = 500;

export function runnerResourcesCache(client: AglClient): ResourcesCache {
  return new ResourcesCache(client, LATEST_TTL_MS);
}

export interface ExecuteResult {
  rollout: Rollout | null;
  outcome: JobOutcome;
}

/** What the agent's process runs: its file (TS/JS) or module target (Python), its folder when the runner knows it. */
function runnable(ref: AgentRef): { agent: string; agentDir: string | undefined } {
  if (ref.kind === 'js') return { agent: `${ref.file}${ref.exportName ? `#${ref.exportName}` : ''}`, agentDir: dirname(ref.file) };
  const file = ref.target.slice(0, ref.target.lastIndexOf(':'));
  // `package.module:function` names no file here: the Python helper finds its folder from the module it imports.
  return { agent: ref.target, agentDir: file.endsWith('.py') ? dirname(file) : undefined };
}

/** The job for a claimed attempt: the agent to run, and its LLM (per-attempt gateway URL, model, prompts, folder). */
async function jobFor(claim: Claim, opts: ExecuteOptions): Promise<{ job: RunJob; kind: AgentRef['kind'] }> {
  const { rollout, attempt } = claim;
  const given = rollout.agent !== null && opts.agentSpecs && Object.hasOwn(opts.agentSpecs, rollout.agent) ? opts.agentSpecs[rollout.agent] : undefined;
  const agentSpec = given ?? rollout.agent ?? opts.defaultAgent;
  if (!agentSpec) throw new Error('the rollout names no agent and this runner has no default (agl runner --agent file.ts#export)');
  const ref = parseAgentRef(agentSpec, opts.cwd);
  const agentId = rollout.agent ?? storedAgentId(agentSpec, opts.cwd);
  const [resources, promoted] = await Promise.all([
    (opts.resources ?? runnerResourcesCache(opts.client)).forRollout(rollout),
    (opts.promoted ?? new PromotedPromptsCache(opts.client)).forAgent(agentId),
  ]);
  const llmResource = pickLlmResource(resources, undefined);
  const { agent, agentDir } = runnable(ref);
  const prompts = attemptPrompts(rollout, resources, promoted);
  const job: RunJob = {
    rolloutId: rollout.id,
    attemptId: attempt.id,
    mode: rollout.mode,
    task: rollout.input,
    agent,
    llm: {
      baseUrl: attemptBaseUrl(`${opts.daemonUrl}/v1`, rollout.id, attempt.id),
      model: llmResource?.model ?? 'default',
      samplingParams: llmResource?.samplingParams ?? {},
      apiKey: 'agl',
      ...(Object.keys(prompts).length ? { prompts } : {}),
      ...(agentDir !== undefined ? { agentDir } : {}),
    },
  };
  return { job, kind: ref.kind };
}

export async function executeClaim(claim: Claim, workerFor: (kind: WorkerKind) => WorkerProcess, opts: ExecuteOptions): Promise<ExecuteResult> {
  const { rollout, attempt } = claim;
  const log = opts.log ?? (() => {});
  const startTime = Date.now();
  let outcome: JobOutcome;
  // The worker process batched the agent's spans already: each of its batches is one store request.
  const sink = new BatchingSink(async (spans: SpanInput[]) => {
    await opts.client.addSpans(spans);
  });
  const rootId = rootSpanIdForAttempt(attempt.id);
  let rootSeen = false;
  const heartbeat = setInterval(() => {
    opts.client.heartbeatAttempt(attempt.id).catch((e: Error) => log(`heartbeat of attempt ${attempt.id} failed: ${e.message}`));
  }, opts.heartbeatMs ?? 10_000);
  heartbeat.unref();
  try {
    const { job, kind } = await jobFor(claim, opts);
    const timeoutSeconds = rollout.config.timeoutSeconds ?? opts.defaultTimeoutSeconds ?? null;
    const onSpans = (spans: SpanInput[]) => {
      rootSeen ||= spans.some((s) => s.spanId === rootId);
      sink.forward(spans);
    };
    outcome = await workerFor(kind).run(job, onSpans, timeoutSeconds === null ? null : timeoutSeconds * 1000);
  } catch (err) {
    outcome = { status: 'failed', reward: null, error: { message: (err as Error).message, stack: (err as Error).stack }, unrecorded: true };
  } finally {
    clearInterval(heartbeat);
  }
  // The attempt ended without its root span (its process killed at the timeout, crashed, never started, or the agent
  // not loaded): the runner records it, with the error where a score's reader looks for the rollout's feedback.
  if (outcome.status === 'failed' && outcome.unrecorded && !rootSeen) {
    recordFailedAttempt(
      { rolloutId: rollout.id, attemptId: attempt.id, task: rollout.input },
      sink,
      outcome.error ?? { message: 'the attempt failed' },
      startTime,
    );
  }
  try {
    await sink.flush();
  } catch (err) {
    // Spans the agent emitted could not be stored: the attempt cannot be trusted for training.
    outcome = { status: 'failed', reward: outcome.reward, error: { message: `could not store the attempt's spans: ${(err as Error).message}` } };
  }
  try {
    const finished = await opts.client.finishAttempt(attempt.id, { status: outcome.status, ...(outcome.error ? { error: outcome.error } : {}) });
    return { rollout: finished.rollout, outcome };
  } catch (err) {
    if (err instanceof AglHttpError && err.status === 409) {
      log(`attempt ${attempt.id} had already ended (the store's watchdog marked it): ${err.detail}`);
      return { rollout: await opts.client.getRollout(rollout.id), outcome };
    }
    throw err;
  }
}
