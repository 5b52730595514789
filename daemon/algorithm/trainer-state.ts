/**
 * What a training run has done so far: the state the trainer holds, a checkpoint saves (`state.json`) and a resumed run
 * continues from. Plain data; the trainer is its one writer.
 */
import type { TrainingRun } from '../../protocol/store.js';
import type { JudgeWeightSaid } from '../../protocol/metrics.js';
import type { ReliabilityState } from '../judge/reliability.js';

export interface TrainerState {
  runId: string;
  /** Steps completed. */
  step: number;
  totalSteps: number;
  /** Milliseconds spent training before this process (resume keeps counting). */
  elapsedMs: number;
  /** Each validation: its step, mean reward and the tasks it is over (absent in checkpoints written before it was kept). */
  val: { step: number; reward: number; tasks?: number }[];
  train: { step: number; reward: number }[];
  /** The best held-out reward so far and its step (absent in checkpoints written before it was kept). */
  best?: { step: number; reward: number } | null;
  /**
   * Each policy trained on listed roles (`policies:`): its updates so far (its version, and its own schedule's step
   * count). A run's one policy counts the run's steps.
   */
  policies?: Record<string, { updates: number }>;
  /**
   * The LLM judge's part of the last step (its calls, tokens and cost: null without prices; with judge.retest its
   * weight and why, and the judged groups left out at weight 0), for the progress line.
   */
  judge?: { calls: number; tokens: number; cost: number | null; reliability?: JudgeWeightSaid };
  /** The judge's retest evidence so far, smoothed over steps (daemon/judge/reliability.ts): a resumed run goes on from it. */
  judgeReliability?: ReliabilityState;
  /** Why the judge's divergence monitor stopped the run (training.stopOnDivergence), in its words; absent when it did not. */
  divergence?: string;
}

export function newTrainerState(run: TrainingRun): TrainerState {
  return { runId: run.id, step: run.step, totalSteps: run.totalSteps, elapsedMs: 0, val: [], train: [], best: null };
}

/**
 * A policy's updates so far (its version, and the count its learning-rate schedule reads): a policy of listed roles
 * counts its own, from 0 until its first update; a run's one policy, the run's steps.
 */
export function policyUpdates(state: TrainerState, p: { name: string; roles: string[] | null }): number {
  return p.roles ? (state.policies?.[p.name]?.updates ?? 0) : state.step;
}

/** The state after `policy` (of listed roles) made one more update. */
export function countUpdate(state: TrainerState, policy: { name: string; roles: string[] | null }): void {
  if (!policy.roles) return;
  state.policies ??= {};
  state.policies[policy.name] = { updates: (state.policies[policy.name]?.updates ?? 0) + 1 };
}
