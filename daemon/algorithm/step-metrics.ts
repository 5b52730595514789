/**
 * Step 5 of a training step, metrics: what the step measured (names in protocol/metrics.ts) and every call's
 * transition (credit, advantage) into the store, where the dashboard and the viewer read them. Only what was
 * measured is recorded: a policy's loss, KL, clip ratio, gradient norm and learning rate exist at the steps it
 * updated, its reward at the steps its roles made calls; a step without them leaves a gap, never a made-up 0.
 */
import { addLossStats, emptyLossStats, summarizeLossStats } from '../../protocol/engine.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { METRICS, policyMetric, roleMetric } from '../../protocol/metrics.js';
import type { Transition } from '../../protocol/store.js';
import type { PeakMemory } from '../model/policy-contract.js';
import { stdUnbiased } from './grpo.js';
import { type GroupRollout, finalRewards } from './rollouts.js';
import type { CreditedStep, KeptItem } from './step-advantages.js';
import type { RolledOut } from './step-collect.js';
import type { CreditedItem } from './step-credit.js';
import { NO_UPDATE, type PolicyUpdate } from './step-update.js';

/** How long the step's phases took (seconds). */
export interface StepTimes {
  rolloutSeconds: number;
  stepSeconds: number;
}

/** The step's peak memory over its updates (the largest one reported), or null when no engine reported one. */
export function stepPeakMemory(updates: PolicyUpdate[]): PeakMemory | null {
  return updates.map((u) => u.result?.peakMemory).reduce<PeakMemory | null>((a, m) => (m && (!a || m.bytes > a.bytes) ? m : a), null);
}

/** The step's update over every policy: loss summed, statistics pooled by token, the gradient norm of all of them. */
function pooledUpdate(updates: PolicyUpdate[]) {
  const results = updates.map((u) => u.result ?? NO_UPDATE);
  const pooled = emptyLossStats();
  for (const r of results) addLossStats(pooled, r.stats);
  return {
    loss: results.reduce((a, r) => a + r.loss, 0),
    gradNorm: Math.sqrt(results.reduce((a, r) => a + r.gradNorm ** 2, 0)),
    tokens: results.reduce((a, r) => a + r.tokens, 0),
    seconds: results.reduce((a, r) => a + r.seconds, 0),
    stats: summarizeLossStats(pooled),
  };
}

/**
 * The step's rollouts: rewards of the scheduled tasks, counts, calls, and what dynamic sampling did. The rollouts of
 * groups the judge could not score count as rollouts and calls, never in the rewards (a step with no other has none).
 */
function rolloutMetrics(rolled: RolledOut, items: CreditedItem[]): Record<string, number> {
  // reward/mean and reward/std describe the step's scheduled tasks, comparable across variants; refills are counted apart.
  const rewards = finalRewards(rolled.scheduled);
  const completionTokens = items.reduce((a, i) => a + i.s.completionIds.length, 0);
  const { sampled } = rolled;
  const all = [...rolled.groups, ...rolled.leftOut];
  const trajectories = all.flatMap((g) => (g.trajectory ? [g.trajectory] : []));
  const rewarded = rewards.length > 0 || rolled.leftOut.length === 0;
  return {
    ...(rewarded ? { [METRICS.rewardMean]: rewards.reduce((a, x) => a + x, 0) / Math.max(1, rewards.length), [METRICS.rewardStd]: stdUnbiased(rewards) } : {}),
    ...(sampled ? { [METRICS.samplingRounds]: sampled.rounds, [METRICS.groupsKept]: sampled.kept.size } : {}),
    [METRICS.responseLengthMean]: items.length ? completionTokens / items.length : 0,
    [METRICS.rolloutCount]: all.length,
    [METRICS.rolloutFailed]: all.filter((g) => !g.trajectory).length,
    [METRICS.rolloutTransitions]: items.length,
    [METRICS.llmCalls]: trajectories.reduce((a, t) => a + t.steps.length + t.skipped.length, 0),
    [METRICS.greedyCalls]: trajectories.reduce((a, t) => a + t.greedyCalls, 0),
  };
}

/**
 * What the step measured. The run's learning rate (`grpo/lr`) is its one policy's; with policies per role each has
 * its own (`policy/<name>/lr`), and the run has none.
 */
export function stepMetrics(
  rolled: RolledOut,
  credited: CreditedStep,
  updates: PolicyUpdate[],
  times: StepTimes,
  updatesSoFar: (policy: string) => number,
): Record<string, number> {
  const { items } = credited;
  const update = pooledUpdate(updates);
  const s = update.stats;
  // The tokens the update trained on: kept calls with an advantage (a call with advantage 0 moves no weight).
  const trained = credited.perPolicy.flat().filter((k) => k.advantage !== 0);
  const trainedTokens = trained.reduce((a, k) => a + k.s.completionIds.length, 0);
  const peak = stepPeakMemory(updates);
  const onePolicy = updates.length === 1 && updates[0]!.policy.roles === null ? updates[0]! : null;
  return {
    ...rolloutMetrics(rolled, items),
    [METRICS.fracRewardZeroStd]: credited.fracRewardZeroStd,
    [METRICS.kl]: s.kl,
    [METRICS.clipRatio]: s.clipRatio,
    [METRICS.loss]: update.loss,
    [METRICS.gradNorm]: update.gradNorm,
    ...(onePolicy ? { [METRICS.lr]: onePolicy.lr } : {}),
    [METRICS.entropy]: s.entropy,
    ...(peak ? { [METRICS.peakMemoryMiB]: Math.round((peak.bytes / 2 ** 20) * 10) / 10 } : {}),
    [METRICS.tokensPerS]: update.seconds > 0 ? update.tokens / update.seconds : 0,
    [METRICS.rolloutS]: times.rolloutSeconds,
    [METRICS.stepS]: times.stepSeconds,
    [METRICS.trainedTokens]: trainedTokens,
    [METRICS.logprobGap]: s.logprobGap,
    [METRICS.logprobGapMax]: s.logprobGapMax,
    [METRICS.tisCapped]: s.tisCappedRatio,
    ...policyMetrics(
      updates.filter((u) => u.policy.roles),
      updatesSoFar,
    ),
    ...roleMetrics(rolled.groups, items, trained, trainedTokens),
  };
}

/**
 * Each policy of listed roles, its own curves: its calls (`transitions`) and its updates so far (`updatesSoFar`) at
 * every step; the reward of its calls (their mean credit) when it had calls; loss, KL, clip ratio, gradient norm and
 * learning rate when it updated.
 */
export function policyMetrics(updates: PolicyUpdate[], updatesSoFar: (policy: string) => number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const u of updates) {
    const m = (name: string, value: number) => {
      out[policyMetric(u.policy.name, name)] = value;
    };
    m('transitions', u.items.length);
    m('updates', updatesSoFar(u.policy.name));
    if (u.items.length) m('reward', u.items.reduce((a, k) => a + k.credit, 0) / u.items.length);
    if (!u.result) continue;
    const s = summarizeLossStats(u.result.stats);
    m('loss', u.result.loss);
    m('kl', s.kl);
    m('clip_ratio', s.clipRatio);
    m('grad_norm', u.result.gradNorm);
    m('lr', u.lr);
  }
  return out;
}

/**
 * Each named role's part of a step (protocol/metrics.ts ROLE_METRICS): its LLM calls in the step's rollouts (trained
 * or left out by the run's selection), the mean final reward of the rollouts it took part in, the mean credit of its
 * trained calls, and its share of the tokens the update trained on. Calls naming no role are not counted.
 */
export function roleMetrics(groups: GroupRollout[], items: CreditedItem[], trained: KeptItem[], trainedTokens: number): Record<string, number> {
  const calls = new Map<string, number>();
  const rewards = new Map<string, number[]>();
  for (const g of groups) {
    if (!g.trajectory) continue;
    const reward = finalRewards([g])[0]!;
    const here = new Set<string>();
    for (const name of [...g.trajectory.steps.map((s) => s.agentName), ...g.trajectory.skipped.map((s) => s.agentName)]) {
      if (name === null) continue;
      calls.set(name, (calls.get(name) ?? 0) + 1);
      here.add(name);
    }
    for (const name of here) rewards.set(name, [...(rewards.get(name) ?? []), reward]);
  }
  const credits = new Map<string, number[]>();
  for (const it of items) if (it.s.agentName !== null) credits.set(it.s.agentName, [...(credits.get(it.s.agentName) ?? []), it.credit]);
  const tokens = new Map<string, number>();
  for (const k of trained) if (k.s.agentName !== null) tokens.set(k.s.agentName, (tokens.get(k.s.agentName) ?? 0) + k.s.completionIds.length);
  const mean = (xs: number[]) => xs.reduce((a, x) => a + x, 0) / xs.length;
  const out: Record<string, number> = {};
  for (const [role, n] of [...calls].sort(([a], [b]) => a.localeCompare(b))) {
    out[roleMetric(role, 'calls')] = n;
    out[roleMetric(role, 'reward')] = mean(rewards.get(role)!);
    const c = credits.get(role);
    if (c) out[roleMetric(role, 'credit')] = mean(c);
    out[roleMetric(role, 'token_share')] = trainedTokens > 0 ? (tokens.get(role) ?? 0) / trainedTokens : 0;
  }
  return out;
}

/** The step's metrics and every call's transition (credit, advantage) into the store, numbered `step` (1-based). */
export async function recordStep(store: LightningStore, runId: string, step: number, metrics: Record<string, number>, credited: CreditedStep): Promise<void> {
  await store.addMetrics(Object.entries(metrics).map(([name, value]) => ({ runId, step, name, value })));
  const transitions: Transition[] = credited.items.map((it, k) => ({
    runId,
    step,
    rolloutId: it.s.rolloutId,
    attemptId: it.s.attemptId,
    spanId: it.s.spanId,
    groupId: it.groupId,
    index: it.s.index,
    agentName: it.s.agentName,
    reward: it.s.rewards.length ? it.s.rewards.reduce((a, r) => a + r.value, 0) : null,
    credit: it.credit,
    advantage: credited.advantages[k]!,
    promptTokens: it.s.promptIds.length,
    completionTokens: it.s.completionIds.length,
  }));
  if (transitions.length) await store.addTransitions(transitions);
}
