/**
 * Optimize This Prompt's progress while `agl optimize` runs: the run it created (the agent's newest optimization since
 * the start), read from the store whenever the daemon's events say a run or a rollout of the agent moved (never on a
 * timer: train-progress.ts onRunProgress with optimizationMoved), shown in the cancellable notification as `agl optimize` prints it on a terminal (rollouts used of
 * the budget, best val so far, candidates), with the optimization view opened on the run once it appears.
 */
import type * as vscode from 'vscode';
import type { StoreChange } from '../protocol/events.js';
import type { AgentInfo } from '../protocol/lsp.js';
import type { OptimizationSummary } from '../protocol/prompts.js';
import type { TrainingRun } from '../protocol/store.js';
import type { AglClient } from '../client/client.js';
import type { Ctx } from './ctx.js';
import { showOptimizationView } from './views.js';

/** The optimization `agl optimize` created: the agent's newest created since `since`. */
async function findRun(client: AglClient, agent: string, since: number): Promise<TrainingRun | null> {
  const runs = await client.listTrainingRuns(agent, 'optimize');
  return runs.filter((r) => r.createdAt >= since - 2000).sort((a, b) => b.createdAt - a.createdAt)[0] ?? null;
}

/** Whether a store change can move the agent's optimization: a run moved, or a rollout of the agent (one of the run's). */
export const optimizationMoved =
  (agent: string) =>
  (c: StoreChange): boolean =>
    c.runs.length > 0 || c.rollouts.some((r) => r.agent === agent);

/**
 * The notification's line: "rollouts 48/150 · best val 0.714 (seed 0.310) · 6 candidates", or what the run is doing
 * before. `rollouts`: the run's rollouts in the store now (its record counts them only when a candidate is scored).
 */
export function progressLine(run: TrainingRun, rollouts: number): string {
  const s = run.summary as OptimizationSummary;
  const budget = s.budget ?? run.totalSteps;
  const parts = [`rollouts ${rollouts}/${budget || '?'}`];
  const best = s.scores?.best.val;
  const seed = s.scores?.seed.val;
  if (typeof best === 'number') parts.push(`best val ${best.toFixed(3)}${typeof seed === 'number' && seed !== best ? ` (seed ${seed.toFixed(3)})` : ''}`);
  else parts.push('scoring the seed');
  if (s.candidates) parts.push(`${s.candidates} candidates`);
  return parts.join(' · ');
}

export class OptimizationWatch {
  run: TrainingRun | null = null;
  private viewOpened = false;
  /** The notification's progress so far, in percent. */
  private reported = 0;

  constructor(
    private readonly ctx: Ctx,
    private readonly client: AglClient,
    private readonly agent: AgentInfo,
    /** When the optimization started: its run is the agent's newest created since. */
    private readonly started: number,
  ) {}

  /** Reads the run into the notification (and the agent's lenses, which show its progress). */
  async read(progress: vscode.Progress<{ message?: string; increment?: number }>, token: vscode.CancellationToken): Promise<void> {
    if (token.isCancellationRequested) return;
    try {
      const run = (this.run = (await findRun(this.client, this.agent.id, this.started)) ?? this.run);
      if (!run) return;
      if (!this.viewOpened) {
        this.viewOpened = true;
        void showOptimizationView(this.ctx, { runId: run.id });
      }
      const budget = (run.summary as OptimizationSummary).budget ?? run.totalSteps;
      const rollouts = (await this.client.queryRollouts({ runId: run.id, limit: 1, withTotal: true })).total ?? run.step;
      const pct = budget > 0 ? Math.min(100, (rollouts / budget) * 100) : 0;
      progress.report({ message: progressLine(run, rollouts), increment: pct - this.reported });
      this.reported = pct;
      this.ctx.refreshLenses(this.agent.id);
    } catch (err) {
      this.ctx.log(`optimization progress: ${(err as Error).message}`);
    }
  }
}
