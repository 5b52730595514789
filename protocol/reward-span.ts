/**
 * A reward given to a rollout from outside the agent (an LLM judge's grade, `agl eval`'s grader's verdict) as the one
 * shape of its reward span: final (no later reward of the attempt replaces it), its source and name, the grader's words
 * as its feedback, and the value also in agent-lightning v0's attributes so v0 tools read it. The agent's own rewards
 * are built by the SDK (sdk/emit.ts emitReward), which takes any number of named components.
 */
import { AGL, AGL_V0_REWARD_PREFIX, SPAN } from './spans.js';
import type { Attributes, SpanInput } from './store.js';

export interface GivenReward {
  value: number;
  /** The reward's name (`judge`, a grader's name). */
  name: string;
  /** Who gave it (protocol/judge-reading.ts JUDGE_REWARD_SOURCE, protocol/eval.ts EVAL_REWARD_SOURCE). */
  source: string;
  /** What the grader said about the answer; none: no feedback attribute. */
  feedback?: string | null;
  /** The value's parts by name, when it combines several. */
  components?: Record<string, number>;
  /** When it was given (ms): the span's start and end. */
  time: number;
  /** The span resource's service.name: what gave it (`agl-judge`, `agl-eval`). */
  service: string;
}

/** A given reward's span, less where it goes (rollout, attempt, trace and span ids, parent, kind). */
export function givenRewardSpan(r: GivenReward): Pick<SpanInput, 'name' | 'startTime' | 'endTime' | 'attributes' | 'status' | 'resource'> {
  const attributes: Attributes = {
    [AGL.rewardValue]: r.value,
    [AGL.rewardName]: r.name,
    [AGL.rewardFinal]: true,
    [AGL.rewardSource]: r.source,
    ...(r.components ? { [AGL.rewardComponents]: JSON.stringify(r.components) } : {}),
    [`${AGL_V0_REWARD_PREFIX}.0.name`]: r.name,
    [`${AGL_V0_REWARD_PREFIX}.0.value`]: r.value,
    ...(r.feedback ? { [AGL.rewardFeedback]: r.feedback } : {}),
  };
  return { name: SPAN.reward, startTime: r.time, endTime: r.time, attributes, status: { code: 'ok' }, resource: { 'service.name': r.service } };
}
