/**
 * `agl judge check`: before anyone trains on a judge, how well does it agree with the reward the agent computes itself?
 * It scores a run's validation rollouts (mode val; one validation step, or every one) with the judge, as training
 * would (group mode: the rollouts of one task, across the validations, in one call; single mode: one call each), reads
 * each one's own reward (its final reward apart from any judge's), and reports their agreement (agreement.ts: pairwise
 * accuracy, Spearman) with the pairs where they disagree most, and the judge's reasons. With judge.retest it also
 * reports how far the judge agrees with itself (reliability.ts): each group call shows one trajectory twice (single
 * mode: one rollout of each task scored twice), and the pairs give its noise against the spread of its scores.
 * It writes nothing to the store.
 */
import { lockedReward, isJudgeReward } from '../../protocol/judge-reading.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { pickFinalReward, rewardsInOrder } from '../../protocol/span-reading.js';
import { readRolloutMetadata, type Rollout, type Span } from '../../protocol/store.js';
import { agreement, type Agreement, type Compared } from './agreement.js';
import type { Judge, RetestPair, RolloutToJudge } from './judge.js';
import { evidenceOf, reliabilityOf, type Reliability } from './reliability.js';

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
   * How far the judge agrees with itself (judge.retest; null with it off): its reliability r, noise and signal as
   * training reads them, and the mean |difference| of the pairs of scores it gave one trajectory shown twice.
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
  const scoredGroups: number[][] = [];
  const pairs: RetestPair[] = [];
  await Promise.all(
    [...byTask].map(async ([taskId, members]) => {
      const got = await judge.judgeGroup(
        members[0]!.rollout.input,
        members.map((m) => m.r),
        `check\u0000${o.runId}\u0000${taskId}`,
        mode,
        { retest: judge.settings.retest },
      );
      for (const c of got.calls) {
        report.calls++;
        report.tokens += c.result.promptTokens + c.result.completionTokens;
        if (c.result.cost !== null) report.cost = (report.cost ?? 0) + c.result.cost;
      }
      if ('failed' in got) report.failed.push({ taskId, reason: got.failed.reason });
      else {
        scoredGroups.push([...got.scores.values()].map((s) => s.score));
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
    const rel = reliabilityOf(
      evidenceOf(
        scoredGroups,
        pairs.map((p): [number, number] => [p.first, p.second]),
      ),
    );
    const meanAbsDiff = pairs.length ? pairs.reduce((a, p) => a + Math.abs(p.first - p.second), 0) / pairs.length : null;
    report.selfAgreement = { ...rel, meanAbsDiff };
  }
  report.disagreements = disagreements(mode === 'group' ? [...byTask.keys()].map((t) => scored.filter((c) => c.taskId === t)) : [scored]);
  return report;
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
