/**
 * OTLP trace data (decoded protobuf messages or OTLP/JSON, which differ only in how ids and 64-bit
 * integers are written) -> our SpanInput. Rollout and attempt come from span attributes, then resource
 * attributes (agl.* or agent-lightning v0's agentlightning.*), then the request headers. Rewards in
 * agent-lightning v0's shape (agentlightning.reward.{i}.name / .value) gain our agl.reward.* attributes.
 */
import { AGL, AGL_V0_REWARD_PREFIX } from '../../protocol/spans.js';
import type { AttributeValue, Attributes, SpanInput } from '../../protocol/store.js';
import { spanProblem } from './otlp-validate.js';

type Obj = Record<string, unknown>;
const KINDS = ['internal', 'internal', 'server', 'client', 'producer', 'consumer'] as const;
const STATUS = ['unset', 'ok', 'error'] as const;
const ROLLOUT_KEYS = [AGL.rolloutId, 'agentlightning.rollout_id'];
const ATTEMPT_KEYS = [AGL.attemptId, 'agentlightning.attempt_id'];

/** Protobuf gives Uint8Array; OTLP/JSON gives hex (the spec's exception to proto3 JSON's base64). */
function idHex(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return /^[0-9a-fA-F]*$/.test(v) ? v.toLowerCase() : Buffer.from(v, 'base64').toString('hex');
  return Buffer.from(v as Uint8Array).toString('hex');
}

interface LongLike {
  low: number;
  high: number;
}
const isLong = (v: unknown): v is LongLike =>
  typeof v === 'object' && v !== null && typeof (v as LongLike).low === 'number' && typeof (v as LongLike).high === 'number';
/** protobufjs' 64-bit integers (Long) as a double: exact below 2^53, ~256 ns granularity for epoch nanos. */
const longToNumber = (v: LongLike) => (v.high >>> 0) * 4294967296 + (v.low >>> 0);
const signedLongToNumber = (v: LongLike) => v.high * 4294967296 + (v.low >>> 0);

/** Nanoseconds (Long, decimal string or number) -> epoch milliseconds, keeping sub-ms precision. */
function nanosToMs(v: unknown): number | null {
  if (v === undefined || v === null) return null;
  if (isLong(v)) {
    const ns = longToNumber(v);
    return ns === 0 ? null : ns / 1e6;
  }
  const n = typeof v === 'number' ? BigInt(Math.round(v)) : BigInt(String(v));
  if (n === 0n) return null;
  return Number(n / 1000n) / 1000;
}

function anyValue(v: unknown): unknown {
  if (v === null || v === undefined || typeof v !== 'object') return v ?? null;
  const o = v as Obj;
  const key = Object.keys(o).find((k) => k.endsWith('Value') || k.endsWith('_value'));
  if (!key) return null;
  const x = o[key];
  switch (key) {
    case 'intValue':
    case 'int_value':
      return isLong(x) ? signedLongToNumber(x) : Number(x);
    case 'arrayValue':
    case 'array_value':
      return (((x as Obj)?.values as unknown[]) ?? []).map(anyValue);
    case 'kvlistValue':
    case 'kvlist_value':
      return Object.fromEntries((((x as Obj)?.values as Obj[]) ?? []).map((kv) => [kv.key, anyValue(kv.value)]));
    case 'bytesValue':
    case 'bytes_value':
      return typeof x === 'string' ? x : Buffer.from(x as Uint8Array).toString('base64');
    default:
      return x;
  }
}

function toAttribute(v: unknown): AttributeValue {
  if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  if (Array.isArray(v) && v.every((x) => x === null || ['string', 'number', 'boolean'].includes(typeof x))) return v as AttributeValue;
  return JSON.stringify(v);
}

export function attributesOf(kvs: unknown): Attributes {
  const out: Attributes = {};
  for (const kv of (kvs as Obj[] | undefined) ?? []) out[String(kv.key)] = toAttribute(anyValue(kv.value));
  return out;
}

function firstString(attrs: Attributes, keys: string[]): string | undefined {
  for (const k of keys) {
    const v = attrs[k];
    if (typeof v === 'string' && v) return v;
  }
  return undefined;
}

/** agent-lightning v0 reward attributes -> agl.reward.value / name / components (first = primary). */
export function normalizeV0Reward(attrs: Attributes): void {
  if (attrs[AGL.rewardValue] !== undefined) return;
  const components: Record<string, number> = {};
  let primary: { name: string; value: number } | null = null;
  for (let i = 0; ; i++) {
    const value = attrs[`${AGL_V0_REWARD_PREFIX}.${i}.value`];
    if (value === undefined) break;
    const name = String(attrs[`${AGL_V0_REWARD_PREFIX}.${i}.name`] ?? (i === 0 ? 'reward' : `reward_${i}`));
    if (typeof value === 'number') {
      components[name] = value;
      primary ??= { name, value };
    }
  }
  if (!primary && typeof attrs.reward === 'number') primary = { name: 'reward', value: attrs.reward };
  if (!primary) return;
  attrs[AGL.rewardValue] = primary.value;
  attrs[AGL.rewardName] = primary.name;
  if (Object.keys(components).length > 1) attrs[AGL.rewardComponents] = JSON.stringify(components);
}

export interface ConvertResult {
  spans: SpanInput[];
  rejected: number;
  reasons: string[];
}

/**
 * Converts an ExportTraceServiceRequest (protobuf-decoded or OTLP/JSON; its envelope checked by
 * otlp-validate.ts checkEnvelope) into spans for the store; spans that are not OTLP spans are rejected with why.
 */
export function convertOtlp(request: unknown, fallback: { rolloutId?: string; attemptId?: string }): ConvertResult {
  const spans: SpanInput[] = [];
  let rejected = 0;
  const reasons = new Set<string>();
  const req = request as Obj;
  for (const [i, rs] of ((req.resourceSpans ?? req.resource_spans ?? []) as Obj[]).entries()) {
    const resource = attributesOf((rs.resource as Obj | undefined)?.attributes);
    const resRollout = firstString(resource, ROLLOUT_KEYS) ?? fallback.rolloutId;
    const resAttempt = firstString(resource, ATTEMPT_KEYS) ?? fallback.attemptId;
    for (const [j, ss] of ((rs.scopeSpans ?? rs.scope_spans ?? []) as Obj[]).entries()) {
      const scopeName = (ss.scope as Obj | undefined)?.name;
      for (const [k, s] of ((ss.spans ?? []) as Obj[]).entries()) {
        const bad = spanProblem(s, `resourceSpans[${i}].scopeSpans[${j}].spans[${k}]`);
        if (bad) {
          rejected++;
          reasons.add(bad);
          continue;
        }
        const attributes = attributesOf(s.attributes);
        const rolloutId = firstString(attributes, ROLLOUT_KEYS) ?? resRollout;
        const attemptId = firstString(attributes, ATTEMPT_KEYS) ?? resAttempt;
        if (!rolloutId || !attemptId) {
          rejected++;
          reasons.add(
            `span '${String(s.name)}' names no rollout/attempt: set resource attributes ${AGL.rolloutId} and ${AGL.attemptId}, or headers x-agl-rollout-id / x-agl-attempt-id`,
          );
          continue;
        }
        if (s.name === AGL_V0_REWARD_PREFIX || attributes[`${AGL_V0_REWARD_PREFIX}.0.value`] !== undefined) normalizeV0Reward(attributes);
        if (typeof scopeName === 'string' && scopeName && attributes['otel.scope.name'] === undefined) attributes['otel.scope.name'] = scopeName;
        const status = (s.status ?? {}) as Obj;
        const kind = Number(s.kind ?? 0);
        const code = Number(status.code ?? 0);
        const start = nanosToMs(s.startTimeUnixNano ?? s.start_time_unix_nano) ?? Date.now();
        spans.push({
          rolloutId,
          attemptId,
          traceId: idHex(s.traceId ?? s.trace_id) || undefined,
          spanId: idHex(s.spanId ?? s.span_id) || undefined,
          parentSpanId: idHex(s.parentSpanId ?? s.parent_span_id) || null,
          name: String(s.name ?? ''),
          kind: KINDS[kind] ?? 'internal',
          startTime: start,
          endTime: nanosToMs(s.endTimeUnixNano ?? s.end_time_unix_nano),
          attributes,
          events: ((s.events ?? []) as Obj[]).map((e) => ({
            name: String(e.name ?? ''),
            time: nanosToMs(e.timeUnixNano ?? e.time_unix_nano) ?? start,
            attributes: attributesOf(e.attributes),
          })),
          status: { code: STATUS[code] ?? 'unset', ...(status.message ? { message: String(status.message) } : {}) },
          resource,
        });
      }
    }
  }
  return { spans, rejected, reasons: [...reasons] };
}
