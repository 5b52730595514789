/**
 * A training run's transitions for training elsewhere (`agl export`: TRL, verl): each with its credit and GRPO
 * advantage, joined to its LLM call's span (prompt and completion token ids and text, log-probs) and the policy that
 * served it.
 */
import { AGL, GENAI } from '../../protocol/spans.js';
import { numberArrayAttr } from '../../protocol/span-reading.js';
import type { Span } from '../../protocol/store.js';
import { DEFAULT_POLICY, isOnePolicy, ONE_POLICY, policySet } from '../../protocol/policy-set.js';
import { recordedTrainConfig } from '../../protocol/train-config.js';
import type { LightningStore } from '../../protocol/lightning-store.js';

function text(span: Span | undefined, key: string): unknown {
  const v = span?.attributes[key];
  if (typeof v !== 'string') return null;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}

/** Writes run `runId`'s transitions, one JSON line each; returns how many. */
export async function exportTransitions(store: LightningStore, runId: string, write: (line: string) => void): Promise<number> {
  const transitions = await store.queryTransitions({ runId });
  // The policy of each call, from the run's policy set: its role's, else the default policy (or the run's one policy).
  const config = recordedTrainConfig((await store.getTrainingRun(runId))?.config);
  const set = config ? policySet(config) : null;
  const policyOf = (role: string | null | undefined): string => (role && set?.owners[role]) || (!set || isOnePolicy(set) ? ONE_POLICY : DEFAULT_POLICY);
  const spansByRollout = new Map<string, Map<string, Span>>();
  let n = 0;
  for (const t of transitions) {
    let spans = spansByRollout.get(t.rolloutId);
    if (!spans) {
      spans = new Map((await store.querySpans({ rolloutId: t.rolloutId, attemptId: t.attemptId })).map((s) => [s.spanId, s]));
      spansByRollout.clear(); // transitions come grouped by rollout: keep memory flat
      spansByRollout.set(t.rolloutId, spans);
    }
    const s = spans.get(t.spanId);
    write(
      `${JSON.stringify({
        ...t,
        policy: typeof s?.attributes[AGL.policyName] === 'string' ? s.attributes[AGL.policyName] : policyOf(t.agentName),
        policyVersion: typeof s?.attributes[AGL.policyVersion] === 'number' ? s.attributes[AGL.policyVersion] : null,
        promptTokenIds: numberArrayAttr(s?.attributes[AGL.promptTokenIds]),
        completionTokenIds: numberArrayAttr(s?.attributes[AGL.completionTokenIds]),
        completionLogprobs: numberArrayAttr(s?.attributes[AGL.completionLogprobs]),
        prompt: text(s, GENAI.inputMessages),
        completion: text(s, GENAI.outputMessages),
      })}\n`,
    );
    n++;
  }
  return n;
}
