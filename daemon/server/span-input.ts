/**
 * The one check of a span's shape on the way in (POST /v1/agl/spans, routes-spans.ts): parseSpanBody takes
 * one span or `{ spans: [...] }` and returns the spans as the zod schema (protocol/api.ts SpanInputRequest)
 * parses them, or throws its 400 naming the field. Span batches are the daemon's biggest request bodies, and
 * zod's per-key union checks of their attribute maps cost more than parsing the JSON (bench:store, spans of
 * ~50 attributes), so a fast accept-path checks the common shape directly and returns what zod would return,
 * or null whenever anything is unusual (unknown key, wrong type, events, extra status fields...): zod then
 * decides and names the problem. test/server/span-input.test.ts holds the fast path to zod's answer on random
 * valid and broken spans. (OTLP spans are checked against OTLP's own shape: otlp-validate.ts; the stores keep
 * only a guard against untyped callers: daemon/store/common.ts checkSpanInput.)
 */
import { AddSpansManyRequest, MAX_BATCH, SpanInputRequest } from '../../protocol/api.js';
import { withSpanDefaults, type AttributeValue, type SpanInput, type SpanInputParsed } from '../../protocol/store.js';
import { parseOr400 } from './errors.js';

const KEYS = new Set([
  'rolloutId',
  'attemptId',
  'traceId',
  'spanId',
  'parentSpanId',
  'name',
  'kind',
  'startTime',
  'endTime',
  'attributes',
  'events',
  'status',
  'resource',
]);
const KINDS = new Set(['internal', 'server', 'client', 'producer', 'consumer']);
const CODES = new Set(['unset', 'ok', 'error']);

const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;

function isScalar(v: unknown): boolean {
  return typeof v === 'string' || v === null || typeof v === 'boolean' || isNumber(v);
}

function isAttributes(v: unknown): v is Record<string, AttributeValue> {
  if (!isPlainObject(v)) return false;
  for (const key in v) {
    if (key === '__proto__') return false;
    const x = v[key];
    if (isScalar(x)) continue;
    if (!Array.isArray(x)) return false;
    for (const item of x) if (!isScalar(item)) return false;
  }
  return true;
}

/** The parsed span when `value` is plainly a valid SpanInputRequest; null means "ask zod". */
export function parseSpanInputFast(value: unknown): SpanInputParsed | null {
  if (!isPlainObject(value)) return null;
  for (const key in value) if (!KEYS.has(key)) return null;
  const s = value as Record<string, unknown>;
  if (typeof s.rolloutId !== 'string' || typeof s.attemptId !== 'string' || typeof s.name !== 'string' || !isNumber(s.startTime)) return null;
  if (s.traceId !== undefined && !(typeof s.traceId === 'string' && s.traceId.length > 0)) return null;
  if (s.spanId !== undefined && !(typeof s.spanId === 'string' && s.spanId.length > 0)) return null;
  if (s.parentSpanId !== undefined && s.parentSpanId !== null && typeof s.parentSpanId !== 'string') return null;
  if (s.kind !== undefined && !(typeof s.kind === 'string' && KINDS.has(s.kind))) return null;
  if (s.endTime !== undefined && s.endTime !== null && !isNumber(s.endTime)) return null;
  if (s.attributes !== undefined && !isAttributes(s.attributes)) return null;
  if (s.resource !== undefined && !isAttributes(s.resource)) return null;
  if (s.events !== undefined && !(Array.isArray(s.events) && s.events.length === 0)) return null;
  const status = s.status;
  if (status !== undefined) {
    if (!isPlainObject(status) || !CODES.has(status.code as string)) return null;
    for (const key in status) if (key !== 'code' && key !== 'message') return null;
    if (status.message !== undefined && typeof status.message !== 'string') return null;
  }
  return withSpanDefaults(s as SpanInput); // the defaults, from the one place they are written
}

/** Every span of a batch through the fast path, or null when any needs zod. */
export function parseSpanInputsFast(values: unknown): SpanInputParsed[] | null {
  if (!Array.isArray(values)) return null;
  const out: SpanInputParsed[] = new Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const s = parseSpanInputFast(values[i]);
    if (!s) return null;
    out[i] = s;
  }
  return out;
}

const spanCount = (spans: unknown) => Array.isArray(spans) && spans.length >= 1 && spans.length <= MAX_BATCH;

/** POST /spans' body, one span or `{ spans: [...] }`, as validated spans: plainly valid batches skip zod. */
export function parseSpanBody(body: unknown): SpanInputParsed[] {
  const b = body as Record<string, unknown> | undefined;
  const many = b !== null && typeof b === 'object' && !Array.isArray(b) && 'spans' in b && !('rolloutId' in b);
  const fast = many ? (Object.keys(b).length === 1 && spanCount(b.spans) ? parseSpanInputsFast(b.spans) : null) : parseSpanInputsFast([b]);
  return fast ?? (many ? parseOr400(AddSpansManyRequest, b).spans : [parseOr400(SpanInputRequest, b)]);
}
