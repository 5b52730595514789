/**
 * What both backends keep beside each rollout so that the rollouts list can search, filter and sort at store
 * scale without reading spans: the text to search (the task input, then the outputs of its calls and
 * messages), the latest attempt's final reward (protocol/span-reading.ts's rule, kept incrementally), its
 * count of spans with an error status and the models that answered its calls (protocol/served-by.ts). Also the one translation of a user's search box into terms: only
 * letters and digits survive, so nothing a user types reaches FTS5 or tsquery syntax (no escaping to get
 * wrong), and both backends match the same words (each term is a prefix: search as you type).
 */
import { AGL, GENAI } from '../../protocol/spans.js';
import { isHumanLabel } from '../../protocol/human-label.js';
import { type RankedReward, isFinalRewardSpan, isLlmCallSpan, replacesReward, rewardOfSpan } from '../../protocol/span-reading.js';
import { ROLLOUT_STATUSES, type Span } from '../../protocol/store.js';
import { mergeServed, servedByCall, type ServedKey } from '../../protocol/served-by.js';

/** Most characters of input text, and of input + outputs together, indexed per rollout. */
export const MAX_INPUT_TEXT = 16_384;
export const MAX_SEARCH_TEXT = 65_536;
/** Most terms one search uses (the rest of a pasted paragraph adds nothing but cost). */
export const MAX_SEARCH_TERMS = 16;

const WORD = /[\p{L}\p{N}]+/gu;

/** The words of a search box, lower-cased, deduplicated, at most MAX_SEARCH_TERMS; [] when it holds none. */
export function searchTerms(query: string): string[] {
  return [...new Set((query.normalize('NFKC').match(WORD) ?? []).map((w) => w.toLowerCase()))].slice(0, MAX_SEARCH_TERMS);
}

/** The searchable text of a JSON value: its strings and numbers (not its keys), in order, space separated, capped. */
export function searchTextOf(value: unknown, max = MAX_INPUT_TEXT): string {
  const parts: string[] = [];
  let length = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && length < max) {
    const v = stack.pop();
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') {
      const s = String(v);
      parts.push(s);
      length += s.length + 1;
    } else if (Array.isArray(v)) for (let i = v.length - 1; i >= 0; i--) stack.push(v[i]);
    else if (v !== null && typeof v === 'object') {
      const vals = Object.values(v);
      for (let i = vals.length - 1; i >= 0; i--) stack.push(vals[i]);
    }
  }
  return parts.join(' ').slice(0, max);
}

/** The text a span adds to its rollout's search: an LLM call's returned messages, a message span's text. */
function outputTextOf(span: Span): string {
  if (isLlmCallSpan(span)) {
    const out = span.attributes[GENAI.outputMessages];
    if (typeof out !== 'string') return '';
    try {
      return searchTextOf(JSON.parse(out), MAX_SEARCH_TEXT);
    } catch {
      return out.slice(0, MAX_SEARCH_TEXT);
    }
  }
  const message = span.attributes[AGL.message];
  return typeof message === 'string' ? message.slice(0, MAX_SEARCH_TEXT) : '';
}

/** What a batch of spans changes for one attempt: its best reward, its spans with an error, what answered its calls. */
interface AttemptDigest {
  reward: RankedReward | null;
  errors: number;
  /** The models that answered its LLM calls, first seen first (protocol/served-by.ts). */
  served: ServedKey[];
}

/** What a batch of spans changes for one rollout: text to append, and per attempt its AttemptDigest. */
export interface SpanDigest {
  rolloutId: string;
  output: string;
  attempts: Map<string, AttemptDigest>;
}

/** Digests spans in the order they were stored (later ones win reward ties, as their sequence ids are larger). */
export function digestSpans(spans: Iterable<Span>): Map<string, SpanDigest> {
  const out = new Map<string, SpanDigest>();
  for (const span of spans) {
    let d = out.get(span.rolloutId);
    if (!d) out.set(span.rolloutId, (d = { rolloutId: span.rolloutId, output: '', attempts: new Map() }));
    const text = outputTextOf(span);
    if (text && d.output.length < MAX_SEARCH_TEXT) d.output += (d.output ? ' ' : '') + text;
    // A person's label is no reward of the rollout (protocol/human-label.ts): the list shows the agent's (or the judge's).
    const reward = isHumanLabel(span) ? null : rewardOfSpan(span);
    const isError = span.status?.code === 'error';
    const served = isLlmCallSpan(span) ? servedByCall(span) : null;
    if (!reward && !isError && !served) continue;
    let a = d.attempts.get(span.attemptId);
    if (!a) d.attempts.set(span.attemptId, (a = { reward: null, errors: 0, served: [] }));
    if (isError) a.errors++;
    if (served) a.served = mergeServed(a.served, [served]) ?? a.served;
    if (reward) {
      const ranked = { value: reward.value, final: isFinalRewardSpan(span), time: span.endTime ?? span.startTime };
      if (replacesReward(ranked, a.reward)) a.reward = ranked;
    }
  }
  for (const d of out.values()) d.output = d.output.slice(0, MAX_SEARCH_TEXT);
  return out;
}

/** A rollout's summary columns as stored (reward_final is 1/0 on SQLite, a boolean on PostgreSQL; served JSON text). */
export interface SummaryRow {
  latest_attempt_id: string | null;
  final_reward: number | null;
  reward_final: unknown;
  reward_time: number | null;
  served: string | null;
}

/** The stored `served` column as models ([] for NULL, or for text that is not a list of them). */
export function storedServed(text: unknown): ServedKey[] {
  if (typeof text !== 'string') return [];
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) ? v.filter((m): m is ServedKey => typeof m?.name === 'string' && typeof m?.upstream === 'boolean') : [];
  } catch {
    return [];
  }
}

/** What a digest changes on its rollout. */
export interface SummaryChange {
  /** Text to append to the search. */
  output: string;
  /** Spans with an error to add. */
  errors: number;
  /** The new final reward; null: keep. */
  reward: RankedReward | null;
  /** The new `served` column (JSON) when the calls name a model it lacks; null: keep (most batches: no write for it). */
  served: string | null;
}

/** `withServed` false: the store has no `served` column yet (migration 2's backfill, before schema 8). */
export function digestChange(d: SpanDigest, r: SummaryRow, withServed = true): SummaryChange {
  const latest = r.latest_attempt_id === null ? undefined : d.attempts.get(r.latest_attempt_id);
  const current =
    r.final_reward === null
      ? null
      : { value: Number(r.final_reward), final: r.reward_final === 1 || r.reward_final === true, time: Number(r.reward_time ?? 0) };
  const reward = latest?.reward && replacesReward(latest.reward, current) ? latest.reward : null;
  const served = withServed && latest?.served.length ? mergeServed(storedServed(r.served), latest.served) : null;
  return { output: d.output, errors: latest?.errors ?? 0, reward, served: served ? JSON.stringify(served) : null };
}

/** The `served` column of an attempt from its LLM call spans (schema 8's backfill); null when none says. */
export function servedColumnOf(spans: Iterable<Span>): string | null {
  const seen = [...spans].filter(isLlmCallSpan).flatMap((s) => servedByCall(s) ?? []);
  const served = mergeServed([], seen);
  return served ? JSON.stringify(served) : null;
}

/** Whether a change writes the rollout's summary columns (errors, reward or served). */
export const changesSummary = (c: SummaryChange): boolean => c.errors > 0 || c.reward !== null || c.served !== null;

/** The words of a text as both backends index them: PostgreSQL gets them pre-split, so its parser and FTS5 agree. */
export function indexedWords(text: string): string {
  return (text.normalize('NFKC').match(WORD) ?? []).join(' ').toLowerCase();
}

/** `CASE status WHEN 'queuing' THEN 0 ... END`: sorts statuses in the data model's order (our constants, never input). */
export const STATUS_RANK_SQL = `CASE r.status ${ROLLOUT_STATUSES.map((s, i) => `WHEN '${s}' THEN ${i}`).join(' ')} END`;
