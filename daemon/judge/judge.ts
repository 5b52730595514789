/**
 * The LLM judge: scores the rollouts of one task (a GRPO group) with the model train.yaml's `judge:` names. Group
 * mode: one call shows every rollout (in a seeded shuffled order) and reads a relative score in [0, 1] per rollout;
 * single mode: one call per rollout, each against the rubric's absolute scale. The text of each rollout is its episode
 * as protocol/episode-text.ts renders it (what the viewer shows). A call is tried again (chat-caller.ts) on a failed
 * request, a timeout or an answer that does not read (answer.ts: malformed, or a trajectory missing); a group whose
 * call still fails gets no scores, with the reason and its kind: the caller leaves it out, never scores it 0. At most
 * `concurrency` calls are in flight at once, whoever asks. Nothing here writes to the store (record.ts does).
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
  /** The rollouts in the order the judge was shown them. */
  shown: RolloutToJudge[];
  /** Each shown rollout's score (by rollout id); null when the call failed. */
  scores: Map<string, { score: number; explanation: string | null }> | null;
  result: ChatCallResult<TrajectoryScore[]>;
  /** Why the call failed, by kind; null when it answered. */
  failure: JudgeFailure | null;
  startTime: number;
  endTime: number;
}

/** A group's judgement: a score per rollout, or why the group has none; the calls either way. */
export type GroupJudgement =
  | { calls: JudgeCall[]; scores: Map<string, { score: number; explanation: string | null }> }
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
  }

  get settings(): JudgeSettings {
    return this.o.settings;
  }

  /**
   * Scores the rollouts of one task: in `mode` (default the settings') one call for them all, or one each. `salt`
   * names the group (run, step, task) so its shuffle is the same whenever it is judged again.
   */
  async judgeGroup(task: unknown, rollouts: RolloutToJudge[], salt: string, mode: JudgeMode = this.o.settings.mode): Promise<GroupJudgement> {
    const taskText = renderTask(task, { showExpected: this.o.settings.showExpected });
    const batches = mode === 'group' ? [rollouts] : rollouts.map((r) => [r]);
    const calls = await Promise.all(batches.map((batch, i) => this.slots.run(() => this.call(mode, taskText, batch, `${salt}\u0000${i}`))));
    const failed = calls.find((c) => c.scores === null);
    if (failed) return { calls, failed: { kind: failed.failure!, reason: failed.result.error ?? 'the judge gave no answer' } };
    const scores = new Map<string, { score: number; explanation: string | null }>();
    for (const c of calls) for (const [id, s] of c.scores!) scores.set(id, s);
    return { calls, scores };
  }

  /** One call: the batch shuffled, shown, answered (tried again as chat-caller.ts does), read back by rollout. */
  private async call(mode: JudgeMode, task: string, batch: RolloutToJudge[], salt: string): Promise<JudgeCall> {
    const shown = seededOrder(batch.length, this.o.seed, salt).map((i) => batch[i]!);
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
    const scores = result.value ? new Map(result.value.map((s) => [shown[s.trajectory - 1]!.rolloutId, { score: s.score, explanation: s.explanation }])) : null;
    const failure: JudgeFailure | null = result.failure === null ? null : result.failure === 'unusable' ? lastUnusable : result.failure;
    return { callId: randomUUID(), mode, shown, scores, result, failure, startTime, endTime };
  }
}
