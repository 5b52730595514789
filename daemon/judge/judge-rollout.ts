/**
 * One ended rollout scored by the judge where nothing compares it with siblings (prompt optimization: `agl optimize
 * --judge-*` rolls each task out once per candidate): one call in single mode against the rubric's absolute scale, its
 * spans recorded as training records them (record.ts: the judge span, and the judge's reward span, final, its feedback
 * the explanation), so whoever reads the rollout's final reward and feedback afterwards (the optimizer's evaluator, the
 * viewer) reads the judge's. A rollout that did not succeed, whose reward the agent locked, or that a judge already
 * scored (a resumed run reading its rollouts back) is left as it is. A call that fails after its tries leaves its
 * judge span with the error and no reward: the rollout keeps the agent's own (or none), never a made-up 0, and is not
 * asked again (a resumed run must read the scores the stopped one read, or its recorded candidate scores would not
 * replay). A call cut short by the run's stop records nothing: the resumed run asks it.
 */
import { judgeVerdict, lockedReward } from '../../protocol/judge-reading.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { pickFinalReward, rewardsInOrder } from '../../protocol/span-reading.js';
import type { Rollout } from '../../protocol/store.js';
import type { Judge, RolloutToJudge } from './judge.js';
import { judgeCallSpans, judgedReward } from './record.js';

/** What judging a rollout did: scored it, found it scored already, left it (why), or could not score it (why). */
export type RolloutJudged =
  | { kind: 'scored'; score: number; explanation: string | null }
  | { kind: 'already'; score: number | null }
  | { kind: 'skipped'; why: 'not succeeded' | 'locked' }
  | { kind: 'failed'; reason: string };

/** Scores an ended rollout with the judge (single mode) and records it on the rollout's latest attempt (see the header). */
export async function judgeEndedRollout(store: LightningStore, judge: Judge, r: Rollout, salt: string): Promise<RolloutJudged> {
  if (r.status !== 'succeeded') return { kind: 'skipped', why: 'not succeeded' };
  const spans = await store.querySpans({ rolloutId: r.id, attemptId: 'latest' });
  const earlier = judgeVerdict(spans);
  if (earlier) return { kind: 'already', score: earlier.error === null ? earlier.score : null };
  if (lockedReward(spans)) return { kind: 'skipped', why: 'locked' };
  const attemptId = spans[0]?.attemptId ?? (await store.getLatestAttempt(r.id))?.id;
  if (!attemptId) return { kind: 'failed', reason: 'the rollout has no attempt to judge' };
  const agent = pickFinalReward(rewardsInOrder(spans))?.value ?? null;
  const got = await judgeOneRollout(store, judge, r.input, { rolloutId: r.id, attemptId, spans }, salt, { weight: judge.settings.weight, agent });
  if ('failed' in got) return { kind: 'failed', reason: got.failed ?? 'the judge gave no score' };
  return { kind: 'scored', score: got.score, explanation: got.explanation };
}

/** A judge's score of one rollout, or why it has none (null: the judge answered without scoring it). */
export type OneJudged = { score: number; explanation: string | null } | { failed: string | null };

/**
 * One single-mode judge call on one rollout's attempt, `task` shown as its task, its spans recorded as training records
 * them (record.ts: the judge span; when it scored, the reward span, its value judgedReward of `reward`'s weight and the
 * agent's own reward). Shared by prompt optimization (judgeEndedRollout) and agl eval's judge grader.
 */
export async function judgeOneRollout(
  store: LightningStore,
  judge: Judge,
  task: unknown,
  target: RolloutToJudge,
  salt: string,
  reward: { weight: number | null; agent: number | null },
): Promise<OneJudged> {
  const judged = await judge.judgeGroup(task, [target], salt, 'single');
  if (judge.stopped) return { failed: 'the run was stopped' };
  const own = 'scores' in judged ? (judged.scores.get(target.rolloutId) ?? null) : null;
  const rewards = new Map(own ? [[target.rolloutId, judgedReward(own, reward.weight, reward.agent)]] : []);
  const spans = judged.calls.flatMap((call) => judgeCallSpans(call, { model: judge.settings.model, rubricSha: judge.rubricSha, rewards }));
  if (spans.length) await store.addSpans(spans);
  return own ?? { failed: 'failed' in judged ? judged.failed.reason : null };
}
