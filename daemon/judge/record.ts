/**
 * What a judge call leaves in the store, on each rollout it judged (protocol/spans.ts SPAN.judge, AGL.judge*): a judge
 * span under the attempt's root (the call's id, model, mode, the order it showed the rollouts in and this one's place,
 * its answer, tries, tokens, cost, the rubric's version; this rollout's score and explanation; an error status when the
 * call failed), and, when it scored the rollout, a reward span under it: the rollout's final reward (source `judge`,
 * its feedback the judge's explanation, its components the judge's score and the agent's own reward when they were
 * added). Neither is an LLM call of the agent's: no transition is made of them and `agl export` never sees them.
 * A retest (judge.retest) adds no span of its own in group mode: the copy's place and score go on the rollout's judge
 * span; a single-mode retest call, or a group shown again by a call of its own, leaves judge spans marked as one, and no reward.
 */
import { newSpanId, rootSpanIdForAttempt, traceIdForAttempt } from '../../protocol/ids.js';
import { JUDGE_REWARD_SOURCE } from '../../protocol/judge-reading.js';
import { givenRewardSpan } from '../../protocol/reward-span.js';
import { AGL, SPAN } from '../../protocol/spans.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import type { Attributes, SpanInput } from '../../protocol/store.js';
import type { JudgeCall } from './judge.js';

/** The reward a judged rollout gets: the judge's score, or (weight w) the agent's own reward plus w times it. */
export interface JudgedReward {
  value: number;
  score: number;
  /** The agent's reward it was added to (weight set); null when the score replaces it. */
  agent: number | null;
  explanation: string | null;
}

/** The reward of a score: the score itself (weight null), or the agent's reward (0 without one) plus weight times it. */
export function judgedReward(score: { score: number; explanation: string | null }, weight: number | null, agentReward: number | null): JudgedReward {
  if (weight === null) return { value: score.score, score: score.score, agent: null, explanation: score.explanation };
  const agent = agentReward ?? 0;
  return { value: agent + weight * score.score, score: score.score, agent, explanation: score.explanation };
}

/**
 * The spans of one call on each rollout it showed: the judge span, and the reward span of each rollout `rewards`
 * holds (a rollout it scored; none when the call failed, or the group was left out).
 */
export function judgeCallSpans(call: JudgeCall, o: { model: string; rubricSha: string; rewards: Map<string, JudgedReward> }): SpanInput[] {
  const order = JSON.stringify(call.shown.map((r) => r.rolloutId));
  const r = call.result;
  const out: SpanInput[] = [];
  const copy = call.retest;
  call.shown.forEach((rollout, i) => {
    if (copy && i + 1 === copy.position) return;
    const judgeSpanId = newSpanId();
    const own = call.retestOf !== null ? (call.scores?.get(call.retestOf) ?? null) : (call.scores?.get(rollout.rolloutId) ?? null);
    const again = copy?.rolloutId === rollout.rolloutId ? copy : null;
    const attributes: Attributes = {
      [AGL.rolloutId]: rollout.rolloutId,
      [AGL.attemptId]: rollout.attemptId,
      [AGL.judgeCallId]: call.callId,
      [AGL.judgeModel]: o.model,
      [AGL.judgeMode]: call.mode,
      [AGL.judgeOrder]: order,
      [AGL.judgePosition]: i + 1,
      [AGL.judgeAttempts]: r.attempts,
      [AGL.judgeInputTokens]: r.promptTokens,
      [AGL.judgeOutputTokens]: r.completionTokens,
      [AGL.judgeCost]: r.cost,
      [AGL.judgeRubricSha]: o.rubricSha,
      ...(r.answer !== null ? { [AGL.judgeAnswer]: r.answer } : {}),
      ...(own ? { [AGL.judgeScore]: own.score, ...(own.explanation ? { [AGL.judgeExplanation]: own.explanation } : {}) } : {}),
      ...(again ? { [AGL.judgeRetestPosition]: again.position, ...(again.score !== null ? { [AGL.judgeRetestScore]: again.score } : {}) } : {}),
      ...(call.retestOf !== null || call.again ? { [AGL.judgeRetest]: true } : {}),
    };
    const base = { rolloutId: rollout.rolloutId, attemptId: rollout.attemptId, traceId: traceIdForAttempt(rollout.attemptId), kind: 'internal' as const };
    out.push({
      ...base,
      spanId: judgeSpanId,
      parentSpanId: rootSpanIdForAttempt(rollout.attemptId),
      name: SPAN.judge,
      startTime: call.startTime,
      endTime: call.endTime,
      attributes,
      status: r.error ? { code: 'error', message: r.error } : { code: 'ok' },
      resource: { 'service.name': 'agl-judge' },
    });
    const reward = call.retestOf === null && !call.again ? o.rewards.get(rollout.rolloutId) : undefined;
    if (reward) out.push({ ...base, spanId: newSpanId(), parentSpanId: judgeSpanId, ...rewardSpan(reward, call.endTime) });
  });
  return out;
}

/** A judged reward as a reward span (protocol/reward-span.ts): final, its source the judge, its feedback the judge's explanation. */
function rewardSpan(reward: JudgedReward, time: number): ReturnType<typeof givenRewardSpan> {
  const components: Record<string, number> = reward.agent === null ? { judge: reward.score } : { judge: reward.score, agent: reward.agent };
  return givenRewardSpan({
    value: reward.value,
    name: 'judge',
    source: JUDGE_REWARD_SOURCE,
    feedback: reward.explanation,
    components,
    time,
    service: 'agl-judge',
  });
}

/** What the judge calls a run's rollouts hold spans of cost: calls, tokens, and the cost when every call had one. */
export interface RecordedJudgeSpend {
  calls: number;
  prompt: number;
  completion: number;
  cost: number | null;
}

/**
 * The judge calls recorded on the rollouts of run `runId`, each once (a group call's span is on every rollout it
 * showed): what every process of the run spent on the judge, a killed one's included, up to its last recorded call.
 */
export async function recordedJudgeSpend(store: LightningStore, runId: string): Promise<RecordedJudgeSpend> {
  const seen = new Set<string>();
  const out: RecordedJudgeSpend = { calls: 0, prompt: 0, completion: 0, cost: 0 };
  let cursor: string | undefined;
  do {
    const page = await store.queryRollouts({ runId, order: 'asc', limit: 500, ...(cursor ? { cursor } : {}) });
    for (const r of page.items)
      for (const span of await store.querySpans({ rolloutId: r.id, name: SPAN.judge })) {
        const a = span.attributes;
        const id = String(a[AGL.judgeCallId]);
        if (seen.has(id)) continue;
        seen.add(id);
        out.calls++;
        out.prompt += Number(a[AGL.judgeInputTokens] ?? 0);
        out.completion += Number(a[AGL.judgeOutputTokens] ?? 0);
        const cost = a[AGL.judgeCost];
        out.cost = typeof cost === 'number' && out.cost !== null ? out.cost + cost : null;
      }
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return out;
}
