/**
 * What answered a rollout's LLM calls, read from their spans: the gateway records `agl.served.by` / `.updates` on every
 * call (spans written before it did: the per-role `agl.policy.*`, or the upstream's `gen_ai.response.model`). The
 * rollout view and `agl rollout` say this, never the resources version: that counts publications of resources, not a
 * policy's training updates, and a rollout outside training runs on whatever the daemon serves.
 */
import { AGL, GENAI } from './spans.js';
import { isLlmCallSpan } from './span-reading.js';
import type { Span } from './store.js';

type SpanLike = Pick<Span, 'name' | 'attributes'>;

/** One model that answered calls of a rollout. */
export interface ServedModel {
  /** The local policy's name, or the upstream model's. */
  name: string;
  /** The local policy's training updates when it answered; null: untrained, or upstream. */
  updates: number | null;
  upstream: boolean;
  /** How many of the rollout's calls it answered. */
  calls: number;
}

const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const count = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** What answered one LLM call span; null when the span says nothing of it. */
export function servedByCall(span: SpanLike): Omit<ServedModel, 'calls'> | null {
  const a = span.attributes;
  const upstream = a[AGL.localPolicy] === false || a[GENAI.system] === 'openai';
  const name = text(a[AGL.servedBy]) ?? text(a[AGL.policyName]) ?? (upstream ? (text(a[GENAI.responseModel]) ?? text(a[GENAI.requestModel])) : null);
  if (!name) return null;
  return { name, updates: upstream ? null : (count(a[AGL.servedUpdates]) ?? count(a[AGL.policyVersion])), upstream };
}

/** The models that answered the spans' LLM calls, in the order first seen, each with its number of calls. */
export function servedModels(spans: SpanLike[]): ServedModel[] {
  const seen = new Map<string, ServedModel>();
  for (const s of spans) {
    if (!isLlmCallSpan(s)) continue;
    const one = servedByCall(s);
    if (!one) continue;
    const key = `${one.upstream}\u0000${one.name}\u0000${one.updates}`;
    const known = seen.get(key);
    if (known) known.calls++;
    else seen.set(key, { ...one, calls: 1 });
  }
  return [...seen.values()];
}

/** One model in words: "calc after 34 updates", "warmup (untrained)", "gpt-4o-mini (upstream)". */
export function servedModelText(m: Omit<ServedModel, 'calls'>): string {
  if (m.upstream) return `${m.name} (upstream)`;
  return m.updates ? `${m.name} after ${m.updates} update${m.updates === 1 ? '' : 's'}` : `${m.name} (untrained)`;
}

/** The one action that puts a trained checkpoint behind the calls of a rollout outside training. */
export const SERVE_CHECKPOINT_HINT = 'to run on a trained checkpoint, serve it: agl serve --model <checkpoint dir>, or Serve Checkpoint in the editor';

/**
 * Whether a rollout outside training ran on a trained checkpoint or on what the daemon serves, and how to change it;
 * null when no call says what answered it.
 */
export function servedNote(models: ServedModel[]): string | null {
  if (models.length === 0) return null;
  const names = models.map(servedModelText).join(', ');
  if (models.every((m) => m.upstream)) return `Ran on the upstream model ${models.map((m) => m.name).join(', ')}, not a local policy.`;
  if (models.some((m) => !m.upstream && m.updates)) return `Ran on a trained checkpoint: ${names}.`;
  return `Ran on what the daemon serves: ${names}, never trained; ${SERVE_CHECKPOINT_HINT}.`;
}
