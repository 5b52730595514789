/**
 * Grading an evaluation's ended rollout by its row's grader, and recording the verdict where every reader finds it:
 * a reward span on the rollout's latest attempt (final, source `eval`, its name the grader's, its feedback the
 * verdict's reason: what prompt optimization and the viewer read as the reward's feedback). The judge's verdict is
 * recorded as the judge records it in training (its judge span and reward span: daemon/judge/record.ts). A rollout
 * that failed (the agent threw, timed out) scores 0 with its error as the reason, and nothing is written on it; the
 * `reward` grader reads the agent's own final reward and writes nothing either.
 */
import { newSpanId, rootSpanIdForAttempt, traceIdForAttempt } from '../../protocol/ids.js';
import { EVAL_REWARD_SOURCE } from '../../protocol/eval.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { givenRewardSpan } from '../../protocol/reward-span.js';
import { canonicalJson, episodeAnswer } from '../../protocol/span-reading.js';
import type { Rollout, SpanInput } from '../../protocol/store.js';
import type { Judge } from '../judge/judge.js';
import { judgeOneRollout } from '../judge/judge-rollout.js';
import { rolloutOutcome } from '../optimize/evaluator.js';
import type { EvalTask } from './dataset.js';
import type { Verdict } from './graders.js';

/** One sample's grade: its score and reason, the answer it recorded (JSON text; null when it recorded none). */
export interface SampleGrade extends Verdict {
  answer: string | null;
  errored: boolean;
}

/** Grades an ended rollout of `task` and records the verdict on it (see the header). */
export async function gradeRollout(store: LightningStore, r: Rollout, task: EvalTask, judge: Judge | null): Promise<SampleGrade> {
  const outcome = await rolloutOutcome(store, r);
  const found = episodeAnswer(outcome.spans);
  const answer = found.source === 'none' ? null : canonicalJson(found.value);
  if (r.status !== 'succeeded') return { score: 0, reason: outcome.feedback, answer, errored: true };
  const g = task.grader;
  if (g.name === 'reward') {
    const reason = outcome.reward === null ? outcome.feedback : `the agent's reward ${outcome.reward}${outcome.feedback ? `: ${outcome.feedback}` : ''}`;
    return { score: outcome.score, reason, answer, errored: false };
  }
  const attempt = outcome.spans[0]?.attemptId ?? (await store.getLatestAttempt(r.id))?.id;
  if (!attempt) return { score: 0, reason: 'the rollout has no attempt to read an answer from', answer, errored: true };
  if (g.name === 'judge') return judgeRollout(store, r, task, judge!, { attempt, spans: outcome.spans, answer });
  const verdict: Verdict =
    found.source === 'none'
      ? { score: 0, reason: 'the agent returned no answer (and emitted no final object) to compare with the expected one' }
      : g.grade!(found.value);
  await store.addSpans([verdictSpan(r.id, attempt, g.name, verdict)]);
  return { ...verdict, answer, errored: false };
}

/** The judge in single mode on one rollout, the row's `expected` shown to it as the reference; its spans recorded. */
async function judgeRollout(
  store: LightningStore,
  r: Rollout,
  task: EvalTask,
  judge: Judge,
  o: { attempt: string; spans: Awaited<ReturnType<typeof rolloutOutcome>>['spans']; answer: string | null },
): Promise<SampleGrade> {
  // The row's expectation beside the task's own fields, shown as judge.showExpected says (agl eval's default: shown).
  const input = task.input;
  const asObject = input && typeof input === 'object' && !Array.isArray(input) ? (input as Record<string, unknown>) : { task: input };
  const shown = task.expected === undefined ? input : { ...asObject, expected: task.expected };
  const got = await judgeOneRollout(store, judge, shown, { rolloutId: r.id, attemptId: o.attempt, spans: o.spans }, `${r.id}`, { weight: null, agent: null });
  if ('failed' in got) return { score: 0, reason: `the judge gave no score: ${got.failed ?? 'no answer'}`, answer: o.answer, errored: true };
  return { score: got.score, reason: got.explanation ?? `the judge scored ${got.score}`, answer: o.answer, errored: false };
}

/** A grader's verdict as a reward span under the attempt's root: final, source `eval`, its reason as the feedback. */
function verdictSpan(rolloutId: string, attemptId: string, grader: string, v: Verdict): SpanInput {
  const spot = { rolloutId, attemptId, traceId: traceIdForAttempt(attemptId), spanId: newSpanId(), parentSpanId: rootSpanIdForAttempt(attemptId) };
  return {
    ...spot,
    kind: 'internal',
    ...givenRewardSpan({ value: v.score, name: grader, source: EVAL_REWARD_SOURCE, feedback: v.reason, time: Date.now(), service: 'agl-eval' }),
  };
}
