/**
 * The LLM judge: scores the rollouts of one task (a GRPO group) with the model train.yaml's `judge:` names. Group
 * mode: one call shows every rollout (in a seeded shuffled order) and reads a relative score in [0, 1] per rollout;
 * single mode: one call per rollout, each against the rubric's absolute scale. The text of each rollout is its episode
 * as protocol/episode-text.ts renders it (what the viewer shows). A call is tried again (chat-caller.ts) on a failed
 * request, a timeout or an answer that does not read (answer.ts: malformed, or a trajectory missing); a group whose
 * call still fails gets no scores, with the reason and its kind: the caller leaves it out, never scores it 0. At most
 * `concurrency` calls are in flight at once, whoever asks. Nothing here writes to the store (record.ts does).
 * A retest (judge.retest, reliability.ts) shows one trajectory twice: in group mode one of the batch's trajectories is
 * shown at a second place of the same call (both places in the recorded order), in single mode one rollout gets a
 * second call; the second score is never a reward. The weight training gives the judge reads separate calls only:
 * single mode's second call, and in group mode judgeAgain, the whole group shown again by a call of its own.
 */
import { randomUUID } from 'node:crypto';
import { renderEpisode, renderTask } from '../../protocol/episode-text.js';
import type { JudgeMode } from '../../protocol/judge-reading.js';
import type { JudgeSettings } from '../../protocol/judge-settings.js';
import type { JudgeFailure } from '../../protocol/metrics.js';
import type { Span } from '../../protocol/store.js';
import { ChatCaller, type ChatCallResult } from '../llm-calls/chat-caller.js';
import { readScores, type TrajectoryScore, type UnusableKind } from './answer.js';
import { judgeMessages, seededOrder, shortSha } from './request.js';

/** A rollout to judge: its latest attempt's spans. */
export interface RolloutToJudge {
  rolloutId: string;
  attemptId: string;
  spans: Span[];
}

/** One call to the judge: the rollouts it showed in order, what it answered, what it took. */
export interface JudgeCall {
  callId: string;
  mode: JudgeMode;
  /** The rollouts in the order the judge was shown them (a retested one twice in group mode). */
  shown: RolloutToJudge[];
  /** Group mode with a retest: the rollout shown twice, the place (1-based) of its second copy, and that copy's score. */
  retest: RetestCopy | null;
  /** Single mode: the rollout this call scored a second time (its score is no reward); null for a first call. */
  retestOf: string | null;
  /** Group mode: the call showed the group again (judgeAgain), so its scores are second scores, never rewards. */
  again?: boolean;
  /** Each shown rollout's score (by rollout id); null when the call failed. */
  scores: Map<string, { score: number; explanation: string | null }> | null;
  result: ChatCallResult<TrajectoryScore[]>;
  /** Why the call failed, by kind; null when it answered. */
  failure: JudgeFailure | null;
  startTime: number;
  endTime: number;
}

/** The second copy of a retested trajectory: where it was shown and what the judge said of it. */
export interface RetestCopy {
  rolloutId: string;
  position: number;
  score: number | null;
  explanation: string | null;
}

/** A retest's two scores of one rollout: the one its reward comes from, and the second (`separate`: from a call of its own). */
export interface RetestPair {
  rolloutId: string;
  first: number;
  second: number;
  separate: boolean;
}

/** A group's judgement: a score per rollout and the retest pairs, or why the group has none; the calls either way. */
export type GroupJudgement =
  | { calls: JudgeCall[]; scores: Map<string, { score: number; explanation: string | null }>; pairs: RetestPair[] }
  | { calls: JudgeCall[]; failed: { kind: JudgeFailure; reason: string } };

export interface JudgeOptions {
  settings: JudgeSettings;
  /** The rubric's text (settings.rubric read, its file too). */
  rubric: string;
  /** The API key's value ('' for none). */
  apiKey: string;
  /** Seeds the shuffles (the run's training seed). */
  seed: number;
  log?: (line: string) => void;
  signal?: AbortSignal;
}

/** Caps the calls in flight. */
class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];
  constructor(n: number) {
    this.free = n;
  }
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((r) => this.waiting.push(r));
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    }
  }
}

export class Judge {
  readonly caller: ChatCaller;
  readonly rubricSha: string;
  /** Every call this judge made (retests included), its tokens and cost (null without both prices): what a run spent on it. */
  readonly totals: { calls: number; promptTokens: number; completionTokens: number; cost: number | null };
  private readonly slots: Slots;

  constructor(private readonly o: JudgeOptions) {
    const s = o.settings;
    this.caller = new ChatCaller({
      url: s.url,
      model: s.model,
      apiKey: o.apiKey,
      priceIn: s.priceIn,
      priceOut: s.priceOut,
      retries: s.retries,
      timeoutMs: s.timeoutSeconds * 1000,
      backoffMs: s.backoffSeconds * 1000,
      temperature: s.temperature,
      maxTokens: s.maxTokens,
      settingsSaid: 'judge.url, judge.model and the key in judge.keyEnv (--judge-url, --judge-model, --judge-key-env)',
      log: o.log,
      signal: o.signal,
    });
    this.rubricSha = shortSha(o.rubric);
    this.slots = new Slots(s.concurrency);
    this.totals = { calls: 0, promptTokens: 0, completionTokens: 0, cost: s.priceIn !== null && s.priceOut !== null ? 0 : null };
  }

  get settings(): JudgeSettings {
    return this.o.settings;
  }

  /** Whether the run that asks stopped (its signal aborted): a call cut short by it is no verdict, to record or to use. */
  get stopped(): boolean {
    return this.o.signal?.aborted ?? false;
  }

  /**
   * Scores the rollouts of one task: in `mode` (default the settings') one call for them all, or one each. `salt`
   * names the group (run, step, task) so its shuffle is the same whenever it is judged again. With `retest`, one
   * rollout (picked by the salt) is shown twice: a second place in the group call, or a second call in single mode;
   * a single-mode retest call that fails costs the pair only, never the group's scores.
   */
  async judgeGroup(
    task: unknown,
    rollouts: RolloutToJudge[],
    salt: string,
    mode: JudgeMode = this.o.settings.mode,
    o: { retest?: boolean; keepOrder?: boolean } = {},
  ): Promise<GroupJudgement> {
    const taskText = renderTask(task, { showExpected: this.o.settings.showExpected });
    const again = o.retest && rollouts.length ? rollouts[seededOrder(rollouts.length, this.o.seed, `${salt}\u0000retest`)[0]!]! : null;
    const batches: { batch: RolloutToJudge[]; retest: 'copy' | 'call' | null }[] =
      mode === 'group' ? [{ batch: rollouts, retest: again ? 'copy' : null }] : rollouts.map((r) => ({ batch: [r], retest: null }));
    if (mode === 'single' && again) batches.push({ batch: [again], retest: 'call' });
    const calls = await Promise.all(
      batches.map((b, i) => this.slots.run(() => this.call(mode, taskText, b.batch, `${salt}\u0000${i}`, b.retest, o.keepOrder))),
    );
    const failed = calls.find((c) => c.scores === null && c.retestOf === null);
    if (failed) return { calls, failed: { kind: failed.failure!, reason: failed.result.error ?? 'the judge gave no answer' } };
    const scores = new Map<string, { score: number; explanation: string | null }>();
    for (const c of calls) if (c.retestOf === null) for (const [id, s] of c.scores!) scores.set(id, s);
    const pairs: RetestPair[] = [];
    for (const c of calls) {
      const second = c.retest?.score ?? (c.retestOf !== null ? (c.scores?.get(c.retestOf)?.score ?? null) : null);
      const id = c.retest?.rolloutId ?? c.retestOf;
      if (id !== null && second !== null && scores.has(id)) pairs.push({ rolloutId: id, first: scores.get(id)!.score, second, separate: c.retestOf !== null });
    }
    return { calls, scores, pairs };
  }

  /**
   * The group shown again by a separate call (group mode's retest between calls, reliability.ts), shuffled by its own
   * salt: its scores by rollout (null when the call failed: the pairs are lost, never the group's scores) and the call.
   */
  async judgeAgain(task: unknown, rollouts: RolloutToJudge[], salt: string): Promise<{ call: JudgeCall; seconds: Map<string, number> | null }> {
    const taskText = renderTask(task, { showExpected: this.o.settings.showExpected });
    const call = await this.slots.run(() => this.call('group', taskText, rollouts, `${salt}\u0000again`));
    const seconds = call.scores && new Map([...call.scores].map(([id, s]) => [id, s.score]));
    return { call: { ...call, again: true }, seconds };
  }

  private count(r: ChatCallResult<unknown>): void {
    const t = this.totals;
    t.calls++;
    t.promptTokens += r.promptTokens;
    t.completionTokens += r.completionTokens;
    if (t.cost !== null) t.cost += r.cost ?? 0;
  }

  /**
   * One call: the batch shuffled, shown, answered (tried again as chat-caller.ts does), read back by rollout. `retest`
   * 'copy': one of the batch (picked by the salt) is shown a second time, at a place of the shuffle too; 'call': the
   * call scores its one rollout a second time. `keepOrder`: shown as given, unshuffled (`agl judge check --labels`'s
   * position test shows a pair in both orders).
   */
  private async call(
    mode: JudgeMode,
    task: string,
    batch: RolloutToJudge[],
    salt: string,
    retest: 'copy' | 'call' | null = null,
    keepOrder = false,
  ): Promise<JudgeCall> {
    const copy = retest === 'copy' ? batch[seededOrder(batch.length, this.o.seed, `${salt}\u0000retest`)[0]!]! : null;
    const withCopy = copy ? [...batch, copy] : batch;
    const order = keepOrder ? withCopy.map((_, i) => i) : seededOrder(withCopy.length, this.o.seed, salt);
    const shown = order.map((i) => withCopy[i]!);
    const copyAt = copy ? order.indexOf(batch.length) : -1;
    const maxChars = this.o.settings.maxTrajectoryChars;
    const messages = judgeMessages({ mode, rubric: this.o.rubric, task, trajectories: shown.map((r) => renderEpisode(r.spans, { maxChars })) });
    let lastUnusable: UnusableKind = 'malformed';
    const read = (answer: string) => {
      const got = readScores(answer, shown.length);
      if ('unusable' in got) lastUnusable = got.kind ?? 'malformed';
      return got;
    };
    const startTime = Date.now();
    const label = `judge (${mode}, ${shown.length} trajector${shown.length === 1 ? 'y' : 'ies'})`;
    const result = await this.caller.call(messages, read, label);
    const endTime = Date.now();
    if (!this.stopped) this.count(result); // a call the run's stop cut short answered nothing to count
    const own = result.value?.filter((s) => s.trajectory - 1 !== copyAt) ?? null;
    const scores = own ? new Map(own.map((s) => [shown[s.trajectory - 1]!.rolloutId, { score: s.score, explanation: s.explanation }])) : null;
    const second = result.value?.find((s) => s.trajectory - 1 === copyAt) ?? null;
    const copied: RetestCopy | null = copy
      ? { rolloutId: copy.rolloutId, position: copyAt + 1, score: second?.score ?? null, explanation: second?.explanation ?? null }
      : null;
    const failure: JudgeFailure | null = result.failure === null ? null : result.failure === 'unusable' ? lastUnusable : result.failure;
    const retestOf = retest === 'call' ? batch[0]!.rolloutId : null;
    return { callId: randomUUID(), mode, shown, retest: copied, retestOf, scores, result, failure, startTime, endTime };
  }
}
