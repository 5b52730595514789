/**
 * The LightningRL training loop: it holds the run's state and sequences each step's pipeline, one named step per file:
 *   collect (step-collect.ts)        publish the policies, roll out each task n times, wait (dynamic sampling refills)
 *   judge (step-judge.ts)            with an LLM judge: each round of collect's groups scored by it, before anything
 *                                    reads their rewards; a group it could not score left out of the step
 *   credit (step-credit.ts)          one transition per LLM call, with its credit
 *   advantages (step-advantages.ts)  each policy's GRPO advantages on its own roles' calls, with its own settings
 *   update (step-update.ts)          one optimizer update per policy, at its schedule's learning rate (schedule.ts)
 *   metrics (step-metrics.ts)        what the step measured and every call's transition into the store
 * then validates every K steps and checkpoints. Beside the pipeline, the run's checks: role coverage
 * (role-coverage.ts) and whether the run can go on and learn (diagnosis.ts). The trainer owns no process: the caller
 * (training-run.ts for `agl train`, or a test) provides the store, the policy set the gateway serves (each policy
 * updated in place, so the next published version samples from the new weights) and a checkpoint writer.
 */
import { METRICS, describeJudgeStep, describePeakMemory } from '../../protocol/metrics.js';
import type { LearningDiagnosis, RunContext } from '../../protocol/training-health.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import type { PeakMemory } from '../model/policy-contract.js';
import type { Judge } from '../judge/judge.js';
import type { TrainConfig } from './config.js';
import { FailedSteps, LearningCheck } from './diagnosis.js';
import type { OpenPolicySet } from './open-policy-set.js';
import { RoleCoverage } from './role-coverage.js';
import { everyRolloutFailed, finalRewards, type Task } from './rollouts.js';
import { learningRateAt } from './schedule.js';
import { advantagesPerPolicy, type KeptItem } from './step-advantages.js';
import { type CollectContext, collectStep, collectValidation } from './step-collect.js';
import { creditStep } from './step-credit.js';
import { failedGroups, judgeMetrics, reliabilityMetrics, StepJudge } from './step-judge.js';
import { recordStep, stepMetrics, stepPeakMemory } from './step-metrics.js';
import { DivergenceMonitor, trustedReward } from './judge-divergence.js';
import { type PolicyUpdate, updatePolicy } from './step-update.js';
import { countUpdate, policyUpdates, type TrainerState } from './trainer-state.js';

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
  /** The LLM judge scoring the rollouts (config.judge, opened by the caller); null: the agent's own rewards. */
  judge?: Judge | null;
  /** Called after each update that changed the weights (pushes them to the sampler). */
  afterUpdate?: (state: TrainerState) => Promise<void>;
  /** Writes a checkpoint of the policies and this state (called every `checkpointEvery` steps). */
  checkpoint: (state: TrainerState) => Promise<void>;
  /** Keeps the policy as the best so far (called when a validation beats every earlier one; `state.best` is set). */
  saveBest?: (state: TrainerState) => Promise<void>;
  log?: (message: string) => void;
  /** Called once when the first steps show the run cannot learn (protocol/training-health.ts). */
  onDiagnosis?: (d: LearningDiagnosis) => void;
  onProgress?: (phase: string, done: number, total: number, state: TrainerState) => void;
  signal?: AbortSignal;
}

export class Trainer {
  private readonly failedSteps: FailedSteps;
  private readonly roles: RoleCoverage;
  private readonly learning: LearningCheck;
  /** With a judge: its reward watched against the trusted one and validation (judge-divergence.ts). */
  private readonly divergence: DivergenceMonitor | null;
  /** What the engine's peak memory measures (the last update that reported it), for the run's summary. */
  peakMemoryKind: PeakMemory['kind'] | null = null;

  constructor(
    private readonly deps: TrainerDeps,
    public state: TrainerState,
  ) {
    const log = (m: string) => deps.log?.(m);
    const policyRoles = Object.fromEntries(deps.policies.trained.flatMap((p) => (p.roles ? [[p.name, p.roles]] : [])));
    const context: RunContext = { temperature: deps.config.model.temperature, agent: this.agentRef, policyRoles };
    this.failedSteps = new FailedSteps(log);
    this.roles = new RoleCoverage(deps.policies.trained, state.totalSteps, log);
    this.learning = new LearningCheck(context, log, deps.onDiagnosis);
    const t = deps.config.training;
    this.divergence = deps.judge ? new DivergenceMonitor({ window: t.divergenceWindow, stop: t.stopOnDivergence, log }) : null;
  }

  /** Why this run cannot learn, when its first steps showed it. */
  get diagnosis(): LearningDiagnosis | null {
    return this.learning.diagnosis;
  }

  private get agentRef(): string {
    return this.deps.agentRef ?? this.deps.agent;
  }

  private get collectContext(): CollectContext {
    const d = this.deps;
    return {
      ...d,
      sampler: d.sampler ?? null,
      runId: this.state.runId,
      onProgress: d.onProgress && ((phase, done, total) => d.onProgress!(phase, done, total, this.state)),
    };
  }

  /** The judge's share of step `step` (1-based; validation: the step it follows), when the run has a judge. */
  private stepJudge(step: number): StepJudge | null {
    const { judge, store, log } = this.deps;
    if (!judge) return null;
    const progress = this.collectContext.onProgress;
    return new StepJudge(judge, store, { runId: this.state.runId, step, log, onProgress: progress && ((done, total) => progress('judge', done, total)) });
  }

  /** Mean final reward on the validation tasks (greedy by default), after the updates made so far. */
  async validate(): Promise<number> {
    const first = this.state.val.length === 0;
    const { groups, tasks } = await collectValidation(this.collectContext, this.state.step, this.stepJudge(this.state.step));
    const failed = everyRolloutFailed(groups);
    if (failed && first) {
      throw new Error(
        `every validation rollout failed before training (${failed.count} of ${failed.count}), e.g.: ${failed.error}. Fix the agent (try it once: agl rollout ${this.agentRef} --task '<one task>') and run again`,
      );
    }
    if (failed) this.deps.log?.(`validation: all ${failed.count} rollouts failed, e.g.: ${failed.error}`);
    if (first) this.roles.note(groups, 'val');
    const rewards = finalRewards(groups);
    const mean = rewards.reduce((a, x) => a + x, 0) / Math.max(1, rewards.length);
    const { runId, step } = this.state;
    this.state.val.push({ step, reward: mean, tasks });
    this.divergence?.noteValidation(step, mean);
    await this.deps.store.addMetrics([
      { runId, step, name: METRICS.valReward, value: mean },
      { runId, step, name: METRICS.valTasks, value: tasks },
    ]);
    if (!this.state.best || mean > this.state.best.reward) {
      this.state.best = { step, reward: mean };
      await this.deps.saveBest?.(this.state);
    }
    return mean;
  }

  /**
   * One GRPO step through the pipeline; returns the metrics it stored. What it records is numbered by the updates made
   * once it is done (protocol/metrics.ts FIRST_TRAINING_STEP): the first step is step 1.
   */
  async step(): Promise<Record<string, number>> {
    const started = Date.now();
    const { config, policies } = this.deps;
    const step = this.state.step;
    const judge = this.stepJudge(step + 1);
    const rolled = await collectStep(this.collectContext, step, judge);
    this.roles.note(rolled.groups, 'train', step);
    const rolloutSeconds = (Date.now() - started) / 1000;
    // The judge's weight (judge.retest: how informative it shows itself) scales the advantages of the groups it scored, or leaves them out.
    const reliability = judge?.reliability(this.state.judgeReliability) ?? null;
    if (reliability) this.state.judgeReliability = reliability.state;
    const credited = advantagesPerPolicy(creditStep(rolled.groups, config.training), rolled, policies.trained, config.training, reliability?.step);
    const updates = await this.update(step, credited.perPolicy);
    const times = { rolloutSeconds, stepSeconds: (Date.now() - started) / 1000 };
    const metrics = {
      ...stepMetrics(rolled, credited, updates, times, (name) => this.state.policies?.[name]?.updates ?? 0),
      ...(judge ? judgeMetrics(judge.totals) : {}),
      ...(reliability ? reliabilityMetrics(reliability.step) : {}),
    };
    if (this.divergence) {
      const trusted = await trustedReward(this.deps.store, rolled.scheduled);
      Object.assign(metrics, this.divergence.noteStep(step + 1, metrics[METRICS.rewardMean] ?? null, trusted));
    }
    await recordStep(this.deps.store, this.state.runId, step + 1, metrics, credited);
    // After recording: a step whose every rollout failed (or whose every group the judge could not score) is on the
    // dashboard too, also the one that stops the run.
    this.failedSteps.note(step, rolled.scheduled, judge && { scored: judge.totals.groups, failed: failedGroups(judge.totals), reason: judge.lastReason });
    this.learning.note(step, metrics);
    this.state.step = step + 1;
    const reward = metrics[METRICS.rewardMean];
    if (reward !== undefined) this.state.train.push({ step: step + 1, reward });
    const rel = reliability?.step;
    const said = rel && {
      ...{ weight: rel.scale, bound: Math.sqrt(rel.low), informativeness: rel.informativeness, pairs: rel.pairs },
      ...{ floor: rel.floor, leftOut: rel.scale === 0 ? rel.groups.size : 0 },
    };
    this.state.judge = judge
      ? { calls: judge.totals.calls, tokens: judge.totals.tokens, cost: judge.totals.cost, ...(said ? { reliability: said } : {}) }
      : undefined;
    this.peakMemoryKind = stepPeakMemory(updates)?.kind ?? this.peakMemoryKind;
    this.logStep(step + 1, metrics, credited.fracRewardZeroStd);
    return metrics;
  }

  private logStep(step: number, metrics: Record<string, number>, zeroStd: number): void {
    const peak = metrics[METRICS.peakMemoryMiB];
    const reward = metrics[METRICS.rewardMean];
    this.deps.log?.(
      `step ${step}/${this.state.totalSteps} reward ${reward === undefined ? '-' : reward.toFixed(3)} zero-std ${zeroStd.toFixed(2)} clip ${metrics[METRICS.clipRatio]!.toFixed(3)} ${metrics[METRICS.stepS]!.toFixed(1)}s` +
        (peak === undefined ? '' : ` peak ${describePeakMemory(peak, this.peakMemoryKind)}`) +
        (this.state.judge ? ` judge ${describeJudgeStep(this.state.judge, metrics[METRICS.judgeFailedGroups] ?? 0)}` : ''),
    );
  }

  /** Each trained policy's update at its own schedule's rate (warm-up over its own updates); the sampler told after each. */
  private async update(step: number, perPolicy: KeptItem[][]): Promise<PolicyUpdate[]> {
    const { config } = this.deps;
    const out: PolicyUpdate[] = [];
    for (const [n, p] of this.deps.policies.trained.entries()) {
      const lr = learningRateAt(p.learningRate, config.training.warmupSteps, policyUpdates(this.state, p));
      const result = await updatePolicy(p, perPolicy[n]!, lr, config.model.maxTokens);
      if (result) {
        countUpdate(this.state, p);
        await this.deps.afterUpdate?.({ ...this.state, step: step + 1 });
      }
      out.push({ policy: p, items: perPolicy[n]!, lr, result });
    }
    return out;
  }

  /** A policy's version (recorded with each call it serves): its updates so far; null for the default policy (never trained). */
  policyVersion(name: string): number | null {
    const p = this.deps.policies.trained.find((q) => q.name === name);
    return p ? policyUpdates(this.state, p) : null;
  }

  /** Runs to the end (or the time budget), validating and checkpointing on schedule. */
  async run(): Promise<TrainerState> {
    const t = this.deps.config.training;
    const began = Date.now() - this.state.elapsedMs;
    const outOfTime = () => t.maxMinutes > 0 && Date.now() - began >= t.maxMinutes * 60_000;
    if (this.state.val.length === 0) await this.validate();
    while (this.state.step < this.state.totalSteps && !outOfTime() && !this.state.divergence) {
      if (this.deps.signal?.aborted) throw new Error('interrupted');
      await this.step();
      if (this.divergence?.stopping) this.state.divergence = this.divergence.said ?? undefined;
      this.state.elapsedMs = Date.now() - began;
      const last = this.state.step === this.state.totalSteps || outOfTime();
      if (!last && t.valEvery > 0 && this.state.step % t.valEvery === 0) await this.validate();
      await this.deps.store.updateTrainingRun(this.state.runId, { step: this.state.step, totalSteps: this.state.totalSteps });
      if (this.state.step % t.checkpointEvery === 0 && !last) await this.deps.checkpoint(this.state);
    }
    // A run that ended before the learning check's steps were in: judge the steps it ran.
    this.learning.finish();
    if (this.state.val.at(-1)?.step !== this.state.step) await this.validate();
    this.state.elapsedMs = Date.now() - began;
    await this.deps.checkpoint(this.state);
    return this.state;
  }
}
