/**
 * The LightningRL training loop, one step at a time:
 *   publish the policy -> enqueue each task n times -> (runner workers execute through the gateway) -> wait
 *   -> adapt spans to transitions -> assign credit -> GRPO advantages -> one policy update -> metrics,
 *   transitions and run progress to the store -> validate every K steps -> checkpoint.
 * The trainer owns no process: the caller provides the store, the policy set that the gateway serves (each policy
 * updated in place, so the next published version samples from the new weights) and a checkpoint writer. A run's one
 * policy is a set of one policy serving every call; with `policies:` each policy learns from its own roles' calls.
 * Each update's settings travel with it: the policy's GRPO settings in its loss, its schedule's learning rate.
 * Task order is a pure function of (seed, step), so a resumed run continues with exactly the next tasks.
 */
import { addLossStats, emptyLossStats, summarizeLossStats } from '../../protocol/engine.js';
import { METRICS, describePeakMemory, policyMetric, roleMetric, type StopReason } from '../../protocol/metrics.js';
import {
  LEARNING_CHECK_STEPS,
  describeDiagnosis,
  diagnoseLearning,
  type LearningDiagnosis,
  type PointLike,
  type RunContext,
} from '../../protocol/training-health.js';
import type { TrainingRun, Transition } from '../../protocol/store.js';
import type { PeakMemory, SequencePair, TrainStepResult } from '../model/policy-contract.js';
import { makeRng } from '../model/sampling.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import type { TrajectoryStep } from './adapter.js';
import { assignCredit } from './credit.js';
import type { TrainConfig } from './config.js';
import { computeAdvantages, grpoLoss, stdUnbiased } from './grpo.js';
import { listedRoles } from '../../protocol/policy-set.js';
import type { OpenPolicySet, TrainedPolicy } from './open-policy-set.js';
import { type GroupRollout, type Task, dynamicSampling, everyRolloutFailed, finalRewards, publishPolicy, runGroups } from './rollouts.js';

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
}

/** A policy's updates so far (its version): a policy of listed roles counts its own; a run's one policy, the run's steps. */
export function policyUpdates(state: TrainerState, p: { name: string; roles: string[] | null }): number {
  return p.roles ? (state.policies?.[p.name]?.updates ?? 0) : state.step;
}

/** A trained call with the advantage its policy trains it with. */
type KeptItem = CreditedItem & { advantage: number };

/** One policy's update in a step, for its metrics. */
interface PolicyUpdate {
  policy: TrainedPolicy;
  result: TrainStepResult;
  lr: number;
  items: KeptItem[];
}

/** A step's credited calls: what the store records of each, and what each policy trains on. */
interface CreditedStep {
  items: CreditedItem[];
  /** Per item: the advantage its policy trained it with (0: not trained). */
  advantages: number[];
  fracRewardZeroStd: number;
  /** Per trained policy (in the set's order): the calls it trains on. */
  perPolicy: KeptItem[][];
}

export interface TrainerDeps {
  store: LightningStore;
  /** The run's policies (open-policy-set.ts): the trained ones, and the model serving every call none of them claims. */
  policies: OpenPolicySet;
  /** The gateway's OpenAI-compatible base URL (…/v1) that serves the policies. */
  endpoint: string;
  agent: string;
  /** The agent as the user can name it where they are (what a fix hint prints: `agl rollout <it>`); default `agent`. */
  agentRef?: string;
  config: TrainConfig;
  train: Task[];
  val: Task[];
  /** Sample from another server (engine.sampler) instead of the policy the gateway serves. */
  sampler?: { url: string; model: string; apiKeyEnv: string | null } | null;
  /** Called after each update that changed the weights (pushes them to the sampler). */
  afterUpdate?: (state: TrainerState) => Promise<void>;
  /** Writes a checkpoint of the policies and this state (called every `checkpointEvery` steps). */
  checkpoint: (state: TrainerState) => Promise<void>;
  /** Keeps the policy as the best so far (called when a validation beats every earlier one; `state.best` is set). */
  saveBest?: (state: TrainerState) => Promise<void>;
  log?: (message: string) => void;
  /** Called once when the first LEARNING_CHECK_STEPS steps show the run cannot learn (protocol/training-health.ts). */
  onDiagnosis?: (d: LearningDiagnosis) => void;
  onProgress?: (phase: string, done: number, total: number, state: TrainerState) => void;
  signal?: AbortSignal;
}

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
export function stopReason(state: TrainerState, cfg: TrainConfig, trainSize: number): StopReason {
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

/** A step's rollouts: the scheduled groups, and with dynamic sampling what it kept (groups: every group rolled out). */
interface RolledOut {
  scheduled: GroupRollout[];
  sampled: Awaited<ReturnType<typeof dynamicSampling>> | null;
  groups: GroupRollout[];
}
/** One LLM call of the step with its credit and its GRPO group. */
export interface CreditedItem {
  g: GroupRollout;
  s: TrajectoryStep;
  credit: number;
  groupId: string;
}

/** Steps in a row with every rollout failed before training stops with the agent's error. */
export const MAX_FAILED_STEPS = 3;
/**
 * A role given a policy must make an LLM call by the end of this many training steps (with the validation before
 * them), else the run stops: its policy would never train. Not at the first validation alone: a role the agent
 * calls only sometimes (sql's rewriter, when the checker rejects) may make no call in a greedy validation.
 */
export const ROLE_CHECK_STEPS = 3;

export class Trainer {
  /** Training steps in a row in which every rollout failed (the agent is broken, not unlucky). */
  private failedSteps = 0;
  /** Roles seen making LLM calls (validation and training rollouts), until every role with a policy was seen. */
  private readonly rolesSeen = new Set<string>();
  private rolesChecked = false;
  private rolesSeenIn = { val: 0, train: 0 };
  /** Per role, its LLM calls that failed (no completion recorded), while the role check runs. */
  private readonly rolesFailed = new Map<string, number>();
  /** The metrics of the steps this process ran, until the learning check (LEARNING_CHECK_STEPS) is done. */
  private firstSteps: PointLike[] = [];
  /** Why this run cannot learn, when its first steps showed it. */
  diagnosis: LearningDiagnosis | null = null;
  /** What the engine's peak memory measures (the last update that reported it), for the run's summary. */
  peakMemoryKind: PeakMemory['kind'] | null = null;

  constructor(
    private readonly deps: TrainerDeps,
    public state: TrainerState,
  ) {}

  private log(m: string): void {
    this.deps.log?.(m);
  }

  private get agentRef(): string {
    return this.deps.agentRef ?? this.deps.agent;
  }

  /** What the diagnosis reads besides the metrics: the run's sampling temperature, how to name the agent, its policies. */
  private diagnosisContext(): RunContext {
    const policyRoles = Object.fromEntries(this.deps.policies.trained.flatMap((p) => (p.roles ? [[p.name, p.roles]] : [])));
    return { temperature: this.deps.config.model.temperature, agent: this.agentRef, policyRoles };
  }

  async publish(purpose: 'train' | 'val'): Promise<string> {
    const m = this.deps.config.model;
    const routing = this.deps.policies.routing();
    const res = await publishPolicy(this.deps.store, {
      endpoint: this.deps.endpoint,
      model: this.deps.policies.fallback.name,
      maxTokens: m.maxTokens,
      temperature: purpose === 'val' ? m.valTemperature : m.temperature,
      topP: purpose === 'val' ? undefined : m.topP,
      metadata: { runId: this.state.runId, step: this.state.step, purpose },
      upstream: this.deps.sampler,
      ...(routing ? { roleModels: routing.roleModels, unassignedRole: routing.unassignedRole } : {}),
    });
    return res.id;
  }

  /** Mean final reward on the validation tasks (greedy by default). */
  async validate(): Promise<number> {
    const t = this.deps.config.training;
    const tasks = t.valSize > 0 ? this.deps.val.slice(0, t.valSize) : this.deps.val;
    const resourcesId = await this.publish('val');
    const groups = await runGroups(this.deps.store, tasks, {
      agent: this.deps.agent,
      mode: 'val',
      resourcesId,
      groupSize: 1,
      timeoutSeconds: this.deps.config.runtime.rolloutTimeoutSeconds,
      metadata: { runId: this.state.runId, step: this.state.step },
      signal: this.deps.signal,
      onProgress: (done, total) => this.deps.onProgress?.('validate', done, total, this.state),
    });
    const failed = everyRolloutFailed(groups);
    if (failed && this.state.val.length === 0) {
      throw new Error(
        `every validation rollout failed before training (${failed.count} of ${failed.count}), e.g.: ${failed.error}. Fix the agent (try it once: agl rollout ${this.agentRef} --task '<one task>') and run again`,
      );
    }
    if (failed) this.log(`validation: all ${failed.count} rollouts failed, e.g.: ${failed.error}`);
    if (this.state.val.length === 0 && !this.rolesChecked) this.noteRoles(groups, 'val');
    const rewards = finalRewards(groups);
    const mean = rewards.reduce((a, x) => a + x, 0) / Math.max(1, rewards.length);
    this.state.val.push({ step: this.state.step, reward: mean, tasks: tasks.length });
    await this.deps.store.addMetrics([
      { runId: this.state.runId, step: this.state.step, name: METRICS.valReward, value: mean },
      { runId: this.state.runId, step: this.state.step, name: METRICS.valTasks, value: tasks.length },
    ]);
    if (!this.state.best || mean > this.state.best.reward) {
      this.state.best = { step: this.state.step, reward: mean };
      await this.deps.saveBest?.(this.state);
    }
    return mean;
  }

  /**
   * One GRPO step: roll out, credit, advantages, update, record. Returns the metrics it stored. What it records is
   * numbered by the updates made once it is done (protocol/metrics.ts FIRST_TRAINING_STEP): the first step is step 1.
   */
  async step(): Promise<Record<string, number>> {
    const started = Date.now();
    const step = this.state.step;
    const rolled = await this.rollOut(step);
    if (!this.rolesChecked) this.noteRoles(rolled.groups, 'train', step);
    const rolloutSeconds = (Date.now() - started) / 1000;
    const credited = this.creditAndAdvantages(rolled);
    const updates = await this.update(step, credited.perPolicy);
    const metrics = this.stepMetrics(rolled, credited, updates, rolloutSeconds, (Date.now() - started) / 1000);
    await this.record(step + 1, metrics, credited);
    // After recording: a step whose every rollout failed is on the dashboard too, also the one that stops the run.
    this.checkFailures(step, rolled.scheduled);
    this.checkLearning(step, metrics);
    this.state.step = step + 1;
    const rMean = metrics[METRICS.rewardMean]!;
    this.state.train.push({ step: step + 1, reward: rMean });
    const peak = metrics[METRICS.peakMemoryMiB];
    this.log(
      `step ${step + 1}/${this.state.totalSteps} reward ${rMean.toFixed(3)} zero-std ${credited.fracRewardZeroStd.toFixed(2)} clip ${metrics[METRICS.clipRatio]!.toFixed(3)} ${metrics[METRICS.stepS]!.toFixed(1)}s` +
        (peak === undefined ? '' : ` peak ${describePeakMemory(peak, this.peakMemoryKind)}`),
    );
    return metrics;
  }

  /** The step's tasks rolled out n times each (and, with DAPO dynamic sampling, refills for groups without spread). */
  private async rollOut(step: number): Promise<RolledOut> {
    const { config: cfg, store } = this.deps;
    const t = cfg.training;
    const tasks = tasksForStep(this.deps.train, t.batchSize, t.seed, step);
    const resourcesId = await this.publish('train');
    const rollOut = (ts: Task[], round: number) =>
      runGroups(store, ts, {
        agent: this.deps.agent,
        mode: 'train',
        resourcesId,
        groupSize: t.groupSize,
        timeoutSeconds: cfg.runtime.rolloutTimeoutSeconds,
        metadata: { runId: this.state.runId, step: step + 1, ...(round > 0 ? { samplingRound: round } : {}) },
        adapter: { agentMatch: this.trainedRolesMatch() ?? t.agentMatch },
        signal: this.deps.signal,
        onProgress: (done, total) => this.deps.onProgress?.(round > 0 ? `rollouts (refill ${round})` : 'rollouts', done, total, this.state),
      });
    const scheduled = await rollOut(tasks, 0);
    // DAPO dynamic sampling (for the policies whose settings ask for it): groups without reward spread dropped, the
    // batch refilled from fresh tasks (bounded by the most rounds any of them allows).
    const sampling = this.deps.policies.trained.filter((p) => p.grpo.dynamicSampling);
    const sampled = sampling.length
      ? await dynamicSampling(scheduled, {
          batchSize: t.batchSize,
          maxRounds: Math.max(...sampling.map((p) => p.grpo.dynamicSamplingRounds)),
          rollOut,
          freshTasks: (round, used, n) => freshTasks(this.deps.train, t.seed, step, round, used, n),
        })
      : null;
    return { scheduled, sampled, groups: sampled ? sampled.groups : scheduled };
  }

  /** A step whose every rollout failed is logged; MAX_FAILED_STEPS of them in a row stop training with the agent's error. */
  private checkFailures(step: number, scheduled: GroupRollout[]): void {
    const failed = everyRolloutFailed(scheduled);
    this.failedSteps = failed ? this.failedSteps + 1 : 0;
    if (!failed) return;
    this.log(`step ${step + 1}: all ${failed.count} rollouts failed, e.g.: ${failed.error}`);
    if (this.failedSteps >= MAX_FAILED_STEPS) {
      throw new Error(
        `every rollout of the last ${MAX_FAILED_STEPS} steps failed, e.g.: ${failed.error}. Fix the agent, then continue from the last checkpoint with agl train --resume`,
      );
    }
  }

  /**
   * After the first LEARNING_CHECK_STEPS steps of a fresh run: when none of them could teach the policy anything (every
   * group without reward spread, or every rollout failed), say so with the likely cause and what to do next, once.
   */
  private checkLearning(step: number, metrics: Record<string, number>): void {
    if (step >= LEARNING_CHECK_STEPS || this.state.step !== step) return;
    this.firstSteps.push(...Object.entries(metrics).map(([name, value]) => ({ step: step + 1, name, value })));
    if (step + 1 < LEARNING_CHECK_STEPS) return;
    this.judgeLearning(LEARNING_CHECK_STEPS);
  }

  /** Diagnoses the first steps this process ran (a resumed run that did not run them here has nothing to look at). */
  private judgeLearning(steps: number): void {
    const d = diagnoseLearning(this.firstSteps, this.diagnosisContext(), steps);
    this.firstSteps = [];
    if (!d) return;
    this.diagnosis = d;
    for (const line of describeDiagnosis(d)) this.log(`agl train: ${line}`);
    this.deps.onDiagnosis?.(d);
  }

  /**
   * Adapt + credit (one item per kept LLM call), then each policy's GRPO advantages on its own roles' calls, with its
   * own settings (scaling, zero-std skipping) over the step's groups, so a call's advantage comes from its own episode's
   * group whatever policy served it. With dynamic sampling, a policy that asked for it trains on the groups it kept,
   * the others on the scheduled groups (their batch as without it).
   */
  private creditAndAdvantages(rolled: RolledOut): CreditedStep {
    const t = this.deps.config.training;
    const creditCfg = { ...t.credit, air: t.air ? t.credit.air : [] };
    const items: CreditedItem[] = [];
    for (const g of rolled.groups) {
      if (!g.trajectory) continue;
      for (const c of assignCredit(g.trajectory, creditCfg)) items.push({ g, s: c.step, credit: c.credit, groupId: g.task.id });
    }
    // training.groupBy task-role: a call is compared with its own role's calls of the task only (the store keeps the
    // task as the group; the views split it by role again to show the numbers).
    const advantageGroup = (i: CreditedItem) => (t.groupBy === 'task-role' ? `${i.groupId}\u0000${i.s.agentName ?? ''}` : i.groupId);
    const grouped = items.map((i) => ({ groupId: advantageGroup(i), credit: i.credit }));
    const advantages = new Array<number>(items.length).fill(0);
    let fracRewardZeroStd = 0;
    const perPolicy = this.deps.policies.trained.map((p) => {
      const adv = computeAdvantages(grouped, p.grpo);
      fracRewardZeroStd = adv.fracRewardZeroStd; // groups without spread: the same under any policy's settings
      // A group dynamic sampling dropped (or a refill, for a policy that did not ask for them) trains nothing.
      const groups = rolled.sampled ? (p.grpo.dynamicSampling ? rolled.sampled.kept : new Set(rolled.scheduled.map((g) => g.task.id))) : null;
      const mine: KeptItem[] = [];
      items.forEach((it, k) => {
        if (p.roles && !p.roles.includes(it.s.agentName ?? '')) return;
        const inBatch = !groups || groups.has(it.groupId);
        advantages[k] = inBatch ? adv.advantages[k]! : 0;
        if (inBatch && adv.keep[k]) mine.push({ ...it, advantage: adv.advantages[k]! });
      });
      return mine;
    });
    return { items, advantages, fracRewardZeroStd, perPolicy };
  }

  /** A learning rate at its schedule's step (0-based): the configured one after a linear warm-up over the first warmupSteps. */
  private learningRate(base: number, step: number): number {
    const t = this.deps.config.training;
    return t.warmupSteps > 0 ? base * Math.min(1, (step + 1) / t.warmupSteps) : base;
  }

  /** With policies per role: a regular expression matching exactly their roles (the adapter keeps only their calls). */
  private trainedRolesMatch(): string | null {
    const roles = listedRoles(this.deps.policies.trained);
    if (!roles.length) return null;
    return `^(${roles.map((r) => r.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})$`;
  }

  /** A policy's updates so far (its schedule's step): a policy of listed roles counts its own; a run's one policy, the run's steps. */
  private updatesOf(p: TrainedPolicy): number {
    return this.state.policies?.[p.name]?.updates ?? this.state.step;
  }

  /** A policy's version (recorded with each call it serves): its updates so far; null for the default policy (never trained). */
  policyVersion(name: string): number | null {
    const p = this.deps.policies.trained.find((q) => q.name === name);
    return p ? policyUpdates(this.state, p) : null;
  }

  /**
   * Every role given a policy must make LLM calls, else its policy would never train (a misspelt role, or one that
   * calls no LLM). The roles seen in the validation before training and in the first ROLE_CHECK_STEPS training steps
   * are collected; a role still unseen after the validation is a warning, after those steps an error naming it and
   * the roles that did call. A resumed run past those steps was checked when it started.
   */
  private noteRoles(groups: GroupRollout[], mode: 'val' | 'train', step = 0): void {
    if (mode === 'train' && step >= ROLE_CHECK_STEPS) {
      this.rolesChecked = true;
      return;
    }
    for (const g of groups) {
      for (const s of g.trajectory?.steps ?? []) if (s.agentName) this.rolesSeen.add(s.agentName);
      for (const k of g.trajectory?.skipped ?? [])
        if (k.reason === 'no-token-ids' && k.agentName) this.rolesFailed.set(k.agentName, (this.rolesFailed.get(k.agentName) ?? 0) + 1);
    }
    this.rolesSeenIn[mode] += groups.length;
    const unseen = listedRoles(this.deps.policies.trained).filter((r) => !this.rolesSeen.has(r));
    if (!unseen.length) {
      this.rolesChecked = true;
      return;
    }
    const came = this.rolesSeen.size
      ? `The agent's calls came from ${[...this.rolesSeen].map((r) => `'${r}'`).join(', ')}.`
      : 'No call named its role (name roles with operation(name, fn, { agentName })).';
    const failed = unseen.filter((r) => this.rolesFailed.has(r));
    const why = failed.length
      ? ` ${failed.map((r) => `'${r}' made ${this.rolesFailed.get(r)} call${this.rolesFailed.get(r) === 1 ? '' : 's'}, and every one failed (no completion recorded: the calls' errors are in the trajectory viewer and agl rollouts)`).join('; ')}.`
      : '';
    const roles = unseen.map((r) => `'${r}'`).join(', ');
    const none = failed.length === unseen.length ? 'made no LLM call that succeeded' : 'made no LLM call';
    const last = Math.min(ROLE_CHECK_STEPS, this.state.totalSteps);
    if (mode === 'val') {
      this.log(
        `policies: role${unseen.length > 1 ? 's' : ''} ${roles} ${none} in the ${groups.length} validation rollouts before training; ` +
          `training stops if ${unseen.length > 1 ? 'they make' : 'it makes'} none in the first ${last} steps.${why} ${came}`,
      );
    } else if (step + 1 >= last) {
      this.rolesChecked = true;
      throw new Error(
        `policies: role${unseen.length > 1 ? 's' : ''} ${roles} ${none} in the ${this.rolesSeenIn.val} validation rollouts before training nor in the ` +
          `${this.rolesSeenIn.train} rollouts of the first ${last} training steps, so ${unseen.length > 1 ? 'their policies' : 'its policy'} would never train.${why} ${came}`,
      );
    }
  }

  /**
   * One optimizer update per trained policy on the calls it trains on (a shared policy gets every call of its roles,
   * once), with the sampling policy's log-probs (from the gateway's spans, else recomputed before the update, so they
   * match) and its reference's when its KL term is on. A policy none of whose items has an advantage does not update.
   */
  private async update(step: number, perPolicy: KeptItem[][]): Promise<PolicyUpdate[]> {
    const out: PolicyUpdate[] = [];
    for (const [n, p] of this.deps.policies.trained.entries()) {
      const mine = perPolicy[n]!;
      const lr = this.learningRate(p.learningRate, this.updatesOf(p));
      out.push({ policy: p, lr, items: mine, result: await this.updateOne(p, step, mine, lr) });
    }
    return out;
  }

  /** The request carries this update's settings: the policy's GRPO settings as its loss, its schedule's learning rate. */
  private async updateOne(p: TrainedPolicy, step: number, kept: KeptItem[], lr: number): Promise<TrainStepResult> {
    const { config: cfg } = this.deps;
    const pairs: SequencePair[] = kept.map((k) => ({ promptIds: k.s.promptIds, completionIds: k.s.completionIds }));
    const missing = kept.map((k, i) => (k.s.logprobs ? -1 : i)).filter((i) => i >= 0);
    const old = kept.map((k) => k.s.logprobs);
    if (missing.length) {
      const scored = await p.model.scoreLogprobs(missing.map((i) => pairs[i]!));
      missing.forEach((i, j) => {
        old[i] = scored[j];
      });
    }
    let ref: number[][] | null = null;
    if (p.grpo.beta > 0) {
      if (!p.reference) throw new Error(`the KL term (grpo.beta > 0) of policy ${p.name} needs a reference policy`);
      ref = kept.length ? await p.reference.scoreLogprobs(pairs) : [];
    }
    if (kept.length === 0 || !kept.some((k) => k.advantage !== 0)) return { loss: 0, gradNorm: 0, tokens: 0, seconds: 0, stats: emptyLossStats() };
    const samples = kept.map((k, i) => ({ advantage: k.advantage, oldLogprobs: old[i] as number[], refLogprobs: ref ? ref[i] : null }));
    const loss = grpoLoss(samples, { ...p.grpo, lossNormTokens: p.grpo.lossNormTokens ?? cfg.model.maxTokens });
    const update = await p.model.trainStep(pairs, loss, { lr });
    if (p.roles) {
      this.state.policies ??= {};
      this.state.policies[p.name] = { updates: (this.state.policies[p.name]?.updates ?? 0) + 1 };
    }
    await this.deps.afterUpdate?.({ ...this.state, step: step + 1 });
    return update;
  }

  /** What the step measured (names in protocol/metrics.ts). */
  private stepMetrics(rolled: RolledOut, credited: CreditedStep, updates: PolicyUpdate[], rolloutSeconds: number, stepSeconds: number): Record<string, number> {
    const { items } = credited;
    const kept = credited.perPolicy.flat();
    // The step's update over every policy: loss summed, statistics pooled by token, the gradient norm of all of them.
    const pooled = emptyLossStats();
    for (const u of updates) addLossStats(pooled, u.result.stats);
    const update = {
      loss: updates.reduce((a, u) => a + u.result.loss, 0),
      gradNorm: Math.sqrt(updates.reduce((a, u) => a + u.result.gradNorm ** 2, 0)),
      tokens: updates.reduce((a, u) => a + u.result.tokens, 0),
      seconds: updates.reduce((a, u) => a + u.result.seconds, 0),
    };
    const lr = updates[0]?.lr ?? 0;
    const s = summarizeLossStats(pooled);
    // reward/mean and reward/std describe the step's scheduled tasks, comparable across variants; refills are counted apart.
    const rewards = finalRewards(rolled.scheduled);
    const rMean = rewards.reduce((a, x) => a + x, 0) / Math.max(1, rewards.length);
    const completionTokens = items.reduce((a, i) => a + i.s.completionIds.length, 0);
    // The tokens the update trained on: kept calls with an advantage (a call with advantage 0 moves no weight).
    const trained = kept.filter((k) => k.advantage !== 0);
    const trainedTokens = trained.reduce((a, k) => a + k.s.completionIds.length, 0);
    const { sampled } = rolled;
    const trajectories = rolled.groups.flatMap((g) => (g.trajectory ? [g.trajectory] : []));
    const peak = updates.map((u) => u.result.peakMemory).reduce<PeakMemory | null>((a, m) => (m && (!a || m.bytes > a.bytes) ? m : a), null);
    if (peak) this.peakMemoryKind = peak.kind;
    return {
      [METRICS.rewardMean]: rMean,
      [METRICS.rewardStd]: stdUnbiased(rewards),
      [METRICS.fracRewardZeroStd]: credited.fracRewardZeroStd,
      ...(sampled ? { [METRICS.samplingRounds]: sampled.rounds, [METRICS.groupsKept]: sampled.kept.size } : {}),
      [METRICS.kl]: s.kl,
      [METRICS.clipRatio]: s.clipRatio,
      [METRICS.loss]: update.loss,
      [METRICS.gradNorm]: update.gradNorm,
      [METRICS.lr]: lr,
      [METRICS.entropy]: s.entropy,
      [METRICS.responseLengthMean]: items.length ? completionTokens / items.length : 0,
      [METRICS.rolloutCount]: rolled.groups.length,
      [METRICS.rolloutFailed]: rolled.groups.filter((g) => !g.trajectory).length,
      [METRICS.rolloutTransitions]: items.length,
      [METRICS.llmCalls]: trajectories.reduce((a, t) => a + t.steps.length + t.skipped.length, 0),
      [METRICS.greedyCalls]: trajectories.reduce((a, t) => a + t.greedyCalls, 0),
      ...(peak ? { [METRICS.peakMemoryMiB]: Math.round((peak.bytes / 2 ** 20) * 10) / 10 } : {}),
      [METRICS.tokensPerS]: update.seconds > 0 ? update.tokens / update.seconds : 0,
      [METRICS.rolloutS]: rolloutSeconds,
      [METRICS.stepS]: stepSeconds,
      [METRICS.trainedTokens]: trainedTokens,
      [METRICS.logprobGap]: s.logprobGap,
      [METRICS.logprobGapMax]: s.logprobGapMax,
      [METRICS.tisCapped]: s.tisCappedRatio,
      ...this.policyMetrics(updates.filter((u) => u.policy.roles)),
      ...roleMetrics(rolled.groups, items, trained, trainedTokens),
    };
  }

  /** Each policy of listed roles: its own curves (the reward of its calls as mean credit, loss, KL, clip ratio, gradient norm, learning rate). */
  private policyMetrics(updates: PolicyUpdate[]): Record<string, number> {
    const out: Record<string, number> = {};
    for (const u of updates) {
      const s = summarizeLossStats(u.result.stats);
      const m = (name: string, value: number) => {
        out[policyMetric(u.policy.name, name)] = value;
      };
      m('reward', u.items.length ? u.items.reduce((a, k) => a + k.credit, 0) / u.items.length : 0);
      m('transitions', u.items.length);
      m('loss', u.result.loss);
      m('kl', s.kl);
      m('clip_ratio', s.clipRatio);
      m('grad_norm', u.result.gradNorm);
      m('lr', u.lr);
      m('updates', this.state.policies?.[u.policy.name]?.updates ?? 0);
    }
    return out;
  }

  /** The step's metrics and every call's transition (credit, advantage) into the store, where the viewer reads them. */
  private async record(step: number, metrics: Record<string, number>, { items, advantages }: CreditedStep): Promise<void> {
    const { store } = this.deps;
    await store.addMetrics(Object.entries(metrics).map(([name, value]) => ({ runId: this.state.runId, step, name, value })));
    const transitions: Transition[] = items.map((it, k) => ({
      runId: this.state.runId,
      step,
      rolloutId: it.s.rolloutId,
      attemptId: it.s.attemptId,
      spanId: it.s.spanId,
      groupId: it.groupId,
      index: it.s.index,
      agentName: it.s.agentName,
      reward: it.s.rewards.length ? it.s.rewards.reduce((a, r) => a + r.value, 0) : null,
      credit: it.credit,
      advantage: advantages[k]!,
      promptTokens: it.s.promptIds.length,
      completionTokens: it.s.completionIds.length,
    }));
    if (transitions.length) await store.addTransitions(transitions);
  }

  /** Runs to the end (or the time budget), validating and checkpointing on schedule. */
  async run(): Promise<TrainerState> {
    const { store, config: cfg } = this.deps;
    const t = cfg.training;
    const began = Date.now() - this.state.elapsedMs;
    const outOfTime = () => t.maxMinutes > 0 && Date.now() - began >= t.maxMinutes * 60_000;
    if (this.state.val.length === 0) await this.validate();
    while (this.state.step < this.state.totalSteps && !outOfTime()) {
      if (this.deps.signal?.aborted) throw new Error('interrupted');
      await this.step();
      this.state.elapsedMs = Date.now() - began;
      const last = this.state.step === this.state.totalSteps || outOfTime();
      if (!last && t.valEvery > 0 && this.state.step % t.valEvery === 0) await this.validate();
      await store.updateTrainingRun(this.state.runId, { step: this.state.step, totalSteps: this.state.totalSteps });
      if (this.state.step % t.checkpointEvery === 0 && !last) await this.deps.checkpoint(this.state);
    }
    // A run that ended before the learning check's steps were in: judge the steps it ran.
    if (this.firstSteps.length) this.judgeLearning(new Set(this.firstSteps.map((p) => p.step)).size);
    if (this.state.val.at(-1)?.step !== this.state.step) await this.validate();
    this.state.elapsedMs = Date.now() - began;
    await this.deps.checkpoint(this.state);
    return this.state;
  }
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

export function newTrainerState(run: TrainingRun): TrainerState {
  return { runId: run.id, step: run.step, totalSteps: run.totalSteps, elapsedMs: 0, val: [], train: [], best: null };
}
