/**
 * Step 3 of a training step, advantages per policy: each trained policy computes GRPO advantages with its own
 * settings (scaling, zero-std skipping) over the step's groups (per task, or per task and role with
 * `training.groupBy: task-role`), so a call's advantage comes from its own episode's group whatever policy served it,
 * and keeps the calls of its own roles. With dynamic sampling, a policy that asked for it trains on the groups it
 * kept, the others on the scheduled groups (their batch as without it). With an LLM judge's reliability (judge.retest,
 * step-judge.ts), the advantages of the groups it scored are multiplied by it, or (scale 0, below judge.minReliability)
 * those groups are left out of the update.
 */
import type { TrainConfig } from './config.js';
import { computeAdvantages } from './grpo.js';
import type { TrainedPolicy } from './open-policy-set.js';
import type { CreditedItem } from './step-credit.js';
import type { RolledOut } from './step-collect.js';

/** A trained call with the advantage its policy trains it with. */
export type KeptItem = CreditedItem & { advantage: number };

/** A step's credited calls: what the store records of each, and what each policy trains on. */
export interface CreditedStep {
  items: CreditedItem[];
  /** Per item: the advantage its policy trained it with (0: not trained). */
  advantages: number[];
  fracRewardZeroStd: number;
  /** Per trained policy (in the set's order): the calls it trains on. */
  perPolicy: KeptItem[][];
}

/** Each policy's advantages over the step's credited calls (`items`, from creditStep over `rolled.groups`). */
export function advantagesPerPolicy(
  items: CreditedItem[],
  rolled: RolledOut,
  policies: TrainedPolicy[],
  training: TrainConfig['training'],
  judged?: { groups: ReadonlySet<string>; scale: number } | null,
): CreditedStep {
  // training.groupBy task-role: a call is compared with its own role's calls of the task only (the store keeps the
  // task as the group; the views split it by role again to show the numbers).
  const advantageGroup = (i: CreditedItem) => (training.groupBy === 'task-role' ? `${i.groupId}\u0000${i.s.agentName ?? ''}` : i.groupId);
  const grouped = items.map((i) => ({ groupId: advantageGroup(i), credit: i.credit }));
  const advantages = new Array<number>(items.length).fill(0);
  let fracRewardZeroStd = 0;
  const perPolicy = policies.map((p) => {
    const adv = computeAdvantages(grouped, p.grpo);
    fracRewardZeroStd = adv.fracRewardZeroStd; // groups without spread: the same under any policy's settings
    // A group dynamic sampling dropped (or a refill, for a policy that did not ask for them) trains nothing.
    const groups = rolled.sampled ? (p.grpo.dynamicSampling ? rolled.sampled.kept : new Set(rolled.scheduled.map((g) => g.task.id))) : null;
    const mine: KeptItem[] = [];
    items.forEach((it, k) => {
      if (p.roles && !p.roles.includes(it.s.agentName ?? '')) return;
      const scale = judged?.groups.has(it.groupId) ? judged.scale : 1;
      const inBatch = (!groups || groups.has(it.groupId)) && scale > 0;
      const a = adv.advantages[k]! * scale;
      advantages[k] = inBatch ? a : 0;
      if (inBatch && adv.keep[k]) mine.push({ ...it, advantage: a });
    });
    return mine;
  });
  return { items, advantages, fracRewardZeroStd, perPolicy };
}
