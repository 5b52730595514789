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

/** One model that answered calls of a rollout, without its count (what the store keeps beside each rollout). */
export type ServedKey = Omit<ServedModel, 'calls'>;

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
export function servedByCall(span: SpanLike): ServedKey | null {
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
    const key = servedKeyOf(one);
    const known = seen.get(key);
    if (known) known.calls++;
    else seen.set(key, { ...one, calls: 1 });
  }
  return [...seen.values()];
}

/** One model in words: "calc after 34 updates", "warmup (untrained)", "gpt-4o-mini (upstream)". */
export function servedModelText(m: ServedKey): string {
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

// --- the rollouts list: what the store keeps per rollout, and how a row says it ---------------------------------------
/** Models kept per rollout at most (the rest of a rollout's calls add nothing to what its row can say). */
export const MAX_SERVED_MODELS = 8;
/** Characters of a model's name kept at most. */
export const MAX_SERVED_NAME = 200;

/** The identity of a model that answered: the same policy after other updates is another. */
export const servedKeyOf = (m: ServedKey): string => `${m.upstream}\u0000${m.name}\u0000${m.updates}`;

/**
 * `known` with the models of `seen` it lacks appended (first seen first, at most MAX_SERVED_MODELS, names capped);
 * null when it lacks none (nothing to write).
 */
export function mergeServed(known: readonly ServedKey[], seen: readonly ServedKey[]): ServedKey[] | null {
  const keys = new Set(known.map(servedKeyOf));
  const out = [...known];
  for (const m of seen) {
    if (out.length >= MAX_SERVED_MODELS) break;
    const one = { name: m.name.slice(0, MAX_SERVED_NAME), updates: m.updates, upstream: m.upstream };
    const key = servedKeyOf(one);
    if (keys.has(key)) continue;
    keys.add(key);
    out.push(one);
  }
  return out.length > known.length ? out : null;
}

/** One model in a list's row: "calc · 34 updates", "warmup · untrained", "gpt-4o-mini · upstream". */
function servedShort(m: ServedKey): string {
  if (m.upstream) return `${m.name} · upstream`;
  return m.updates ? `${m.name} · ${m.updates} update${m.updates === 1 ? '' : 's'}` : `${m.name} · untrained`;
}

/**
 * A row's model, compact: the one model; the one policy over several of its versions ("calc · 33–34 updates"); else
 * "mixed: " and the names; "—" when no call says.
 */
export function servedRowText(models: readonly ServedKey[]): string {
  if (models.length === 0) return '—';
  if (models.length === 1) return servedShort(models[0]!);
  const names = [...new Set(models.map((m) => m.name))];
  const versions = models.map((m) => m.updates ?? 0);
  if (names.length === 1 && models.every((m) => !m.upstream)) return `${names[0]} · ${Math.min(...versions)}–${Math.max(...versions)} updates`;
  return `mixed: ${names.join(', ')}`;
}

/** What a row's model says, for its tooltip: what it counts, then each model in words. */
export function servedRowTip(models: readonly ServedKey[]): string {
  const what =
    "Model: what answered the LLM calls of the rollout's latest attempt, as the gateway recorded it on each call " +
    '(a local policy and its training updates then, or the upstream model); not the resources version.';
  if (models.length === 0) return `${what}\nNo call of it says (none made yet, or recorded before the gateway said).`;
  return [what, ...models.map((m) => `• ${servedModelText(m)}`), ...(models.length >= MAX_SERVED_MODELS ? ['(and maybe more)'] : [])].join('\n');
}
