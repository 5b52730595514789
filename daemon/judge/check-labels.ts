/**
 * `agl judge check RUN --labels`: how well a judge agrees with people, on the run's rollouts that someone labelled in
 * the viewer (protocol/human-label.ts). The judge scores them as training would (group mode: a task's labelled
 * rollouts in one call; single mode: one call each); a score of JUDGED_GOOD_AT or more is its "good". Against the
 * good/bad labels: the true-positive rate (labelled good, judged good), the true-negative rate (labelled bad, judged
 * bad) and Cohen's kappa (their agreement beyond what their rates alone would give by chance); against the score
 * labels: Spearman. Then a position test: each pair of labelled rollouts of one task is shown to the judge in one
 * call, in both orders; the verdict (which it scores higher, or a tie) should not change with the order, and the
 * share of pairs whose verdict flips measures its position bias. It writes nothing to the store.
 */
import { humanLabelOf, type HumanLabelKind } from '../../protocol/human-label.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { readRolloutMetadata, type Rollout } from '../../protocol/store.js';
import { spearman } from './agreement.js';
import type { Judge, JudgeCall, RolloutToJudge } from './judge.js';

/** The judge's score from which it calls a rollout good. */
export const JUDGED_GOOD_AT = 0.5;

/** One labelled rollout: its task, the person's label and value, the judge's score. */
export interface LabelledRollout {
  rolloutId: string;
  taskId: string;
  label: HumanLabelKind;
  value: number;
  judge: number | null;
}

/** The good/bad labels against the judge's verdicts (null rates: no label of that kind; null kappa: undefined). */
export interface BinaryAgreement {
  good: number;
  bad: number;
  truePositives: number;
  trueNegatives: number;
  tpr: number | null;
  tnr: number | null;
  kappa: number | null;
}

export interface PositionTest {
  pairs: number;
  flipped: number;
  flipRate: number | null;
}

export interface LabelsReport {
  runId: string;
  mode: 'group' | 'single';
  rollouts: LabelledRollout[];
  failed: { taskId: string; reason: string }[];
  calls: number;
  binary: BinaryAgreement;
  /** Spearman of the judge's scores and the score labels (over every score-labelled rollout it scored); null under 2 or no spread. */
  scores: { n: number; spearman: number | null };
  position: PositionTest;
}

/** TPR, TNR and Cohen's kappa of good/bad labels against the judge's verdicts (`judgedGood`). */
export function binaryAgreement(items: readonly { good: boolean; judgedGood: boolean }[]): BinaryAgreement {
  const n = items.length;
  const good = items.filter((x) => x.good).length;
  const truePositives = items.filter((x) => x.good && x.judgedGood).length;
  const trueNegatives = items.filter((x) => !x.good && !x.judgedGood).length;
  const judgedGood = items.filter((x) => x.judgedGood).length;
  const observed = n ? (truePositives + trueNegatives) / n : 0;
  const chance = n ? (good * judgedGood + (n - good) * (n - judgedGood)) / n ** 2 : 0;
  return {
    ...{ good, bad: n - good, truePositives, trueNegatives },
    tpr: good ? truePositives / good : null,
    tnr: n - good ? trueNegatives / (n - good) : null,
    kappa: n && chance < 1 ? (observed - chance) / (1 - chance) : null,
  };
}

/** The run's succeeded rollouts (any mode) that carry a label, with their spans; at most `limit`, the newest first. */
async function labelledRollouts(store: LightningStore, runId: string, limit: number): Promise<{ rollout: Rollout; r: RolloutToJudge; taskId: string }[]> {
  const out: { rollout: Rollout; r: RolloutToJudge; taskId: string }[] = [];
  let cursor: string | null = null;
  do {
    const page = await store.queryRollouts({ runId, status: ['succeeded'], limit: 200, ...(cursor ? { cursor } : {}) });
    for (const rollout of page.items) {
      const spans = await store.querySpans({ rolloutId: rollout.id, attemptId: 'latest' });
      if (!humanLabelOf(spans)) continue;
      const taskId = String(readRolloutMetadata(rollout.metadata).taskId ?? rollout.id);
      out.push({ rollout, taskId, r: { rolloutId: rollout.id, attemptId: spans[0]?.attemptId ?? '', spans } });
    }
    cursor = page.nextCursor;
  } while (cursor && out.length < limit);
  return out.slice(0, limit);
}

/** A pair's verdict in one call: 1 the first given wins, -1 the second, 0 a tie; null when the call failed. */
function verdictOf(scores: Map<string, { score: number }> | undefined, a: string, b: string): number | null {
  const [x, y] = [scores?.get(a)?.score, scores?.get(b)?.score];
  return x === undefined || y === undefined ? null : Math.sign(x - y);
}

/** Scores the run's labelled rollouts with the judge and compares them with the labels (see the header). */
export async function checkAgainstLabels(store: LightningStore, judge: Judge, o: { runId: string; limit: number }): Promise<LabelsReport> {
  const found = await labelledRollouts(store, o.runId, o.limit);
  const byTask = new Map<string, typeof found>();
  for (const f of found) byTask.set(f.taskId, [...(byTask.get(f.taskId) ?? []), f]);
  const mode = judge.settings.mode;
  const report: LabelsReport = {
    ...{ runId: o.runId, mode, rollouts: [], failed: [], calls: 0 },
    ...{ binary: binaryAgreement([]), scores: { n: 0, spearman: null }, position: { pairs: 0, flipped: 0, flipRate: null } },
  };
  const count = (calls: JudgeCall[]) => (report.calls += calls.length);
  let flipped = 0;
  await Promise.all(
    [...byTask].map(async ([taskId, members]) => {
      const got = await judge.judgeGroup(
        members[0]!.rollout.input,
        members.map((m) => m.r),
        `labels\u0000${o.runId}\u0000${taskId}`,
        mode,
      );
      count(got.calls);
      if ('failed' in got) report.failed.push({ taskId, reason: got.failed.reason });
      for (const m of members) {
        const label = humanLabelOf(m.r.spans)!;
        report.rollouts.push({
          rolloutId: m.rollout.id,
          taskId,
          label: label.kind,
          value: label.value,
          judge: 'scores' in got ? (got.scores.get(m.rollout.id)?.score ?? null) : null,
        });
      }
      for (let i = 0; i < members.length; i++)
        for (let j = i + 1; j < members.length; j++) {
          const [a, b] = [members[i]!.r, members[j]!.r];
          const salt = `position\u0000${o.runId}\u0000${a.rolloutId}\u0000${b.rolloutId}`;
          const [ab, ba] = await Promise.all([
            judge.judgeGroup(members[0]!.rollout.input, [a, b], salt, 'group', { keepOrder: true }),
            judge.judgeGroup(members[0]!.rollout.input, [b, a], salt, 'group', { keepOrder: true }),
          ]);
          count([...ab.calls, ...ba.calls]);
          const [first, second] = [
            verdictOf('scores' in ab ? ab.scores : undefined, a.rolloutId, b.rolloutId),
            verdictOf('scores' in ba ? ba.scores : undefined, a.rolloutId, b.rolloutId),
          ];
          if (first === null || second === null) continue;
          report.position.pairs++;
          if (first !== second) flipped++;
        }
    }),
  );
  const judged = report.rollouts.filter((x) => x.judge !== null);
  const binary = judged.filter((x) => x.label !== 'score');
  report.binary = binaryAgreement(binary.map((x) => ({ good: x.label === 'good', judgedGood: x.judge! >= JUDGED_GOOD_AT })));
  const scored = judged.filter((x) => x.label === 'score');
  report.scores = {
    n: scored.length,
    spearman: spearman(
      scored.map((x) => x.judge!),
      scored.map((x) => x.value),
    ),
  };
  report.position.flipped = flipped;
  report.position.flipRate = report.position.pairs ? flipped / report.position.pairs : null;
  return report;
}
