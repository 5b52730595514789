/**
 * Step 1b of a training step, judge (with train.yaml's `judge:`): an LLM judge scores the rollouts collect brought
 * back, before anything reads their rewards (dynamic sampling's spread, credit). Each group's rollouts that succeeded
 * and whose reward the agent did not lock (protocol/judge-reading.ts lockedReward) go to the judge (daemon/judge/), in
 * one call (group mode) or one each (single mode); each gets the judge's reward as its final reward: the judge's
 * score, or the agent's own plus judge.weight times it (record.ts judgedReward), stored as a reward span with the
 * judge's explanation as its feedback, beside the judge call's span. A group the judge could not score after its
 * tries is left out of the step (no reward, no transition, no update), counted by why (judge/failed_<kind>) for the
 * step's notes, never scored 0. Validation rollouts are judged one by one (single mode) per judge.validation; one the
 * judge could not score is left out of the held-out mean. With judge.retest (the default) the judge scores some of
 * the step's groups a second time by separate calls (group mode: half of each round's groups whose scores spread, the
 * whole group shown again; single mode: one rollout of each of SINGLE_RETESTS tasks a step gets a second call), and the
 * step keeps that evidence of how informative it is (daemon/judge/reliability.ts): the trainer multiplies the judged
 * groups' advantages by its weight, its informativeness once its lower bound is above 0 (step-advantages.ts), and leaves them out
 * at weight 0 (or at most judge.minReliability). Group mode's within-call copy is no evidence for the weight (the two
 * copies share one context).
 */
import { METRICS, judgeFailureMetric, JUDGE_FAILURES, type JudgeFailure } from '../../protocol/metrics.js';
import { isJudgeReward, lockedReward } from '../../protocol/judge-reading.js';
import { pickFinalReward } from '../../protocol/span-reading.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import type { Judge, RolloutToJudge } from '../judge/judge.js';
import { judgeCallSpans, judgedReward, type JudgedReward } from '../judge/record.js';
import {
  evidenceOf,
  reliabilityOf,
  smoothed,
  type Reliability,
  type ReliabilityEvidence,
  type ReliabilityState,
  type RetestGroup,
} from '../judge/reliability.js';
import { seededOrder } from '../judge/request.js';
import type { RewardSeen } from './adapter.js';
import type { GroupRollout } from './rollouts.js';

/** Single mode: how many of a step's tasks get one rollout scored twice by a second call. */
export const SINGLE_RETESTS = 4;
/** Group mode: the share of a round's scored groups (those whose scores spread: the ones GRPO learns from) shown again. */
export const RETEST_SHARE = 0.5;

/** A round's groups after the judge: those it scored (or had nothing to score in), and the rollouts of those it could not. */
export interface JudgedRound {
  kept: GroupRollout[];
  leftOut: GroupRollout[];
}

/** What the judge did in one step: calls, tokens, cost, the groups it scored, the groups it could not and why. */
export interface JudgeTotals {
  calls: number;
  tokens: number;
  cost: number | null;
  groups: number;
  failed: Record<JudgeFailure, number>;
}

const newTotals = (): JudgeTotals => ({ calls: 0, tokens: 0, cost: null, groups: 0, failed: { malformed: 0, partial: 0, error: 0, timeout: 0 } });
export const failedGroups = (t: JudgeTotals): number => Object.values(t.failed).reduce((a, n) => a + n, 0);

/** The judge's part of a step's metrics (protocol/metrics.ts): cost only with prices, a failure kind only when it happened. */
export function judgeMetrics(t: JudgeTotals): Record<string, number> {
  return {
    [METRICS.judgeCalls]: t.calls,
    [METRICS.judgeTokens]: t.tokens,
    ...(t.cost !== null ? { [METRICS.judgeCost]: t.cost } : {}),
    [METRICS.judgeGroups]: t.groups,
    [METRICS.judgeFailedGroups]: failedGroups(t),
    ...Object.fromEntries((Object.keys(JUDGE_FAILURES) as JudgeFailure[]).filter((k) => t.failed[k] > 0).map((k) => [judgeFailureMetric(k), t.failed[k]])),
  };
}

/** The judge's reliability at a step (reliability.ts), and what the trainer does with the groups it judged. */
export interface JudgeReliabilityStep extends Reliability {
  /** Pairs from separate calls this step (the reliability's `pairs` are the smoothed count). */
  stepPairs: number;
  /** The tasks whose groups the judge scored this step. */
  groups: ReadonlySet<string>;
  /** What their advantages are multiplied by: the weight, or 0 at or below judge.minReliability (then they are left out). */
  scale: number;
  floor: number;
}

/** The reliability's part of a step's metrics: the weight and why (the correlation, its bound, the pairs), the groups left out. */
export function reliabilityMetrics(j: JudgeReliabilityStep): Record<string, number> {
  return {
    [METRICS.judgeWeight]: j.scale,
    ...(j.r !== null ? { [METRICS.judgeReliability]: j.r } : {}),
    [METRICS.judgeReliabilityLow]: j.low,
    ...(j.informativeness !== null ? { [METRICS.judgeInformativeness]: j.informativeness } : {}),
    ...(j.noise !== null ? { [METRICS.judgeNoise]: j.noise } : {}),
    ...(j.signal !== null ? { [METRICS.judgeSignal]: j.signal } : {}),
    [METRICS.judgeRetestPairs]: j.stepPairs,
    [METRICS.judgeUnreliableGroups]: j.scale === 0 ? j.groups.size : 0,
  };
}

/** The judge's share of one step: it judges the step's rounds of rollouts and its validation, and keeps the totals. */
export class StepJudge {
  readonly totals = newTotals();
  /** Why the last group the judge could not score has no score (null while none failed). */
  lastReason: string | null = null;
  /** The training groups it scored this step: their tasks, and its scores of each with the second scores of separate calls. */
  private readonly judgedTasks = new Set<string>();
  private readonly scored = new Map<string, { task: unknown; rollouts: RolloutToJudge[]; scores: number[]; seconds: (number | null)[] }>();

  constructor(
    private readonly judge: Judge,
    private readonly store: LightningStore,
    private readonly o: { runId: string; step: number; log?: (m: string) => void; onProgress?: (done: number, total: number) => void },
  ) {}

  /**
   * A training round's groups judged: a rollout's reward becomes the judge's; a group it could not score is left out.
   * With judge.retest, group mode then shows RETEST_SHARE of the round's groups again (judgeAgain); single mode scores
   * one rollout of each of SINGLE_RETESTS tasks of round 0 twice (reliability.ts trusts the judge only as far as its
   * pairs between calls show).
   */
  async judgeRound(groups: GroupRollout[], round = 0): Promise<JudgedRound> {
    const byTask = new Map<string, GroupRollout[]>();
    for (const g of groups) byTask.set(g.task.id, [...(byTask.get(g.task.id) ?? []), g]);
    const { retest, mode } = this.judge.settings;
    const tasks = [...byTask.keys()];
    const singleRetests = new Set(
      retest && mode === 'single' && round === 0
        ? seededOrder(tasks.length, this.o.step, this.o.runId)
            .slice(0, SINGLE_RETESTS)
            .map((i) => tasks[i]!)
        : [],
    );
    const leftOutTasks = new Set<string>();
    let done = 0;
    await Promise.all(
      [...byTask].map(async ([taskId, members]) => {
        const again = mode === 'group' ? retest : singleRetests.has(taskId);
        const salt = `${this.o.runId}\u0000${this.o.step}\u0000${round}\u0000${taskId}`;
        const ok = await this.judgeGroup(members, salt, { retest: again, train: `${round}\u0000${taskId}` });
        if (!ok) leftOutTasks.add(taskId);
        this.o.onProgress?.(++done, byTask.size);
      }),
    );
    if (retest && mode === 'group')
      await this.judgeAgain(
        tasks.filter((t) => !leftOutTasks.has(t)).map((t) => `${round}\u0000${t}`),
        round,
      );
    return { kept: groups.filter((g) => !leftOutTasks.has(g.task.id)), leftOut: groups.filter((g) => leftOutTasks.has(g.task.id)) };
  }

  /**
   * Validation rollouts judged one by one (single mode) per judge.validation: `judge` every one, `auto` those the
   * agent gave no reward, `agent` none. Returns the rollouts the held-out mean is over (one the judge could not score is not).
   */
  async judgeValidation(groups: GroupRollout[]): Promise<GroupRollout[]> {
    const how = this.judge.settings.validation;
    if (how === 'agent') return groups;
    const out: GroupRollout[] = [];
    await Promise.all(
      groups.map(async (g) => {
        const judged = g.trajectory !== null && (how === 'judge' || g.trajectory.rewards.length === 0);
        if (!judged || (await this.judgeGroup([g], `${this.o.runId}\u0000val\u0000${this.o.step}\u0000${g.rollout.id}`, { mode: 'single' }))) out.push(g);
      }),
    );
    const dropped = groups.length - out.length;
    if (dropped) this.o.log?.(`validation: the judge could not score ${dropped} of ${groups.length} rollouts; the held-out mean is over the others`);
    return groups.filter((g) => out.includes(g));
  }

  /**
   * Group mode's retest between calls: RETEST_SHARE of the round's scored groups whose scores spread (in a seeded
   * order), each shown again whole by a call of its own; its scores are second scores (spans marked as a retest, no
   * reward). A call that fails costs its pairs only.
   */
  private async judgeAgain(keys: string[], round: number): Promise<void> {
    const spread = keys.filter((k) => new Set(this.scored.get(k)?.scores).size > 1);
    const picked = seededOrder(spread.length, this.o.step, `${this.o.runId}\u0000again\u0000${round}`)
      .slice(0, Math.ceil(spread.length * RETEST_SHARE))
      .map((i) => spread[i]!);
    await Promise.all(
      picked.map(async (key) => {
        const g = this.scored.get(key)!;
        const { call, seconds } = await this.judge.judgeAgain(g.task, g.rollouts, `${this.o.runId}\u0000${this.o.step}\u0000${key}`);
        await this.store.addSpans(judgeCallSpans(call, { model: this.judge.caller.model, rubricSha: this.judge.rubricSha, rewards: new Map() }));
        this.count([call]);
        if (seconds) g.seconds = g.rollouts.map((r) => seconds.get(r.rolloutId) ?? null);
      }),
    );
  }

  /** This step's evidence of the judge's reliability: its scores within the groups it scored, and their second scores. */
  evidence(): ReliabilityEvidence {
    return evidenceOf([...this.scored.values()] satisfies RetestGroup[]);
  }

  /**
   * The judge's reliability after this step (`before`: the run's smoothed sums so far) and what it does to the groups
   * the judge scored; null with judge.retest off. Returns the sums to keep for the next step too.
   */
  reliability(before: ReliabilityState | undefined): { step: JudgeReliabilityStep; state: ReliabilityState } | null {
    const { retest, minReliability } = this.judge.settings;
    if (!retest) return null;
    const evidence = this.evidence();
    const state = smoothed(before, evidence);
    const rel = reliabilityOf(state);
    const scale = rel.weight <= minReliability ? 0 : rel.weight;
    return { state, step: { ...rel, stepPairs: evidence.pairs, groups: this.judgedTasks, scale, floor: minReliability } };
  }

  /** One group judged (its succeeded rollouts the agent did not lock); false when the judge could not score it. `train`: its key in this step's evidence. */
  private async judgeGroup(members: GroupRollout[], salt: string, o: { mode?: 'single'; retest?: boolean; train?: string } = {}): Promise<boolean> {
    const candidates: { g: GroupRollout; r: RolloutToJudge }[] = [];
    for (const g of members) {
      if (!g.trajectory) continue;
      const spans = await this.store.querySpans({ rolloutId: g.rollout.id, attemptId: g.trajectory.attemptId });
      if (lockedReward(spans)) continue;
      candidates.push({ g, r: { rolloutId: g.rollout.id, attemptId: g.trajectory.attemptId, spans } });
    }
    if (!candidates.length) return true;
    const judgement = await this.judge.judgeGroup(
      members[0]!.task.input,
      candidates.map((c) => c.r),
      salt,
      o.mode,
      { retest: o.retest },
    );
    const rewards = new Map<string, JudgedReward>();
    if ('scores' in judgement)
      for (const { g } of candidates) {
        const agent = pickFinalReward(g.trajectory!.rewards)?.value ?? null;
        rewards.set(g.rollout.id, judgedReward(judgement.scores.get(g.rollout.id)!, this.judge.settings.weight, agent));
      }
    const spans = judgement.calls.flatMap((c) => judgeCallSpans(c, { model: this.judge.caller.model, rubricSha: this.judge.rubricSha, rewards }));
    const stored = await this.store.addSpans(spans);
    this.count(judgement.calls);
    if ('failed' in judgement) {
      this.totals.failed[judgement.failed.kind]++;
      this.lastReason = judgement.failed.reason;
      this.o.log?.(`judge: task ${members[0]!.task.id} left out of step ${this.o.step}: ${judgement.failed.reason}`);
      return false;
    }
    this.totals.groups++;
    if (o.train) {
      this.judgedTasks.add(members[0]!.task.id);
      const separate = new Map(judgement.pairs.filter((p) => p.separate).map((p) => [p.rolloutId, p.second]));
      this.scored.set(o.train, {
        task: members[0]!.task.input,
        rollouts: candidates.map((c) => c.r),
        scores: candidates.map((c) => judgement.scores.get(c.g.rollout.id)!.score),
        seconds: candidates.map((c) => separate.get(c.g.rollout.id) ?? null),
      });
    }
    // The trajectories the step goes on with carry the judged reward as their final one, as the store now does.
    for (const s of stored) {
      const reward = rewards.get(s.rolloutId);
      const traj = candidates.find((c) => c.g.rollout.id === s.rolloutId)?.g.trajectory;
      if (!reward || !traj || !isJudgeReward(s)) continue;
      const seen: RewardSeen = { value: reward.value, name: 'judge', final: true, spanId: s.spanId, time: s.endTime ?? s.startTime };
      traj.rewards.push(seen);
      traj.steps.at(-1)?.rewards.push(seen);
    }
    return true;
  }

  private count(calls: { result: { promptTokens: number; completionTokens: number; cost: number | null } }[]): void {
    const t = this.totals;
    for (const { result: r } of calls) {
      t.calls++;
      t.tokens += r.promptTokens + r.completionTokens;
      if (r.cost !== null) t.cost = (t.cost ?? 0) + r.cost;
    }
  }
}
