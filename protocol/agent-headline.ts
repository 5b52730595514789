/**
 * An agent's headline number: the one reward figure the CodeLens title shows, its tooltip explains, and the
 * training dashboard repeats in the same words. Defined once:
 * 1. the held-out score: the latest validation reward (metrics.ts `val/reward`: mean final reward on the
 *    validation tasks) of the agent's newest training run that has one;
 * 2. else, without a validated run, the mean final reward of its most recent ended train rollouts (at most
 *    HEADLINE_WINDOW of them) that its training runs enqueued: a prompt optimization's (its train split is mode
 *    `train` too) and an evaluation's (`agl eval`) never count in a training reward;
 * 3. else the same over its most recent ended rollouts of any mode (Run Rollout's are `test`) that no eval and no
 *    optimization ran.
 * The rollout count is the agent's own too: its evals' and optimizations' rollouts are counted apart (the lens gives
 * those runs their own lines: protocol/run-results.ts).
 * sdk/agent-headline.ts reads the facts from the store; `describeHeadline` words them. Pure: the webviews import it.
 */

/** How many recent rollouts the reward mean of cases 2 and 3 takes at most. */
export const HEADLINE_WINDOW = 16;

export interface HeadlineFacts {
  /** Ended rollouts of the agent counted (up to a limit; `rolloutsCapped` when more exist), its evals' and optimizations' left out. */
  rollouts: number;
  rolloutsCapped: boolean;
  /** Ended rollouts its evals and optimizations ran (not in `rollouts`). */
  otherRunRollouts?: number;
  /** The newest validated run: its id, the step and value of its latest validation, and its first validation. */
  heldOut: {
    runId: string;
    step: number;
    value: number;
    first: { step: number; value: number };
    /** The run's validation sampled greedily (model.valTemperature 0); null when its config does not say. */
    greedy?: boolean | null;
    /** The roles the run trained with their own policies (config `policies:`), empty without. */
    policies?: string[];
  } | null;
  /** The recent rollouts' mean final reward: its training runs' rollouts, or any mode when the agent has no rewarded one. */
  recent: { mode: 'train' | 'any'; count: number; mean: number } | null;
}

export interface AgentHeadline extends HeadlineFacts {
  source: 'held-out' | 'train' | 'recent' | 'none';
  /** The number (null when there is none yet). */
  value: number | null;
  /** Short words with the number: "held-out reward 0.95 (from 0.29)", "train reward 0.78", "no reward yet". */
  text: string;
  /** Exactly what the number is, for the lens tooltip and the dashboard's title attribute. */
  tooltip: string;
}

const fixed = (x: number): string => x.toFixed(2);

/** "500+ ended rollouts", "1 ended rollout". */
export function rolloutCount(n: number, capped: boolean): string {
  return `${n.toLocaleString('en-US')}${capped ? '+' : ''} rollout${n === 1 && !capped ? '' : 's'}`;
}

export function describeHeadline(f: HeadlineFacts): AgentHeadline {
  const others = f.otherRunRollouts ? ` (and ${rolloutCount(f.otherRunRollouts, false)} of its evals and optimizations, not counted here)` : '';
  const count = `${rolloutCount(f.rollouts, f.rolloutsCapped)} ended${others}`;
  if (f.heldOut) {
    const h = f.heldOut;
    const moved = h.first.step < h.step;
    return {
      ...f,
      source: 'held-out',
      value: h.value,
      // "from" names what it was: the same held-out validation, at the step it was first taken (0: before training).
      text: `held-out reward ${fixed(h.value)}${moved ? ` (from ${fixed(h.first.value)} at step ${h.first.step})` : ''}`,
      tooltip:
        `Held-out reward ${fixed(h.value)}: mean final reward on the validation tasks${h.greedy ? ', answered greedily (temperature 0),' : ''}` +
        ` at step ${h.step} of training run ${h.runId}` +
        `${moved ? ` (${fixed(h.first.value)} on the same tasks at step ${h.first.step}${h.first.step === 0 ? ', before training' : ''})` : ''}` +
        `, the agent's newest run with a validation; ${count}.` +
        (h.policies?.length ? ` The run trained one policy per role: ${h.policies.join(', ')}.` : ''),
    };
  }
  if (f.recent) {
    const r = f.recent;
    const which = `${r.count === 1 ? 'latest' : `${r.count} latest`} rollout${r.count === 1 ? '' : 's'}${r.mode === 'train' ? ' of its training runs' : ''}`;
    const counted = r.mode === 'train' ? "prompt optimizations' and evaluations' rollouts do not count; " : '';
    return {
      ...f,
      source: r.mode === 'train' ? 'train' : 'recent',
      value: r.mean,
      text: `${r.mode === 'train' ? 'train reward' : 'reward'} ${fixed(r.mean)}`,
      tooltip:
        `${r.mode === 'train' ? 'Train reward' : 'Reward'} ${fixed(r.mean)}: mean final reward of the agent's ${which}` +
        ` (${counted}no training run of it has a validation yet); ${count}.`,
    };
  }
  return {
    ...f,
    source: 'none',
    value: null,
    // An agent only evaluated or optimized has results on their own lines, not a reward of its own.
    text: f.rollouts === 0 ? (f.otherRunRollouts ? 'not trained or run yet' : 'no rollouts yet') : 'no reward yet',
    tooltip:
      f.rollouts === 0
        ? f.otherRunRollouts
          ? `No rollout of this agent outside its evals and optimizations yet: their ${rolloutCount(f.otherRunRollouts, false)} score their models and prompt candidates, and their results have their own lens.`
          : 'No rollout of this agent in the store yet.'
        : `None of the agent's recent rollouts has a reward; ${count}.`,
  };
}
