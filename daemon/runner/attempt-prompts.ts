/**
 * The prompt texts an attempt's agent gets before its seeds (LLMInit.prompts, what `llm.prompt(name, seed)` returns):
 * in a rollout of a prompt optimization (its metadata names the candidate it scores), the candidate's texts, the
 * prompt_template entries of the resources it runs with; else the text promoted for the rollout's agent (`agl optimize
 * promote`), read from the store through a short cache shared by the runner's slots. Only a rollout naming its
 * candidate gets templates: a rollout enqueued without resources runs with the latest, which may be a candidate's, and
 * nothing replaces a user's prompt without their say.
 */
import type { AglClient } from '../../client/client.js';
import { type GivenPrompt, PROMOTED_TEXT_VERSION } from '../../protocol/prompt-template.js';
import type { PromotedPrompt } from '../../protocol/prompts.js';
import { readRolloutMetadata, type Resources, type Rollout } from '../../protocol/store.js';

/** A promotion reaches rollouts of its agent within this time. */
export const PROMOTED_TTL_MS = 1000;

/** Each agent's promoted prompts, re-read at most every `ttlMs` (concurrent claims of one agent share a read). */
export class PromotedPromptsCache {
  private readonly byAgent = new Map<string, { at: number; value: Promise<PromotedPrompt[]> }>();

  constructor(
    private readonly client: Pick<AglClient, 'listPromotedPrompts'>,
    private readonly ttlMs = PROMOTED_TTL_MS,
  ) {}

  forAgent(agent: string): Promise<PromotedPrompt[]> {
    const cached = this.byAgent.get(agent);
    if (cached && Date.now() - cached.at <= this.ttlMs) return cached.value;
    const value = this.client.listPromotedPrompts(agent);
    this.byAgent.set(agent, { at: Date.now(), value });
    // A failed read is not kept: the next claim asks again.
    value.catch(() => {
      if (this.byAgent.get(agent)?.value === value) this.byAgent.delete(agent);
    });
    return value;
  }
}

/**
 * The given texts by prompt name: the agent's promoted texts, overridden, in a rollout naming the candidate it scores,
 * by the prompt_template entries of its resources (versioned by that candidate's id).
 */
export function attemptPrompts(
  rollout: Pick<Rollout, 'metadata'>,
  resources: Resources | null,
  promoted: readonly PromotedPrompt[],
): Record<string, GivenPrompt> {
  const out: Record<string, GivenPrompt> = {};
  for (const p of promoted) out[p.name] = { text: p.text, source: 'promoted', version: p.candidateId ?? PROMOTED_TEXT_VERSION };
  const candidate = readRolloutMetadata(rollout.metadata).candidate;
  if (resources && candidate !== undefined) {
    for (const [name, r] of Object.entries(resources.resources))
      if (r.type === 'prompt_template') out[name] = { text: r.template, source: 'candidate', version: candidate };
  }
  return out;
}
