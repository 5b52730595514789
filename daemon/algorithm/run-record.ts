/**
 * A training run's record in the store (TrainingRun: status, step, checkpoint folder, and the summary the dashboard's
 * header reads, protocol/metrics.ts TrainingRunSummary), kept whole here as each phase adds to it: created or resumed
 * at the start, the best checkpoint as validations find it, and how the run ended: finished (with its report and the
 * lines that tell the user the result), cancelled, or failed with its error.
 */
import { join, resolve } from 'node:path';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { policySet } from '../../protocol/policy-set.js';
import { METRICS, describeEngine, describeHeldOut, describePeakMemory, type TrainingRunSummary } from '../../protocol/metrics.js';
import { describeDiagnosis, policyChanged, type LearningDiagnosis } from '../../protocol/training-health.js';
import type { EngineFacts } from '../model/policy-contract.js';
import type { RunPlan } from './run-plan.js';
import { writeReport } from './run-report.js';
import { epochSteps, fewerStepsNote, plannedSteps, stopReason } from './schedule.js';
import { newTrainerState, type TrainerState } from './trainer-state.js';

/** What a finished run gives its caller. `lines`: the result in words (held-out before/after, why it stopped, where things are). */
export interface TrainOutcome {
  runId: string;
  before: number | null;
  after: number | null;
  minutes: number;
  steps: number;
  report: string;
  checkpoint: string;
  lines: string[];
}

export class RunRecord {
  /** What the record says about the run beyond its step: kept whole, as updates replace it. */
  summary: TrainingRunSummary = {};

  constructor(
    private readonly store: LightningStore,
    /** The agent's stable id (protocol/agent-id.ts). */
    private readonly agent: string,
  ) {}

  /** The run's record: resumed (status back to running, its summary kept but why it stopped) or created. */
  async start(
    { ckpt, resumeDir, config, train, val }: RunPlan,
    engine: EngineFacts,
    o: { trainFile: string; valFile: string; dataDir: string },
  ): Promise<{ state: TrainerState; checkpointDir: string }> {
    const fewerSteps = fewerStepsNote(config, train.length);
    this.summary = {
      epochSteps: epochSteps(config, train.length),
      data: { train: resolve(o.trainFile), val: resolve(o.valFile) },
      tasks: { train: train.length, val: config.training.valSize > 0 ? Math.min(config.training.valSize, val.length) : val.length },
      engine,
      ...(fewerSteps ? { fewerSteps } : {}),
      policies: recordedPolicies(config),
    };
    if (ckpt && resumeDir) {
      const state = ckpt.trainer;
      const { stopReason: _, error: __, fewerSteps: ___, ...earlier } = ((await this.store.getTrainingRun(state.runId))?.summary ?? {}) as TrainingRunSummary;
      this.summary = { ...earlier, ...this.summary };
      await this.store.updateTrainingRun(state.runId, { status: 'running', summary: { ...this.summary } });
      return { state, checkpointDir: resumeDir };
    }
    const runRec = await this.store.createTrainingRun({
      agent: this.agent,
      config: config as unknown as Record<string, unknown>,
      totalSteps: plannedSteps(config, train.length),
    });
    const checkpointDir = resolve(config.runtime.checkpointDir ?? join(o.dataDir, 'runs', runRec.id));
    await this.store.updateTrainingRun(runRec.id, { checkpointDir });
    return { state: newTrainerState(runRec), checkpointDir };
  }

  /** The best checkpoint so far (a validation beat every earlier one), kept at `path`. */
  async best(s: TrainerState, path: string): Promise<void> {
    this.summary = { ...this.summary, best: { ...s.best!, path }, elapsedMs: s.elapsedMs };
    await this.store.updateTrainingRun(s.runId, { summary: { ...this.summary } });
  }

  /** A run that ended early: cancelled, or failed with its error. */
  async ended(state: TrainerState, how: { cancelled: true } | { error: string }): Promise<void> {
    const ended = { ...this.summary, elapsedMs: state.elapsedMs };
    if ('cancelled' in how) await this.store.updateTrainingRun(state.runId, { status: 'cancelled', summary: { ...ended, stopReason: 'cancelled' } });
    else await this.store.updateTrainingRun(state.runId, { status: 'failed', summary: { ...ended, stopReason: 'failed', error: how.error } });
  }

  /** The report, the run's summary and status, and the result in words. */
  async finish(
    { config, train }: RunPlan,
    state: TrainerState,
    o: { checkpointDir: string; peakMemoryKind: EngineFacts['memory'] | null; diagnosis: LearningDiagnosis | null },
  ): Promise<TrainOutcome> {
    const before = state.val[0]?.reward ?? null,
      after = state.val.at(-1)?.reward ?? null;
    const points = await this.store.queryMetrics(state.runId);
    const engine = { ...this.summary.engine!, ...(o.peakMemoryKind ? { memory: o.peakMemoryKind } : {}) };
    const peak = Math.max(...points.filter((p) => p.name === METRICS.peakMemoryMiB).map((p) => p.value));
    const report = writeReport(join(o.checkpointDir, 'report'), {
      title: `Training report: ${this.agent}`,
      state,
      agent: this.agent,
      config,
      facts: { 'measured on': describeEngine(engine), ...(peak > 0 ? { 'peak memory': describePeakMemory(peak, engine.memory) } : {}) },
    });
    const why = stopReason(state, config, train.length);
    this.summary = {
      ...this.summary,
      engine,
      stopReason: why,
      elapsedMs: state.elapsedMs,
      valBefore: before,
      valAfter: after,
      minutes: state.elapsedMs / 60000,
      report: report.html,
    };
    await this.store.updateTrainingRun(state.runId, { status: 'succeeded', step: state.step, summary: { ...this.summary } });
    const checkpoint = join(o.checkpointDir, `policy-${state.step}`);
    const lines = [
      `held-out reward ${before?.toFixed(3)} -> ${after === null ? '-' : describeHeldOut(after, state.val.at(-1)?.tasks, 3)} in ${(state.elapsedMs / 60000).toFixed(1)} min, ` +
        `on ${describeEngine(engine)}${peak > 0 ? `, peak memory ${describePeakMemory(peak, engine.memory)}` : ''}`,
      ...(policyChanged(points) === false
        ? ['the policy did not change in any step (no update moved a weight): the checkpoint holds the weights it started from']
        : []),
      ...(why === 'max-steps' ? [`stopped at training.maxSteps (--max-steps) ${state.step}: the epochs make ${this.summary.epochSteps} steps`] : []),
      ...(why === 'judge-divergence' ? [`stopped after ${state.step} of ${state.totalSteps} steps: ${state.divergence}`] : []),
      ...(why === 'max-minutes' ? [`stopped at training.maxMinutes ${config.training.maxMinutes} after ${state.step} of ${state.totalSteps} steps`] : []),
      ...(o.diagnosis ? describeDiagnosis(o.diagnosis) : []),
    ];
    const minutes = state.elapsedMs / 60000;
    return {
      runId: state.runId,
      before,
      after,
      minutes,
      steps: state.step,
      report: report.html,
      checkpoint,
      lines: [...lines.map((l) => `agl train: ${l}`), ...where(report, checkpoint, state.runId)],
    };
  }
}

/** Each trained policy with the settings it trains by, as the run's summary keeps them for readers without the rules. */
export function recordedPolicies(config: RunPlan['config']): NonNullable<TrainingRunSummary['policies']> {
  return policySet(config).policies.map((p) => ({
    name: p.name,
    roles: p.roles,
    learningRate: p.learningRate,
    variant: p.grpo.variant,
    scaleRewards: p.grpo.scaleRewards,
    beta: p.grpo.beta,
  }));
}

/** Where the run's results are, one line each. */
function where(report: { html: string; png: string }, checkpoint: string, runId: string): string[] {
  return [`checkpoint: ${checkpoint}`, `report: ${report.html}`, `reward curve: ${report.png}`, `transitions: agl export --format jsonl --run ${runId}`];
}
