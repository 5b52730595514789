/**
 * Train This Agent's progress while `agl train` runs: the run it created, read from the store whenever the daemon's
 * events say the run moved (never on a timer), shown in the notification (step k/N as `agl train` prints it, the
 * reward, the final validation's progress) and the status bar; the dashboard opened on the run once it appears; and
 * the run's diagnosis in the words `agl train` prints (protocol/training-health.ts) once its first steps are in.
 */
import * as vscode from 'vscode';
import {
  LEARNING_CHECK_STEPS,
  describeDiagnosis,
  diagnoseLearning,
  diagnosisSentence,
  runContext,
  type LearningDiagnosis,
} from '../protocol/training-health.js';
import type { StoreChange } from '../protocol/events.js';
import type { AgentInfo } from '../protocol/lsp.js';
import { METRICS } from '../protocol/metrics.js';
import type { TrainingRun } from '../protocol/store.js';
import type { AglClient } from '../client/client.js';
import type { Ctx } from './ctx.js';
import { showTrainingDashboard } from './views.js';

/** The run `agl train` created: the newest run of the agent created since `since`. */
async function findRun(client: AglClient, agent: string, since: number): Promise<TrainingRun | null> {
  const runs = await client.listTrainingRuns(agent, 'train');
  return runs.filter((r) => r.createdAt >= since - 2000).sort((a, b) => b.createdAt - a.createdAt)[0] ?? null;
}

async function latestReward(client: AglClient, runId: string): Promise<number | null> {
  const points = await client.queryMetrics(runId);
  const rewards = points.filter((p) => p.name === METRICS.rewardMean);
  return rewards.length ? rewards[rewards.length - 1]!.value : null;
}

/** Whether a store change can move a training run's progress: a run moved or its metrics landed. */
const runMoved = (c: StoreChange): boolean => c.runs.length > 0 || c.metrics.length > 0;

/**
 * Calls `read` whenever the daemon's events say a run moved (`moved`: by default a run record or its metrics), and after
 * a reconnection (never on a timer): one call at a time, one more if an event came meanwhile. `stop` waits for the
 * call under way.
 */
export function onRunProgress(ctx: Ctx, read: () => Promise<void>, moved: (change: StoreChange) => boolean = runMoved): { stop(): Promise<void> } {
  let reading: Promise<void> | null = null;
  let again = false;
  const update = (): void => {
    if (reading) {
      again = true;
      return;
    }
    reading = read().finally(() => {
      reading = null;
      if (again) {
        again = false;
        update();
      }
    });
  };
  const events = ctx.onDidReceiveEvent((e) => {
    if (e.type === 'hello' || (e.type === 'store' && (e.change.truncated || moved(e.change)))) update();
  });
  return {
    async stop() {
      events.dispose();
      again = false;
      while (reading) await reading;
    },
  };
}

/** The final validation's progress, once the last step is done: "final validation 3/8 held-out tasks" ('' when none runs yet). */
async function finalValidation(client: AglClient, run: TrainingRun): Promise<string> {
  const rollouts = await client.queryRollouts({ runId: run.id, step: run.step, mode: 'val', limit: 1, withTotal: true });
  const ended = await client.queryRollouts({
    runId: run.id,
    step: run.step,
    mode: 'val',
    status: ['succeeded', 'failed', 'cancelled'],
    limit: 1,
    withTotal: true,
  });
  return rollouts.total ? `final validation ${ended.total ?? 0}/${rollouts.total} held-out tasks` : '';
}

/** What the progress notification follows of one training: its run once it appears, its progress, its diagnosis. */
export class TrainingWatch {
  run: TrainingRun | null = null;
  diagnosis: LearningDiagnosis | null = null;
  private dashboardOpened = false;
  /** The notification's progress so far, in percent. */
  private reported = 0;
  private judged = false;

  constructor(
    private readonly ctx: Ctx,
    private readonly client: AglClient,
    private readonly agent: AgentInfo,
    /** When the training started: its run is the agent's newest created since. */
    private readonly started: number,
  ) {}

  /** Reads the run's progress into the notification and the status bar; `ended`: the last read, after `agl train` exited. */
  async read(progress: vscode.Progress<{ message?: string; increment?: number }>, token: vscode.CancellationToken, ended = false): Promise<void> {
    const { ctx, client, agent } = this;
    if (token.isCancellationRequested) return;
    try {
      const run = (this.run = (await findRun(client, agent.id, this.started)) ?? this.run);
      if (!run) return;
      if (!this.dashboardOpened) {
        this.dashboardOpened = true;
        void showTrainingDashboard(ctx, { runId: run.id });
      }
      const reward = await latestReward(client, run.id);
      const total = run.totalSteps || 0;
      const pct = total > 0 ? (run.step / total) * 100 : 0;
      const validating = run.step >= total && total > 0 ? await finalValidation(client, run) : '';
      const message = [
        `step ${run.step}/${total || '?'}`,
        ...(reward === null ? [] : [`reward ${reward.toFixed(2)}`]),
        ...(validating ? [validating] : []),
        ...(this.diagnosis ? [`cannot learn: ${this.diagnosis.title}`] : []),
      ].join(' · ');
      progress.report({ message, increment: pct - this.reported });
      this.reported = pct;
      ctx.status.setTraining({ agent: agent.id, step: run.step, totalSteps: total, reward });
      ctx.refreshLenses(agent.id);
      await this.judge(run, ended);
    } catch (err) {
      ctx.log(`training progress: ${(err as Error).message}`);
    }
  }

  /** Once the first steps are in: when they show the run cannot learn, say so now (agl train prints the same words). */
  private async judge(r: TrainingRun, ended: boolean): Promise<void> {
    if (this.judged || (r.step < LEARNING_CHECK_STEPS && !ended)) return;
    this.judged = true;
    const diagnosis = (this.diagnosis = diagnoseLearning(
      await this.client.queryMetrics(r.id),
      runContext(r),
      Math.min(LEARNING_CHECK_STEPS, Math.max(1, r.step)),
    ));
    if (!diagnosis) return;
    this.ctx.log(describeDiagnosis(diagnosis).join('\n'));
    if (ended) return; // the run's final message says it
    void vscode.window.showWarningMessage(`Agent Lightning: ${diagnosisSentence(diagnosis)}`, 'Open Dashboard', 'Show Log').then((picked) => {
      if (picked === 'Open Dashboard') void showTrainingDashboard(this.ctx, { runId: r.id });
      if (picked === 'Show Log') this.ctx.output.show();
    });
  }
}
