/**
 * `agl judge check`: before anyone trains on a judge, how well does it agree with the reward the agent computes itself?
 * It scores a run's validation rollouts (mode val; one validation step, or every one) with the judge, as training
 * would (group mode: the rollouts of one task, across the validations, in one call; single mode: one call each), reads
 * each one's own reward (its final reward apart from any judge's), and reports their agreement (agreement.ts: pairwise
 * accuracy, Spearman) with the pairs where they disagree most, and the judge's reasons. With judge.retest it also
 * reports how informative the judge is as training reads it (reliability.ts): in group mode each group whose scores
 * spread is shown again by a separate call (single mode: one rollout of each task gets a second call), and the pairs
 * give its test-retest reliability, its lower bound and the weight training would give it; the copy group calls show
 * of one trajectory adds the mean |difference| within a call (it shares its context: no evidence for the weight).
 * It writes nothing to the store.
 */
import { lockedReward, isJudgeReward } from '../../protocol/judge-reading.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { pickFinalReward, rewardsInOrder } from '../../protocol/span-reading.js';
import { readRolloutMetadata, type Rollout, type Span } from '../../protocol/store.js';
import { agreement, type Agreement, type Compared } from './agreement.js';
import type { Judge, JudgeCall, RetestPair, RolloutToJudge } from './judge.js';
import { evidenceOf, reliabilityOf, type Reliability, type RetestGroup } from './reliability.js';

export interface CheckOptions {
  runId: string;
  /** Only the validation after this step (0: before training); null: every validation. */
  step: number | null;
  /** Only the rollouts of these tasks (ids); null: all. */
  taskIds: Set<string> | null;
  /** At most this many rollouts (the newest validations first). */
  limit: number;
}

/** One rollout checked: its task and step, the agent's own reward, the judge's score and words. */
export interface CheckedRollout {
  rolloutId: string;
  taskId: string;
  step: number | null;
  agent: number | null;
  judge: number | null;
  explanation: string | null;
}

export interface CheckReport {
  runId: string;
  mode: 'group' | 'single';
  rollouts: CheckedRollout[];
  /** Groups (tasks) the judge could not score, and why. */
  failed: { taskId: string; reason: string }[];
  calls: number;
  tokens: number;
  cost: number | null;
  agreement: Agreement;
  /** The pairs judged most unlike the agent's rewards (the judge prefers the one the agent scored lower), worst first. */
  disagreements: { better: CheckedRollout; worse: CheckedRollout }[];
  /**
   * How far the judge agrees with itself (judge.retest; null with it off): its reliability, bound and weight as training
   * reads them (pairs from separate calls), and the mean |difference| of all the pairs of scores of one trajectory.
   */
  selfAgreement: (Reliability & { meanAbsDiff: number | null }) | null;
}

/** The agent's own final reward: its rewards apart from any judge's (a locked one first), null when it gave none. */
export function agentReward(spans: Span[]): number | null {
  const locked = lockedReward(spans);
  if (locked) return locked.value;
  const own = new Set(spans.filter((s) => !isJudgeReward(s)).map((s) => s.spanId));
  return pickFinalReward(rewardsInOrder(spans).filter((r) => own.has(r.spanId)))?.value ?? null;
}

/** The run's succeeded validation rollouts the options select, newest first. */
async function valRollouts(store: LightningStore, o: CheckOptions): Promise<Rollout[]> {
  const out: Rollout[] = [];
  let cursor: string | null = null;
  do {
    const page = await store.queryRollouts({
      runId: o.runId,
      mode: 'val',
      status: ['succeeded'],
      ...(o.step !== null ? { step: o.step } : {}),
      limit: 200,
      ...(cursor ? { cursor } : {}),
    });
    for (const r of page.items) if (!o.taskIds || o.taskIds.has(String(readRolloutMetadata(r.metadata).taskId))) out.push(r);
    cursor = page.nextCursor;
  } while (cursor && out.length < o.limit);
  return out.slice(0, o.limit);
}

/** Scores the run's validation rollouts with the judge and compares them with the agent's own rewards. */
export async function checkJudge(store: LightningStore, judge: Judge, o: CheckOptions): Promise<CheckReport> {
  const rollouts = await valRollouts(store, o);
  const byTask = new Map<string, { rollout: Rollout; r: RolloutToJudge }[]>();
  for (const rollout of rollouts) {
    const spans = await store.querySpans({ rolloutId: rollout.id, attemptId: 'latest' });
    const taskId = String(readRolloutMetadata(rollout.metadata).taskId ?? rollout.id);
    const r = { rolloutId: rollout.id, attemptId: spans[0]?.attemptId ?? '', spans };
    byTask.set(taskId, [...(byTask.get(taskId) ?? []), { rollout, r }]);
  }
  const mode = judge.settings.mode;
  const report: CheckReport = {
    ...{ runId: o.runId, mode, rollouts: [], failed: [], calls: 0, tokens: 0, cost: null },
    ...{ agreement: agreement([]), disagreements: [], selfAgreement: null },
  };
  const comparedGroups: Compared[][] = [];
  const scoredGroups: (RetestGroup & { task: unknown; rollouts: RolloutToJudge[] })[] = [];
  const pairs: RetestPair[] = [];
  const count = (c: JudgeCall) => {
    report.calls++;
    report.tokens += c.result.promptTokens + c.result.completionTokens;
    if (c.result.cost !== null) report.cost = (report.cost ?? 0) + c.result.cost;
  };
  await Promise.all(
    [...byTask].map(async ([taskId, members]) => {
      const got = await judge.judgeGroup(
        members[0]!.rollout.input,
        members.map((m) => m.r),
        `check\u0000${o.runId}\u0000${taskId}`,
        mode,
        { retest: judge.settings.retest },
      );
      got.calls.forEach(count);
      if ('failed' in got) report.failed.push({ taskId, reason: got.failed.reason });
      else {
        const separate = new Map(got.pairs.filter((p) => p.separate).map((p) => [p.rolloutId, p.second]));
        const ids = [...got.scores.keys()];
        const scores = ids.map((id) => got.scores.get(id)!.score);
        const rollouts = ids.map((id) => members.find((m) => m.rollout.id === id)!.r);
        scoredGroups.push({ task: members[0]!.rollout.input, rollouts, scores, seconds: ids.map((id) => separate.get(id) ?? null) });
        pairs.push(...got.pairs);
      }
      const checked = members.map(({ rollout, r }) => {
        const s = 'scores' in got ? got.scores.get(rollout.id) : undefined;
        const step = readRolloutMetadata(rollout.metadata).step;
        return {
          rolloutId: rollout.id,
          taskId,
          step: typeof step === 'number' ? step : null,
          agent: agentReward(r.spans),
          judge: s?.score ?? null,
          explanation: s?.explanation ?? null,
        };
      });
      report.rollouts.push(...checked);
      comparedGroups.push(checked.flatMap((c) => (c.judge !== null && c.agent !== null ? [{ judge: c.judge, agent: c.agent }] : [])));
    }),
  );
  const scored = report.rollouts.filter((c) => c.judge !== null && c.agent !== null);
  report.agreement = agreement(mode === 'group' ? comparedGroups : [scored.map((c) => ({ judge: c.judge!, agent: c.agent! }))]);
  if (judge.settings.retest) {
    if (mode === 'group') await showAgain(judge, scoredGroups, o.runId, count, pairs);
    const rel = reliabilityOf(evidenceOf(scoredGroups));
    const meanAbsDiff = pairs.length ? pairs.reduce((a, p) => a + Math.abs(p.first - p.second), 0) / pairs.length : null;
    report.selfAgreement = { ...rel, meanAbsDiff };
  }
  report.disagreements = disagreements(mode === 'group' ? [...byTask.keys()].map((t) => scored.filter((c) => c.taskId === t)) : [scored]);
  return report;
}

/** Group mode: each group whose scores spread shown again by a separate call, its second scores kept as pairs. */
async function showAgain(
  judge: Judge,
  groups: (RetestGroup & { task: unknown; rollouts: RolloutToJudge[] })[],
  runId: string,
  count: (c: JudgeCall) => void,
  pairs: RetestPair[],
): Promise<void> {
  await Promise.all(
    groups
      .filter((g) => new Set(g.scores).size > 1)
      .map(async (g, k) => {
        const { call, seconds } = await judge.judgeAgain(g.task, g.rollouts, `check\u0000${runId}\u0000again\u0000${k}`);
        count(call);
        if (!seconds) return;
        g.seconds = g.rollouts.map((r) => seconds.get(r.rolloutId) ?? null);
        g.rollouts.forEach((r, i) => {
          if (g.seconds[i] !== null) pairs.push({ rolloutId: r.rolloutId, first: g.scores[i]!, second: g.seconds[i]!, separate: true });
        });
      }),
  );
}

/** Pairs the judge orders against the agent's rewards, the widest gaps first (at most 5). */
function disagreements(groups: CheckedRollout[][]): { better: CheckedRollout; worse: CheckedRollout }[] {
  const out: { better: CheckedRollout; worse: CheckedRollout; gap: number }[] = [];
  for (const g of groups)
    for (const a of g)
      for (const b of g) if (a.judge! > b.judge! && a.agent! < b.agent!) out.push({ better: a, worse: b, gap: a.judge! - b.judge! + (b.agent! - a.agent!) });
  return out
    .sort((x, y) => y.gap - x.gap)
    .slice(0, 5)
    .map(({ better, worse }) => ({ better, worse }));
}
