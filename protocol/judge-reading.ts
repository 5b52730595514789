/**
 * What an LLM judge left on a rollout, read from its spans (spans.ts SPAN.judge, AGL.judge*, AGL.rewardSource): the
 * trainer, the viewer (the explanation beside the reward, the group view's ranking with each reason) and
 * `agl judge check` read it the same way. Also whether the agent locked its own reward (AGL.rewardLocked), which no
 * judge replaces. Pure, no I/O; no zod (the viewer's bundle reads it).
 *
 * The rules:
 *  - a rollout's verdict is its latest judge span that is no retest (end time, ties by sequence id): the judge's score and explanation
 *    of this rollout, the place it was shown at among the call's rollouts, the call's tokens and cost; a failed call's
 *    span has an error status and no score; a retest's second score (judge.retest: the copy's place and score on the
 *    same span in group mode, a judge span marked `agl.judge.retest` in single mode) goes with it, never as a reward;
 *  - the reward the judge gave is the reward span with `agl.reward.source` `judge` (the final reward: its value is the
 *    judge's score, or the agent's reward plus judge.weight times it; its feedback is the explanation);
 *  - an attempt's locked reward is the last reward span the agent marked `agl.reward.locked`.
 */
import { isRewardSpan, rewardOfSpan } from './span-reading.js';
import { AGL, SPAN } from './spans.js';
import type { AttributeValue, Span } from './store.js';

type SpanLike = Pick<Span, 'name' | 'attributes' | 'startTime' | 'endTime' | 'sequenceId' | 'status' | 'spanId'>;

/** The value `agl.reward.source` takes on a judge's reward. */
export const JUDGE_REWARD_SOURCE = 'judge';

export const JUDGE_MODES = ['group', 'single'] as const;
export type JudgeMode = (typeof JUDGE_MODES)[number];

export function isJudgeSpan(span: Pick<Span, 'name'>): boolean {
  return span.name === SPAN.judge;
}

/** Whether a reward span is a judge's (its source `judge`). */
export function isJudgeReward(span: Pick<Span, 'name' | 'attributes'>): boolean {
  return isRewardSpan(span) && span.attributes[AGL.rewardSource] === JUDGE_REWARD_SOURCE;
}

const byEnd = (a: SpanLike, b: SpanLike) => (a.endTime ?? a.startTime) - (b.endTime ?? b.startTime) || a.sequenceId - b.sequenceId;
const num = (v: AttributeValue | undefined): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const str = (v: AttributeValue | undefined): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** The reward the agent locked (give the spans of one attempt): the last reward span marked locked, or null. */
export function lockedReward(spans: readonly SpanLike[]): { value: number; spanId: string } | null {
  const locked = spans.filter((s) => s.attributes[AGL.rewardLocked] === true && !isJudgeReward(s)).sort(byEnd);
  for (let i = locked.length - 1; i >= 0; i--) {
    const r = rewardOfSpan(locked[i]!);
    if (r) return { value: r.value, spanId: locked[i]!.spanId };
  }
  return null;
}

/** What the judge said of one rollout, and the call that said it. */
export interface JudgeVerdict {
  /** The judge's score of this rollout (0-1); null when the call failed. */
  score: number | null;
  explanation: string | null;
  /** The reward the rollout got from it (the judge reward span's value: the score, or the agent's plus weight times it). */
  reward: number | null;
  /** The agent's own reward the judge's was added to (judge.weight set), when it had one. */
  agentReward: number | null;
  callId: string;
  model: string | null;
  mode: JudgeMode | null;
  /** This rollout's place among those the judge was shown (1-based), and the rollout ids in that order. */
  position: number | null;
  order: string[];
  /** A retest: the judge's second score of this rollout, and where the second copy was shown (group mode); null without one. */
  retest: { score: number | null; position: number | null } | null;
  /** Why the call failed (after its tries), null when it answered. */
  error: string | null;
  attempts: number | null;
  /** The whole call's tokens and cost (one call may judge several rollouts). */
  inputTokens: number | null;
  outputTokens: number | null;
  cost: number | null;
  spanId: string;
}

function orderOf(v: AttributeValue | undefined): string[] {
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === 'string');
  if (typeof v !== 'string') return [];
  try {
    const parsed: unknown = JSON.parse(v);
    return Array.isArray(parsed) ? parsed.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

/** The rollout's verdict (give the spans of one attempt): its latest judge span and the judge's reward; null when never judged. */
export function judgeVerdict(spans: readonly SpanLike[]): JudgeVerdict | null {
  const all = spans.filter(isJudgeSpan).sort(byEnd);
  const judged = all.filter((s) => s.attributes[AGL.judgeRetest] !== true).at(-1);
  if (!judged) return null;
  const a = judged.attributes;
  const retestCall = all.filter((s) => s.attributes[AGL.judgeRetest] === true).at(-1);
  const retest =
    a[AGL.judgeRetestPosition] !== undefined
      ? { score: num(a[AGL.judgeRetestScore]), position: num(a[AGL.judgeRetestPosition]) }
      : retestCall
        ? { score: num(retestCall.attributes[AGL.judgeScore]), position: null }
        : null;
  const reward = spans.filter(isJudgeReward).sort(byEnd).at(-1);
  let agentReward: number | null = null;
  const components = reward ? str(reward.attributes[AGL.rewardComponents]) : null;
  if (components) {
    try {
      agentReward = num((JSON.parse(components) as Record<string, number>).agent);
    } catch {
      agentReward = null;
    }
  }
  const mode = str(a[AGL.judgeMode]);
  return {
    score: num(a[AGL.judgeScore]),
    explanation: str(a[AGL.judgeExplanation]),
    reward: reward ? (rewardOfSpan(reward)?.value ?? null) : null,
    agentReward,
    callId: str(a[AGL.judgeCallId]) ?? judged.spanId,
    model: str(a[AGL.judgeModel]),
    mode: mode === 'group' || mode === 'single' ? mode : null,
    position: num(a[AGL.judgePosition]),
    order: orderOf(a[AGL.judgeOrder]),
    retest,
    error: judged.status.code === 'error' ? (judged.status.message ?? 'the judge call failed') : null,
    attempts: num(a[AGL.judgeAttempts]),
    inputTokens: num(a[AGL.judgeInputTokens]),
    outputTokens: num(a[AGL.judgeOutputTokens]),
    cost: num(a[AGL.judgeCost]),
    spanId: judged.spanId,
  };
}

/** One line of a group's ranking by the judge. */
export interface RankedVerdict<T> {
  item: T;
  verdict: JudgeVerdict;
  /** 1 = the judge's best; equal scores share a rank. */
  rank: number;
}

/**
 * The judge's ranking of a group's rollouts: those it scored, best first (equal scores keep the order the judge was
 * shown them, and share a rank). Rollouts it did not score are left out.
 */
export function judgeRanking<T>(items: readonly T[], spansOf: (item: T) => readonly SpanLike[]): RankedVerdict<T>[] {
  const scored = items
    .map((item) => ({ item, verdict: judgeVerdict(spansOf(item)) }))
    .filter((x): x is { item: T; verdict: JudgeVerdict } => x.verdict !== null && x.verdict.score !== null)
    .sort((a, b) => b.verdict.score! - a.verdict.score! || (a.verdict.position ?? 0) - (b.verdict.position ?? 0));
  return scored.map((x) => ({ ...x, rank: 1 + scored.filter((y) => y.verdict.score! > x.verdict.score!).length }));
}
