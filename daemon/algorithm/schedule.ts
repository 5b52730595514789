/**
 * The run's schedule, pure functions of the config and a step: which tasks each step rolls out (epoch-wise shuffles,
 * deterministic in (seed, step), so a resumed run continues with exactly the next tasks), how many steps the run
 * makes and why it stopped, and each update's learning rate (as nanoGPT's get_lr(it): the rate is a function of the
 * policy's update count, nothing keeps it in between).
 */
import type { StopReason } from '../../protocol/metrics.js';
import { makeRng } from '../model/sampling.js';
import type { TrainConfig } from './config.js';
import type { Task } from './rollouts.js';

/** Steps the epochs make on their own. */
export function epochSteps(cfg: TrainConfig, trainSize: number): number {
  return Math.ceil((cfg.training.epochs * trainSize) / cfg.training.batchSize);
}

export function plannedSteps(cfg: TrainConfig, trainSize: number): number {
  const byEpochs = epochSteps(cfg, trainSize);
  return cfg.training.maxSteps > 0 ? Math.min(cfg.training.maxSteps, byEpochs) : byEpochs;
}

/**
 * Why the run makes fewer steps than training.maxSteps asks (its epochs make fewer), in one sentence; null when it
 * makes them all. `agl train` says it when it starts, and the run's summary keeps it for the dashboard.
 */
export function fewerStepsNote(cfg: TrainConfig, trainSize: number): string | null {
  const t = cfg.training;
  const made = epochSteps(cfg, trainSize);
  if (t.maxSteps <= made) return null;
  const plural = (n: number, w: string) => `${n} ${w}${n === 1 ? '' : 's'}`;
  const epochs = Math.ceil((t.maxSteps * t.batchSize) / trainSize);
  return (
    `training.maxSteps (--max-steps) ${t.maxSteps} is more than the run makes: ${plural(t.epochs, 'epoch')} of ${plural(trainSize, 'training task')} ` +
    `at ${t.batchSize} tasks per step is ${plural(made, 'step')}; --epochs ${epochs} makes ${t.maxSteps}`
  );
}

/** Why a run that returned normally stopped: every planned step done (the plan cut by maxSteps or not), or out of time. */
export function stopReason(state: { step: number; totalSteps: number; divergence?: string }, cfg: TrainConfig, trainSize: number): StopReason {
  if (state.divergence) return 'judge-divergence';
  if (state.step < state.totalSteps) return 'max-minutes';
  return cfg.training.maxSteps > 0 && cfg.training.maxSteps < epochSteps(cfg, trainSize) ? 'max-steps' : 'completed';
}

/** The tasks of a step: epoch-wise shuffles of the training set, deterministic in (seed, step). */
export function tasksForStep(train: Task[], batchSize: number, seed: number, step: number): Task[] {
  const out: Task[] = [];
  for (let k = 0; k < batchSize; k++) {
    const flat = step * batchSize + k;
    const epoch = Math.floor(flat / train.length);
    const order = shuffledIndices(train.length, seed * 1000003 + epoch);
    out.push(train[order[flat % train.length]]);
  }
  return out;
}

/**
 * Fresh tasks for an extra dynamic-sampling round: a shuffle of the training set of its own, deterministic
 * in (seed, step, round), skipping the tasks the step already rolled out (a task is one group per step).
 */
export function freshTasks(train: Task[], seed: number, step: number, round: number, used: Set<string>, n: number): Task[] {
  const order = shuffledIndices(train.length, (seed * 1000003 + step * 7919 + round * 104729) ^ 0x5a5a5a);
  const out: Task[] = [];
  for (const i of order) {
    if (out.length >= n) break;
    if (!used.has(train[i].id)) out.push(train[i]);
  }
  return out;
}

const orderCache = new Map<string, number[]>();
function shuffledIndices(n: number, seed: number): number[] {
  const key = `${n}:${seed}`;
  let order = orderCache.get(key);
  if (!order) {
    const r = makeRng(seed);
    order = Array.from({ length: n }, (_, i) => i);
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(r() * (i + 1));
      [order[i], order[j]] = [order[j], order[i]];
    }
    orderCache.set(key, order);
  }
  return order;
}

/**
 * The learning rate of a policy's next update (hop 2 of the rate's path: policy-set.ts puts the configured rate in
 * the policy's plan; this turns it into this update's rate, which the trainer sends with the update; the engine
 * applies it to that update only): the configured rate after a linear warm-up over the policy's first `warmupSteps`
 * updates. `updates` counts the policy's own updates so far (0 before its first), never the run's steps.
 */
export function learningRateAt(base: number, warmupSteps: number, updates: number): number {
  return warmupSteps > 0 ? base * Math.min(1, (updates + 1) / warmupSteps) : base;
}
