/**
 * Which reward an agent trains on, in the words its CodeLens uses ("reward: its own", "reward: judge", "reward: both
 * (judge × 0.5)") and the facts Train This Agent decides on: its own (what its code emits or returns), an LLM judge's
 * (train.yaml `judge:` with weight null: the judge's score replaces it), both (its own plus weight × the judge's), or
 * none (its rollouts carry no reward, so training has nothing to learn from until a judge scores them).
 * Read from a training run's recorded config (`config.judge`: protocol/judge-settings.ts), read safely: a record is
 * whatever the store holds. Pure, no zod (the language server and the extension read it).
 */
import type { AgentHeadline } from './agent-headline.js';
import type { TrainingRun } from './store.js';

export type RewardSource = { kind: 'own' } | { kind: 'judge'; model: string } | { kind: 'both'; model: string; weight: number } | { kind: 'none' };

/** An agent's reward source and where it was read: the newest training run's config, or its rollouts (no run yet). */
export interface AgentReward {
  source: RewardSource;
  runId: string | null;
}

/** The reward a run's config trains on: its `judge:` section's weight (null: the judge's alone), or the agent's own without one. */
export function rewardSourceOfConfig(config: Record<string, unknown>): RewardSource {
  const judge = config.judge;
  if (!judge || typeof judge !== 'object') return { kind: 'own' };
  const j = judge as { model?: unknown; weight?: unknown };
  const model = typeof j.model === 'string' ? j.model : 'judge';
  return typeof j.weight === 'number' && Number.isFinite(j.weight) ? { kind: 'both', model, weight: j.weight } : { kind: 'judge', model };
}

/**
 * An agent's reward for its lens: what its newest training run trained on; without a run, `none` when it has ended
 * rollouts and none of the recent ones has a reward (the headline says so), else null (nothing to say yet: its own
 * reward is the headline's number).
 */
export function agentReward(trainRuns: readonly TrainingRun[], headline: Pick<AgentHeadline, 'source' | 'rollouts'>): AgentReward | null {
  const newest = [...trainRuns].sort((a, b) => b.createdAt - a.createdAt)[0];
  if (newest) return { source: rewardSourceOfConfig(newest.config), runId: newest.id };
  if (headline.source === 'none' && headline.rollouts > 0) return { source: { kind: 'none' }, runId: null };
  return null;
}

/** The lens's words for a reward source, and its tooltip sentence. */
export function describeRewardSource(r: AgentReward): { text: string; tooltip: string } {
  const run = r.runId ? `training run ${r.runId}` : '';
  switch (r.source.kind) {
    case 'own':
      return { text: 'reward: its own', tooltip: `Trains on its own reward (the one its code emits or returns): ${run} had no judge.` };
    case 'judge':
      return {
        text: 'reward: judge',
        tooltip: `Trains on an LLM judge's score (${r.source.model}), which replaces any reward of its own (an agent can lock one: emitReward(v, { final: true })): ${run}'s judge: section.`,
      };
    case 'both':
      return {
        text: `reward: both (judge × ${r.source.weight})`,
        tooltip: `Trains on its own reward plus ${r.source.weight} × an LLM judge's score (${r.source.model}): ${run}'s judge: section.`,
      };
    case 'none':
      return {
        text: 'reward: none',
        tooltip:
          'None of its recent rollouts has a reward, so training would have nothing to learn from: Train offers an LLM judge that scores them against a rubric.',
      };
  }
}
