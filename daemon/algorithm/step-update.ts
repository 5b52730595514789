/**
 * Step 4 of a training step, update per policy: one optimizer update per trained policy on the calls it trains on (a
 * shared policy gets every call of its roles, once), with the sampling policy's log-probs (from the gateway's spans,
 * else recomputed before the update, so they match) and its reference's when its KL term is on. The request carries
 * the update's own settings: the policy's GRPO settings as its loss, its schedule's learning rate. A policy none of
 * whose calls has an advantage makes no update (its result says so).
 */
import { emptyLossStats } from '../../protocol/engine.js';
import type { SequencePair, TrainStepResult } from '../model/policy-contract.js';
import { grpoLoss } from './grpo.js';
import type { TrainedPolicy } from './open-policy-set.js';
import type { KeptItem } from './step-advantages.js';

/** One policy's part of a step: its calls, and its update when it made one (null: nothing to learn from). */
export interface PolicyUpdate {
  policy: TrainedPolicy;
  items: KeptItem[];
  /** The rate its update used (its schedule's, at its own update count). */
  lr: number;
  result: TrainStepResult | null;
}

/** The result of a step that updated nothing. */
export const NO_UPDATE: TrainStepResult = { loss: 0, gradNorm: 0, tokens: 0, seconds: 0, stats: emptyLossStats() };

/** The sampling policy's log-probs of each kept call: the gateway's, else scored now (before the weights change). */
async function oldLogprobs(p: TrainedPolicy, kept: KeptItem[], pairs: SequencePair[]): Promise<number[][]> {
  const old = kept.map((k) => k.s.logprobs);
  const missing = old.map((l, i) => (l ? -1 : i)).filter((i) => i >= 0);
  if (missing.length) {
    const scored = await p.model.scoreLogprobs(missing.map((i) => pairs[i]!));
    missing.forEach((i, j) => {
      old[i] = scored[j];
    });
  }
  return old as number[][];
}

/**
 * Policy `p`'s update on its kept calls at rate `lr` (its schedule's), or null when none has an advantage.
 * `maxTokens` is the run's generation budget, Dr.GRPO's default normaliser.
 */
export async function updatePolicy(p: TrainedPolicy, kept: KeptItem[], lr: number, maxTokens: number): Promise<TrainStepResult | null> {
  const pairs: SequencePair[] = kept.map((k) => ({ promptIds: k.s.promptIds, completionIds: k.s.completionIds }));
  if (p.grpo.beta > 0 && !p.reference) throw new Error(`the KL term (grpo.beta > 0) of policy ${p.name} needs a reference policy`);
  if (!kept.some((k) => k.advantage !== 0)) return null;
  const old = await oldLogprobs(p, kept, pairs);
  const ref = p.grpo.beta > 0 ? await p.reference!.scoreLogprobs(pairs) : null;
  const samples = kept.map((k, i) => ({ advantage: k.advantage, oldLogprobs: old[i]!, refLogprobs: ref ? ref[i]! : null }));
  const loss = grpoLoss(samples, { ...p.grpo, lossNormTokens: p.grpo.lossNormTokens ?? maxTokens });
  return p.model.trainStep(pairs, loss, { lr });
}
