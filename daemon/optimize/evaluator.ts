/**
 * The Evaluator: scores a candidate on tasks of a split by rolling them out through the store and the runner, as the
 * agent runs anywhere else. Each rollout runs with the candidate's resources version (the run's LLM resource and one
 * prompt_template per prompt name, which the agent's `llm.prompt(name, ...)` returns), carries RolloutMetadata
 * { runId, candidate, taskId, split }, and its score is its final reward, its feedback the reward's feedback (a
 * rollout that failed or timed out scores 0 with its error as feedback: protocol/span-reading.ts rolloutFeedback).
 * The run's rollouts are the (candidate, task, split) score cache: a score asked for again, by the search or by a
 * resumed run replaying it, is read back from the store, never rolled out twice. Each score asked for the first time
 * is counted in the budget (budget.ts), cached or not, so a resumed run takes the same decisions. With a grader of the
 * run's own (`grade`: the LLM judge of `agl optimize --judge-*`), each ended rollout is graded before its score is
 * read: the grade is recorded on the rollout as its final reward and feedback (a graded rollout read back is not graded again).
 */
import { callMessages, messageText } from '../../protocol/episode-text.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import type { PromptCandidate } from '../../protocol/prompts.js';
import { finalReward, isLlmCallSpan, rolloutFeedback, rolloutScore } from '../../protocol/span-reading.js';
import { readRolloutMetadata, type Rollout, type RolloutInput, type Span } from '../../protocol/store.js';
import type { Task } from '../algorithm/rollouts.js';
import { isTerminalRollout } from '../store/common.js';
import type { Budget } from './budget.js';

export type Split = 'train' | 'val' | 'test';

/** One task's score under one candidate. */
export interface TaskScore {
  taskId: string;
  score: number;
  feedback: string;
  rolloutId: string;
}

/** What a candidate's rollout of a task did, for the optimizer to read: the input, the LLM calls, the score and feedback. */
export interface TaskTrace extends TaskScore {
  input: unknown;
  calls: { messages: { role: string; content: string }[]; answer: string }[];
}

/** How the search scores candidates: the store and runner below, or any other way to get the same scores. */
export interface Evaluator {
  /** Scores of `tasks` (in their order) under the candidate; cached ones read back, the others rolled out. */
  score(candidate: PromptCandidate, tasks: readonly Task[], split: Split): Promise<TaskScore[]>;
  /** How many of these scores were never asked for (what scoring them adds to the budget). */
  unasked(candidate: PromptCandidate, tasks: readonly Task[], split: Split): number;
  /** The scored rollouts' traces (call after `score`). */
  traces(candidate: PromptCandidate, tasks: readonly Task[], split: Split): Promise<TaskTrace[]>;
}

export interface StoreEvaluatorOptions {
  store: LightningStore;
  runId: string;
  /** The agent's stable id (what the runner claims for). */
  agent: string;
  budget: Budget;
  rolloutTimeoutSeconds: number;
  signal?: AbortSignal;
  /** Told after each rollout this run rolled out ended. */
  onRollout?: () => void;
  /** Grades an ended rollout by recording its reward (and feedback) on it, before its score is read; called for every one. */
  grade?: (r: Rollout) => Promise<void>;
  log?: (line: string) => void;
}

const key = (candidate: string, taskId: string, split: Split) => `${candidate}\u0000${split}\u0000${taskId}`;
/**
 * The config of an optimization's rollouts: a rollout running past the timeout fails (and scores 0); one whose attempt
 * the watchdog finds dead (its runner was killed: no heartbeat) is tried again, once, by the store.
 */
export function rolloutConfig(timeoutSeconds: number): RolloutInput['config'] {
  return { timeoutSeconds, unresponsiveSeconds: Math.max(30, timeoutSeconds), maxAttempts: 2, retryOn: ['unresponsive'] };
}
/**
 * A resumed run's rollouts that were under way when its last process was killed: the runner workers holding their
 * attempts died with it (its own host's, or its own workers against a daemon), so nobody finishes them, and the
 * health check would end them as timed out: a 0 where a run never interrupted scored what the agent did, and the
 * replay would decide otherwise from there. They are cancelled before this process's host (and its watchdog) starts,
 * and the Evaluator rolls their tasks out again: a kill spends at most the rollouts in flight twice. Rollouts still
 * queuing are kept (this process's workers claim them). How many were cancelled.
 */
export async function cancelInFlight(store: LightningStore, runId: string): Promise<number> {
  let cancelled = 0;
  let cursor: string | undefined;
  do {
    const page = await store.queryRollouts({ runId, status: ['preparing', 'running'], order: 'asc', limit: 500, ...(cursor ? { cursor } : {}) });
    for (const r of page.items) {
      try {
        await store.cancelRollout(r.id);
        cancelled++;
      } catch (e) {
        // It ended meanwhile (a daemon's runner finished it): its outcome stands.
        if (!isTerminalRollout((await store.getRollout(r.id))?.status ?? 'cancelled')) throw e;
      }
    }
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return cancelled;
}

/** How long rollouts may sit unclaimed before the run says it waits for runner workers. */
const STALL_MS = 60_000;
/** How much of one message, and of one example, the optimizer is shown. */
const MESSAGE_CHARS = 1500;

export class StoreEvaluator implements Evaluator {
  /** Each (candidate, split, task)'s rollout in the store: the cache. */
  private readonly rollouts = new Map<string, string>();
  private readonly scores = new Map<string, TaskScore>();
  private readonly traceCache = new Map<string, TaskTrace>();
  private readonly asked = new Set<string>();
  /** Rollouts this process enqueued (the summary's count adds those of earlier processes). */
  enqueued = 0;

  constructor(private readonly o: StoreEvaluatorOptions) {}

  /** Reads the run's rollouts (a resumed run's): the cache, and how many the run has spent in all. */
  async load(): Promise<number> {
    let cursor: string | undefined;
    let count = 0;
    do {
      const page = await this.o.store.queryRollouts({ runId: this.o.runId, order: 'asc', limit: 500, ...(cursor ? { cursor } : {}) });
      for (const r of page.items) {
        count++;
        const m = readRolloutMetadata(r.metadata);
        if (r.status === 'cancelled' || typeof m.candidate !== 'string' || !m.taskId || !m.split) continue;
        this.rollouts.set(key(m.candidate, m.taskId, m.split as Split), r.id);
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return count;
  }

  unasked(candidate: PromptCandidate, tasks: readonly Task[], split: Split): number {
    return new Set(tasks.map((t) => key(candidate.id, t.id, split)).filter((k) => !this.asked.has(k))).size;
  }

  /**
   * A task may come twice in one batch (a minibatch across the end of an epoch of the train shuffle): it is rolled
   * out, counted and waited for once, and its score given at each of its places.
   */
  async score(candidate: PromptCandidate, tasks: readonly Task[], split: Split): Promise<TaskScore[]> {
    if (!candidate.resourcesId) throw new Error(`candidate ${candidate.id} has no resources version: it was refused, never to be rolled out`);
    const keys = tasks.map((t) => key(candidate.id, t.id, split));
    const first = (k: string, i: number) => keys.indexOf(k) === i;
    const fresh = keys.filter((k, i) => first(k, i) && !this.asked.has(k));
    this.o.budget.spend(fresh.length);
    for (const k of fresh) this.asked.add(k);
    const missing = tasks.filter((_, i) => first(keys[i]!, i) && !this.scores.has(keys[i]!) && !this.rollouts.has(keys[i]!));
    if (missing.length) await this.enqueue(candidate, missing, split);
    const pending = keys.filter((k, i) => first(k, i) && !this.scores.has(k)).map((k) => this.rollouts.get(k)!);
    const waited = { agent: this.o.agent, signal: this.o.signal, onRollout: () => this.o.onRollout?.(), log: this.o.log };
    const ended = await waitForEnded(this.o.store, pending, waited);
    if (this.o.grade) await Promise.all(ended.map((r) => this.o.grade!(r)));
    // A stop during the grading leaves some ungraded: no score is read from them (the resumed run grades and reads them).
    if (this.o.signal?.aborted) throw new Error('interrupted');
    for (const r of ended) await this.read(r);
    // A rollout cancelled from outside is rolled out again (it scores nothing).
    const lost = tasks.filter((_, i) => !this.scores.has(keys[i]!));
    if (lost.length) {
      for (const t of lost) this.rollouts.delete(key(candidate.id, t.id, split));
      return this.score(candidate, tasks, split);
    }
    return keys.map((k) => this.scores.get(k)!);
  }

  async traces(candidate: PromptCandidate, tasks: readonly Task[], split: Split): Promise<TaskTrace[]> {
    const out: TaskTrace[] = [];
    for (const t of tasks) {
      const k = key(candidate.id, t.id, split);
      let trace = this.traceCache.get(k);
      if (!trace) {
        const s = this.scores.get(k);
        if (!s) throw new Error(`task ${t.id} of candidate ${candidate.id} (${split}) is not scored yet`);
        const spans = await this.o.store.querySpans({ rolloutId: s.rolloutId, attemptId: 'latest' });
        trace = { ...s, input: t.input, calls: spans.filter(isLlmCallSpan).map(callOf) };
        this.traceCache.set(k, trace);
      }
      out.push(trace);
    }
    return out;
  }

  private async enqueue(candidate: PromptCandidate, tasks: Task[], split: Split): Promise<void> {
    const inputs: RolloutInput[] = tasks.map((t) => ({
      input: t.input,
      mode: split,
      agent: this.o.agent,
      resourcesId: candidate.resourcesId!,
      config: rolloutConfig(this.o.rolloutTimeoutSeconds),
      metadata: { runId: this.o.runId, candidate: candidate.id, taskId: t.id, split, sample: 0 },
    }));
    const made = await this.o.store.enqueueRollouts(inputs);
    this.enqueued += made.length;
    made.forEach((r, i) => this.rollouts.set(key(candidate.id, tasks[i]!.id, split), r.id));
  }

  /** A rollout's score (rolloutOutcome), kept under its (candidate, split, task). */
  private async read(r: Rollout): Promise<void> {
    if (r.status === 'cancelled') return;
    const m = readRolloutMetadata(r.metadata);
    const k = key(String(m.candidate), String(m.taskId), m.split as Split);
    const { score, feedback } = await rolloutOutcome(this.o.store, r);
    this.scores.set(k, { taskId: String(m.taskId), score, feedback, rolloutId: r.id });
  }
}

/** Where waitForEnded reports: each rollout that ended, and rollouts left waiting for a runner worker. */
export interface WaitOptions {
  /** The agent's stable id (named when its rollouts wait for a worker). */
  agent: string;
  signal?: AbortSignal;
  onRollout?: (r: Rollout) => void;
  log?: (line: string) => void;
}

/**
 * Waits until every rollout has ended (each has a timeout once claimed, so the store ends them all), in the order of
 * `ids`. Rollouts left queuing (no runner worker claims the agent's rollouts) are said every minute: the run waits
 * for workers. Used by the Evaluator and by `agl eval` (daemon/eval/).
 */
export async function waitForEnded(store: LightningStore, ids: string[], o: WaitOptions): Promise<Rollout[]> {
  const ended = new Map<string, Rollout>();
  let quietSince = Date.now();
  while (ended.size < ids.length) {
    if (o.signal?.aborted) throw new Error('interrupted');
    const before = ended.size;
    const waiting = ids.filter((id) => !ended.has(id));
    for (const r of await store.waitForRollouts(waiting, 2_000)) {
      ended.set(r.id, r);
      o.onRollout?.(r);
    }
    if (ended.size > before) quietSince = Date.now();
    else if (Date.now() - quietSince > STALL_MS) {
      quietSince = Date.now();
      const queued = (await store.queryRollouts({ ids: waiting, status: ['queuing', 'requeuing'], limit: waiting.length })).items.length;
      if (queued) o.log?.(`${queued} rollouts of agent ${o.agent} wait for a runner worker (agl runner --agent ${o.agent}, or --workers N)`);
    }
  }
  return ids.map((id) => ended.get(id)!);
}

/**
 * An ended rollout's score and feedback, read from its latest attempt: its final reward (rolloutScore: 0 when it
 * failed or emitted none) and the reward's feedback; a failed one says its error.
 */
export async function rolloutOutcome(store: LightningStore, r: Rollout): Promise<{ score: number; reward: number | null; feedback: string; spans: Span[] }> {
  const spans: Span[] = await store.querySpans({ rolloutId: r.id, attemptId: 'latest' });
  const reward = finalReward(spans);
  let feedback = rolloutFeedback(spans) ?? '';
  if (r.status !== 'succeeded') {
    const attempt = await store.getLatestAttempt(r.id);
    feedback ||= attempt?.error?.message ?? `the rollout ended ${r.status}${attempt ? ` (attempt ${attempt.status})` : ''}`;
  } else if (reward === null) feedback ||= 'the agent emitted no reward';
  return { score: rolloutScore(r.status, reward), reward, feedback, spans };
}

/** An LLM call span as the optimizer reads it (protocol/episode-text.ts, as the judge and the viewer read it): the messages sent and the answer, each cut to a readable length. */
function callOf(span: Span): TaskTrace['calls'][number] {
  const clip = (s: string) => (s.length > MESSAGE_CHARS ? `${s.slice(0, MESSAGE_CHARS)} [...]` : s);
  const { prompt, response } = callMessages(span);
  return { messages: prompt.map((m) => ({ role: m.role, content: clip(messageText(m)) })), answer: clip(response.map(messageText).join('\n')) };
}
