/**
 * Credit assignment: how much of an episode's reward each LLM call of the trajectory receives.
 * Strategies (choose with `credit.strategy`):
 *  - identical   every call gets the episode's final reward R (the paper's default; agent-lightning's only one)
 *  - discounted  call i of T gets gamma^(T-1-i) * R: calls far from the outcome get less
 *  - last        only the last call gets R; the others get 0
 *  - combined    R plus intermediateWeight * (the intermediate rewards that followed the call)
 * The final reward R is the reward the agent function returned (the span marked `agl.reward.final`), else the
 * last reward emitted in the attempt (0 when none: a crashed agent earns nothing); every other reward not marked final is
 * intermediate (an LLM judge's reward, marked final, replaces the agent's returned one). The rule is protocol/span-reading.ts `pickFinalReward`, shared with the viewer and CodeLens.
 * Automatic intermediate rewards (AIR) are rules on tool spans ("tool succeeded: +0.1", "tool failed: -0.2",
 * optionally for one tool name) that add to the call that requested the tool, without touching the agent.
 * They apply under every strategy (they reward the call that caused the tool outcome).
 */
import { AirRule, CreditConfig } from '../../protocol/train-config.js';
import { pickFinalReward } from '../../protocol/span-reading.js';
import type { Trajectory, TrajectoryStep } from './adapter.js';

export { AirRule, CreditConfig, type CreditStrategy } from '../../protocol/train-config.js';

export interface CreditedStep {
  step: TrajectoryStep;
  credit: number;
  finalReward: number;
}

/** The episode's final reward: the returned one, else the last reward emitted; 0 when none. */
export function finalReward(traj: Trajectory): number {
  return pickFinalReward(traj.rewards)?.value ?? 0;
}

/** Sum of AIR rewards for the tool outcomes that followed a call. */
export function airReward(step: TrajectoryStep, rules: AirRule[]): number {
  let total = 0;
  for (const t of step.tools) {
    for (const r of rules) {
      if ((r.when === 'tool_succeeded') !== t.succeeded) continue;
      if (r.tool && !new RegExp(r.tool).test(t.toolName)) continue;
      total += r.reward;
    }
  }
  return total;
}

/** Gives every step of the trajectory its credit. */
export function assignCredit(traj: Trajectory, config: Partial<CreditConfig> = {}): CreditedStep[] {
  const cfg = CreditConfig.parse(config);
  const R = finalReward(traj);
  const finalSpanId = pickFinalReward(traj.rewards)?.spanId ?? null;
  const T = traj.steps.length;
  return traj.steps.map((step, i) => {
    let credit: number;
    switch (cfg.strategy) {
      case 'identical':
        credit = R;
        break;
      case 'discounted':
        credit = Math.pow(cfg.gamma, T - 1 - i) * R;
        break;
      case 'last':
        credit = i === T - 1 ? R : 0;
        break;
      case 'combined': {
        // A final-marked reward a later one replaced (the agent's returned reward under an LLM judge's) is no intermediate one.
        const intermediate = step.rewards.filter((r) => r.spanId !== finalSpanId && !r.final).reduce((a, r) => a + r.value, 0);
        credit = R + cfg.intermediateWeight * intermediate;
        break;
      }
    }
    return { step, credit: credit + airReward(step, cfg.air), finalReward: R };
  });
}
