/**
 * OTLP trace exports checked against the OTLP shape (opentelemetry-proto trace/v1, in its protobuf-decoded
 * form or as OTLP/JSON) before conversion. The envelope (request, resourceSpans, resource, scopeSpans,
 * scope, spans lists) must be right or the whole export is refused with 400 naming the path; each span is
 * judged on its own, and a bad one is rejected through OTLP's partial success (counted, reason given) while
 * the others are stored. Nothing malformed reaches the converter, so nothing there can throw.
 */
import { MAX_JSON_DEPTH } from '../../protocol/store.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array);
const typeOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : v instanceof Uint8Array ? 'bytes' : typeof v);
/** A field under its OTLP/JSON (camelCase) or proto (snake_case) name. */
const field = (o: Obj, camel: string, snake: string) => (o[camel] !== undefined ? o[camel] : o[snake]);

/** Thrown for an export whose envelope is not OTLP: answered 400 with `message` (`<path>: <what is wrong>`). */
export class OtlpShapeError extends Error {
  /** The field the message names first (`resourceSpans[0].resource`; `(body)` for the export itself), for the problem's errors. */
  get path(): string {
    return this.message.slice(0, this.message.indexOf(': ')).replace(/^\(body\)\./, '');
  }
}

const isLong = (v: unknown) => isObj(v) && typeof v.low === 'number' && typeof v.high === 'number';
const isUint = (v: unknown) => isLong(v) || (typeof v === 'number' && Number.isInteger(v) && v >= 0) || (typeof v === 'string' && /^\d{1,20}$/.test(v));
const isInt = (v: unknown) => isLong(v) || (typeof v === 'number' && Number.isInteger(v)) || (typeof v === 'string' && /^-?\d{1,20}$/.test(v));
/** Ids: hex (OTLP/JSON), base64, or bytes (protobuf; an unset field decodes as an empty array). */
const isId = (v: unknown) =>
  v === undefined || v === null || v instanceof Uint8Array || (Array.isArray(v) && v.length === 0) || (typeof v === 'string' && /^[A-Za-z0-9+/=]*$/.test(v));

/** Why an AnyValue is not one, or null. Nesting (arrays, kvlists) is bounded like all free-form JSON. */
function anyValueProblem(v: unknown, path: string, depth: number): string | null {
  if (v === undefined || v === null) return null;
  if (!isObj(v)) return `${path}: expected an AnyValue object, received ${typeOf(v)}`;
  if (depth > MAX_JSON_DEPTH) return `${path}: nested deeper than ${MAX_JSON_DEPTH} levels`;
  const s = field(v, 'stringValue', 'string_value');
  if (s !== undefined) return typeof s === 'string' ? null : `${path}.stringValue: expected string, received ${typeOf(s)}`;
  const b = field(v, 'boolValue', 'bool_value');
  if (b !== undefined) return typeof b === 'boolean' ? null : `${path}.boolValue: expected boolean, received ${typeOf(b)}`;
  const i = field(v, 'intValue', 'int_value');
  if (i !== undefined) return isInt(i) ? null : `${path}.intValue: expected a 64-bit integer, received ${typeOf(i)}`;
  const d = field(v, 'doubleValue', 'double_value');
  if (d !== undefined)
    return typeof d === 'number' || (typeof d === 'string' && /^(NaN|-?Infinity)$/.test(d))
      ? null
      : `${path}.doubleValue: expected number, received ${typeOf(d)}`;
  const by = field(v, 'bytesValue', 'bytes_value');
  if (by !== undefined) return isId(by) ? null : `${path}.bytesValue: expected base64 bytes, received ${typeOf(by)}`;
  const arr = field(v, 'arrayValue', 'array_value');
  if (arr !== undefined) {
    const values = isObj(arr) ? (arr.values ?? []) : null;
    if (!Array.isArray(values)) return `${path}.arrayValue.values: expected array, received ${typeOf(values)}`;
    for (const [k, x] of values.entries()) {
      const p = anyValueProblem(x, `${path}.arrayValue.values[${k}]`, depth + 1);
      if (p) return p;
    }
    return null;
  }
  const kv = field(v, 'kvlistValue', 'kvlist_value');
  if (kv !== undefined)
    return isObj(kv) ? attributesProblem(kv.values, `${path}.kvlistValue.values`, depth + 1) : `${path}.kvlistValue: expected object, received ${typeOf(kv)}`;
  return null; // an empty AnyValue is OTLP's "no value"
}

/** Why a list of KeyValue is not one, or null. */
function attributesProblem(kvs: unknown, path: string, depth = 0): string | null {
  if (kvs === undefined || kvs === null) return null;
  if (!Array.isArray(kvs)) return `${path}: expected an array of {key, value}, received ${typeOf(kvs)}`;
  for (const [k, kv] of kvs.entries()) {
    if (!isObj(kv)) return `${path}[${k}]: expected {key, value}, received ${typeOf(kv)}`;
    if (typeof kv.key !== 'string') return `${path}[${k}].key: expected string, received ${typeOf(kv.key)}`;
    const p = anyValueProblem(kv.value, `${path}[${k}].value`, depth + 1);
    if (p) return p;
  }
  return null;
}

/** Why a span is not an OTLP span (its path and what is wrong), or null. */
export function spanProblem(s: unknown, path: string): string | null {
  if (!isObj(s)) return `${path}: expected a span object, received ${typeOf(s)}`;
  if (s.name !== undefined && typeof s.name !== 'string') return `${path}.name: expected string, received ${typeOf(s.name)}`;
  for (const [camel, snake] of [
    ['traceId', 'trace_id'],
    ['spanId', 'span_id'],
    ['parentSpanId', 'parent_span_id'],
  ]) {
    if (!isId(field(s, camel!, snake!))) return `${path}.${camel}: expected a hex id, received ${typeOf(field(s, camel!, snake!))}`;
  }
  if (s.kind !== undefined && !(Number.isInteger(s.kind) && (s.kind as number) >= 0 && (s.kind as number) <= 5))
    return `${path}.kind: expected an integer from 0 to 5, received ${JSON.stringify(s.kind) ?? typeOf(s.kind)}`;
  for (const [camel, snake] of [
    ['startTimeUnixNano', 'start_time_unix_nano'],
    ['endTimeUnixNano', 'end_time_unix_nano'],
  ]) {
    const t = field(s, camel!, snake!);
    if (t !== undefined && t !== null && !isUint(t))
      return `${path}.${camel}: expected unsigned nanoseconds (integer or decimal string), received ${typeOf(t)}`;
  }
  const attrs = attributesProblem(s.attributes, `${path}.attributes`);
  if (attrs) return attrs;
  if (s.events !== undefined && s.events !== null) {
    if (!Array.isArray(s.events)) return `${path}.events: expected array, received ${typeOf(s.events)}`;
    for (const [k, e] of s.events.entries()) {
      if (!isObj(e)) return `${path}.events[${k}]: expected object, received ${typeOf(e)}`;
      if (e.name !== undefined && typeof e.name !== 'string') return `${path}.events[${k}].name: expected string, received ${typeOf(e.name)}`;
      const t = field(e, 'timeUnixNano', 'time_unix_nano');
      if (t !== undefined && t !== null && !isUint(t)) return `${path}.events[${k}].timeUnixNano: expected unsigned nanoseconds, received ${typeOf(t)}`;
      const p = attributesProblem(e.attributes, `${path}.events[${k}].attributes`);
      if (p) return p;
    }
  }
  if (s.links !== undefined && s.links !== null && !Array.isArray(s.links)) return `${path}.links: expected array, received ${typeOf(s.links)}`;
  if (s.status !== undefined && s.status !== null) {
    if (!isObj(s.status)) return `${path}.status: expected object, received ${typeOf(s.status)}`;
    const { code, message } = s.status;
    if (code !== undefined && !(Number.isInteger(code) && (code as number) >= 0 && (code as number) <= 2))
      return `${path}.status.code: expected 0, 1 or 2, received ${JSON.stringify(code) ?? typeOf(code)}`;
    if (message !== undefined && typeof message !== 'string') return `${path}.status.message: expected string, received ${typeOf(message)}`;
  }
  return null;
}

/** A list field of the envelope: absent is empty; anything but an array of objects is refused (400). */
function list(o: Obj, camel: string, snake: string, path: string): Obj[] {
  const v = field(o, camel, snake);
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new OtlpShapeError(`${path}.${camel}: expected array, received ${typeOf(v)}`);
  if (camel !== 'spans')
    for (const [k, x] of v.entries()) if (!isObj(x)) throw new OtlpShapeError(`${path}.${camel}[${k}]: expected object, received ${typeOf(x)}`);
  return v as Obj[];
}

/** Checks the envelope of an export (throws OtlpShapeError naming the path); spans are checked by spanProblem. */
export function checkEnvelope(request: unknown): void {
  if (!isObj(request)) throw new OtlpShapeError(`(body): expected an ExportTraceServiceRequest object, received ${typeOf(request)}`);
  for (const [i, rs] of list(request, 'resourceSpans', 'resource_spans', '(body)').entries()) {
    const at = `resourceSpans[${i}]`;
    if (rs.resource !== undefined && rs.resource !== null) {
      if (!isObj(rs.resource)) throw new OtlpShapeError(`${at}.resource: expected object, received ${typeOf(rs.resource)}`);
      const p = attributesProblem(rs.resource.attributes, `${at}.resource.attributes`);
      if (p) throw new OtlpShapeError(p);
    }
    for (const [j, ss] of list(rs, 'scopeSpans', 'scope_spans', at).entries()) {
      if (ss.scope !== undefined && ss.scope !== null && !isObj(ss.scope))
        throw new OtlpShapeError(`${at}.scopeSpans[${j}].scope: expected object, received ${typeOf(ss.scope)}`);
      list(ss, 'spans', 'spans', `${at}.scopeSpans[${j}]`);
    }
  }
}
