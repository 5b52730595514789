/**
 * A person's label of a rollout, given in the trajectory viewer: good or bad, or a score in [0, 1]. It is stored as a
 * reward span of the rollout's latest attempt with `agl.reward.source` `human` (AGL.rewardLabel says which kind),
 * written through the store API like any span, so it lives beside the rollout and its other rewards.
 * A label is about the rollout, never the agent's reward: the readers of the final reward (span-reading.ts
 * rewardsInOrder, the adapter, hence credit and GRPO) leave it out, unless a training run asks for it
 * (train.yaml `training.useHumanLabels`, --use-human-labels: then it is the final reward of the rollouts that have
 * one). `agl judge check --labels` compares a judge with the labels. Pure, no zod (the viewer's bundle reads it).
 */
import { AGL, SPAN } from './spans.js';
import type { AttributeValue, Span, SpanInput } from './store.js';
import { rootSpanIdForAttempt } from './ids.js';

/** The value `agl.reward.source` takes on a person's label. */
export const HUMAN_REWARD_SOURCE = 'human';

export const HUMAN_LABEL_KINDS = ['good', 'bad', 'score'] as const;
export type HumanLabelKind = (typeof HUMAN_LABEL_KINDS)[number];

/** A label as a person gives it. */
export type HumanLabel = { kind: 'good' } | { kind: 'bad' } | { kind: 'score'; score: number };

/** A label read back from a rollout's spans: its kind, its value as a reward (good 1, bad 0, else the score), its span. */
export interface StoredHumanLabel {
  kind: HumanLabelKind;
  value: number;
  spanId: string;
  time: number;
}

type SpanLike = Pick<Span, 'name' | 'attributes' | 'startTime' | 'endTime' | 'sequenceId' | 'spanId'>;

/** Whether a span is a person's label (a reward span whose source is `human`). */
export function isHumanLabel(span: Pick<Span, 'name' | 'attributes'>): boolean {
  return span.name === SPAN.reward && span.attributes[AGL.rewardSource] === HUMAN_REWARD_SOURCE;
}

/** The reward value a label stands for: good 1, bad 0, a score itself. */
export function humanLabelValue(label: HumanLabel): number {
  return label.kind === 'good' ? 1 : label.kind === 'bad' ? 0 : label.score;
}

/** Why a label is not one (null when it is): a score must be a number in [0, 1]. */
export function humanLabelProblem(label: HumanLabel): string | null {
  if (!HUMAN_LABEL_KINDS.includes(label.kind)) return `label.kind: '${String(label.kind)}' is none of good, bad, score`;
  if (label.kind === 'score' && !(typeof label.score === 'number' && label.score >= 0 && label.score <= 1))
    return `label.score: ${String(label.score)} is not a number from 0 to 1`;
  return null;
}

/** The span that stores `label` on a rollout's attempt (a child of its root span), written at `now` (ms). */
export function humanLabelSpan(target: { rolloutId: string; attemptId: string }, label: HumanLabel, now: number): SpanInput {
  const problem = humanLabelProblem(label);
  if (problem) throw new Error(problem);
  return {
    rolloutId: target.rolloutId,
    attemptId: target.attemptId,
    parentSpanId: rootSpanIdForAttempt(target.attemptId),
    name: SPAN.reward,
    startTime: now,
    endTime: now,
    status: { code: 'ok' },
    attributes: {
      [AGL.rewardValue]: humanLabelValue(label),
      [AGL.rewardName]: 'human label',
      [AGL.rewardSource]: HUMAN_REWARD_SOURCE,
      [AGL.rewardLabel]: label.kind,
    },
  };
}

const kindOf = (v: AttributeValue | undefined): HumanLabelKind | null =>
  typeof v === 'string' && (HUMAN_LABEL_KINDS as readonly string[]).includes(v) ? (v as HumanLabelKind) : null;

/** A rollout's label (give the spans of its attempt): the latest one a person gave (relabelling replaces), or null. */
export function humanLabelOf(spans: readonly SpanLike[]): StoredHumanLabel | null {
  let out: (StoredHumanLabel & { seq: number }) | null = null;
  for (const s of spans) {
    if (!isHumanLabel(s)) continue;
    const value = s.attributes[AGL.rewardValue];
    const kind = kindOf(s.attributes[AGL.rewardLabel]);
    if (typeof value !== 'number' || !Number.isFinite(value) || kind === null) continue;
    const time = s.endTime ?? s.startTime;
    if (!out || time > out.time || (time === out.time && s.sequenceId > out.seq)) out = { kind, value, spanId: s.spanId, time, seq: s.sequenceId };
  }
  return out && { kind: out.kind, value: out.value, spanId: out.spanId, time: out.time };
}
