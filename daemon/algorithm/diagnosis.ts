/**
 * Whether the run can go on and can learn, read from its steps as they come:
 *   FailedSteps    a step whose every rollout failed is logged; MAX_FAILED_STEPS of them in a row stop training with
 *                  the agent's error (the agent is broken, not unlucky); so do MAX_FAILED_STEPS steps in a row whose
 *                  every group the LLM judge could not score (the judge is down or cannot answer, not unlucky)
 *   LearningCheck  after the first LEARNING_CHECK_STEPS steps of a fresh run (or at the end of a shorter one): when
 *                  none of them could teach the policy anything, the likely cause and what to do next, once
 *                  (protocol/training-health.ts holds the causes and their words)
 */
import {
  LEARNING_CHECK_STEPS,
  describeDiagnosis,
  diagnoseLearning,
  type LearningDiagnosis,
  type PointLike,
  type RunContext,
} from '../../protocol/training-health.js';
import { type GroupRollout, everyRolloutFailed } from './rollouts.js';

/** Steps in a row with every rollout failed before training stops with the agent's error. */
export const MAX_FAILED_STEPS = 3;

export class FailedSteps {
  private inARow = 0;
  private judgeInARow = 0;

  constructor(private readonly log: (m: string) => void) {}

  /**
   * Counts step `step` (0-based) by its scheduled rollouts and what the judge scored (null: no judge); throws at
   * MAX_FAILED_STEPS failed steps in a row.
   */
  note(step: number, scheduled: GroupRollout[], judged: { scored: number; failed: number; reason: string | null } | null = null): void {
    this.noteJudge(step, judged);
    const failed = everyRolloutFailed(scheduled);
    this.inARow = failed ? this.inARow + 1 : 0;
    if (!failed) return;
    this.log(`step ${step + 1}: all ${failed.count} rollouts failed, e.g.: ${failed.error}`);
    if (this.inARow >= MAX_FAILED_STEPS) {
      throw new Error(
        `every rollout of the last ${MAX_FAILED_STEPS} steps failed, e.g.: ${failed.error}. Fix the agent, then continue from the last checkpoint with agl train --resume`,
      );
    }
  }

  private noteJudge(step: number, judged: { scored: number; failed: number; reason: string | null } | null): void {
    const none = judged !== null && judged.failed > 0 && judged.scored === 0;
    this.judgeInARow = none ? this.judgeInARow + 1 : 0;
    if (!none) return;
    this.log(`step ${step + 1}: the judge could not score any of its ${judged.failed} groups, e.g.: ${judged.reason}`);
    if (this.judgeInARow >= MAX_FAILED_STEPS) {
      throw new Error(
        `the LLM judge could not score any group in the last ${MAX_FAILED_STEPS} steps, e.g.: ${judged.reason}. ` +
          'Check the judge (judge.url, judge.model, its key in judge.keyEnv; agl judge check RUN tries it on a run), then continue from the last checkpoint with agl train --resume',
      );
    }
  }
}

export class LearningCheck {
  /** The metrics of the steps this process ran, until the check is done. */
  private firstSteps: PointLike[] = [];
  /** Why this run cannot learn, when its first steps showed it. */
  diagnosis: LearningDiagnosis | null = null;

  /**
   * @param context what the diagnosis reads besides the metrics (the run's temperature, how to name the agent, its policies)
   * @param log where its lines go (`agl train: ...`)
   * @param onDiagnosis told once, when the first steps show the run cannot learn
   */
  constructor(
    private readonly context: RunContext,
    private readonly log: (m: string) => void,
    private readonly onDiagnosis?: (d: LearningDiagnosis) => void,
  ) {}

  /** Notes step `step`'s metrics (0-based) when it is one of the run's first LEARNING_CHECK_STEPS steps. */
  note(step: number, metrics: Record<string, number>): void {
    if (step >= LEARNING_CHECK_STEPS) return;
    this.firstSteps.push(...Object.entries(metrics).map(([name, value]) => ({ step: step + 1, name, value })));
    if (step + 1 >= LEARNING_CHECK_STEPS) this.judge(LEARNING_CHECK_STEPS);
  }

  /** A run that ended before the check's steps were in: judge the steps it ran. */
  finish(): void {
    if (this.firstSteps.length) this.judge(new Set(this.firstSteps.map((p) => p.step)).size);
  }

  /** Diagnoses the first steps this process ran (a resumed run that did not run them here has nothing to look at). */
  private judge(steps: number): void {
    const d = diagnoseLearning(this.firstSteps, this.context, steps);
    this.firstSteps = [];
    if (!d) return;
    this.diagnosis = d;
    for (const line of describeDiagnosis(d)) this.log(`agl train: ${line}`);
    this.onDiagnosis?.(d);
  }
}
