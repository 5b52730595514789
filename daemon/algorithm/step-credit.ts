/**
 * Step 2 of a training step, transitions and credit: each succeeded rollout's trajectory (the adapter already cut its
 * spans into one transition per LLM call, keeping the trained roles' calls) gets its calls' credit (credit.ts, the
 * run's strategy and AIR rules), each call tagged with its GRPO group: the task's id. Failed rollouts have no
 * trajectory and give no transition.
 */
import type { TrajectoryStep } from './adapter.js';
import type { TrainConfig } from './config.js';
import { assignCredit } from './credit.js';
import type { GroupRollout } from './rollouts.js';

/** One LLM call of the step with its credit and its GRPO group. */
export interface CreditedItem {
  g: GroupRollout;
  s: TrajectoryStep;
  credit: number;
  groupId: string;
}

/** Every kept LLM call of the step's groups with its credit, in rollout order. */
export function creditStep(groups: GroupRollout[], training: TrainConfig['training']): CreditedItem[] {
  const creditCfg = { ...training.credit, air: training.air ? training.credit.air : [] };
  const items: CreditedItem[] = [];
  for (const g of groups) {
    if (!g.trajectory) continue;
    for (const c of assignCredit(g.trajectory, creditCfg)) items.push({ g, s: c.step, credit: c.credit, groupId: g.task.id });
  }
  return items;
}
