/**
 * The fast accept-path for spans (daemon/server/span-input.ts) must never accept what zod rejects, and must
 * return exactly zod's output when it accepts. Random spans, valid and broken in every field, both ways.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SpanInputRequest } from '../../protocol/api.js';
import { parseSpanInputFast, parseSpanInputsFast } from '../../daemon/server/span-input.js';

let seed = 12345;
const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)]!;
const maybe = (p = 0.5) => rand() < p;

const scalar = () => pick<unknown>(['text', '', 0, -1.5, 1e12, true, false, null]);
function attributes(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const n = Math.floor(rand() * 8);
  for (let i = 0; i < n; i++)
    out[`k${i}.${pick(['a', 'b', 'gen_ai.prompt'])}`] = maybe(0.8) ? scalar() : Array.from({ length: Math.floor(rand() * 4) }, scalar);
  return out;
}

function validSpan(): Record<string, unknown> {
  const s: Record<string, unknown> = {
    rolloutId: 'ro-1',
    attemptId: 'at-1',
    name: pick(['agent0', 'round0_1', 'agl.reward', '']),
    startTime: pick([0, 1.5, Date.now()]),
  };
  if (maybe()) s.traceId = 'f'.repeat(32);
  if (maybe()) s.spanId = 'e'.repeat(16);
  if (maybe()) s.parentSpanId = pick([null, 'd'.repeat(16)]);
  if (maybe()) s.kind = pick(['internal', 'server', 'client', 'producer', 'consumer']);
  if (maybe()) s.endTime = pick([null, Date.now()]);
  if (maybe(0.8)) s.attributes = attributes();
  if (maybe(0.3)) s.resource = attributes();
  if (maybe(0.3)) s.status = pick<unknown>([{ code: 'ok' }, { code: 'error', message: 'boom' }, { code: 'unset' }]);
  if (maybe(0.2)) s.events = pick<unknown>([[], [{ name: 'e', time: 1 }], [{ name: 'e', time: 1, attributes: { a: 1 }, extra: 2 }]]);
  return s;
}

const BREAKS: Array<(s: Record<string, unknown>) => void> = [
  (s) => {
    s.extra = 1;
  },
  (s) => {
    delete s.rolloutId;
  },
  (s) => {
    s.attemptId = 7;
  },
  (s) => {
    s.name = null;
  },
  (s) => {
    s.startTime = 'yesterday';
  },
  (s) => {
    s.traceId = '';
  },
  (s) => {
    s.spanId = 5;
  },
  (s) => {
    s.parentSpanId = 3;
  },
  (s) => {
    s.kind = 'INTERNAL';
  },
  (s) => {
    s.endTime = '1';
  },
  (s) => {
    s.attributes = { a: { nested: true } };
  },
  (s) => {
    s.attributes = { a: [1, [2]] };
  },
  (s) => {
    s.attributes = [1, 2];
  },
  (s) => {
    s.attributes = null;
  },
  (s) => {
    s.resource = 'r';
  },
  (s) => {
    s.status = { code: 'fine' };
  },
  (s) => {
    s.status = { code: 'ok', message: 3 };
  },
  (s) => {
    s.status = { code: 'ok', extra: true };
  },
  (s) => {
    s.status = null;
  },
  (s) => {
    s.events = [{ name: 'e' }];
  },
  (s) => {
    s.events = {};
  },
];

test('accepts only what zod accepts, and returns what zod returns', () => {
  let fastAccepted = 0,
    zodAccepted = 0;
  for (let i = 0; i < 4000; i++) {
    const span = validSpan();
    if (i % 2 === 1) pick(BREAKS)(span);
    // Through JSON, as the daemon receives it.
    const value = JSON.parse(JSON.stringify(span));
    const fast = parseSpanInputFast(value);
    const zod = SpanInputRequest.safeParse(JSON.parse(JSON.stringify(span)));
    if (zod.success) zodAccepted++;
    if (fast === null) continue;
    fastAccepted++;
    assert.ok(zod.success, `fast path accepted what zod rejects: ${JSON.stringify(span)}`);
    assert.deepEqual(fast, zod.data, `same output for ${JSON.stringify(span)}`);
  }
  // It is a fast path only if it takes the common case.
  assert.ok(fastAccepted > zodAccepted * 0.75, `fast path took ${fastAccepted} of ${zodAccepted} valid spans`);
});

test('leaves odd keys and odd objects to zod', () => {
  const base = { rolloutId: 'r', attemptId: 'a', name: 'x', startTime: 1 };
  assert.equal(parseSpanInputFast(JSON.parse('{"rolloutId":"r","attemptId":"a","name":"x","startTime":1,"attributes":{"__proto__":{"x":1}}}')), null);
  assert.equal(parseSpanInputFast(Object.assign(Object.create({ inherited: 1 }), base)), null);
  assert.equal(parseSpanInputFast([base]), null);
  assert.deepEqual(
    parseSpanInputsFast([base, base])?.map((s) => s.kind),
    ['internal', 'internal'],
  );
  assert.equal(parseSpanInputsFast([base, { ...base, startTime: 'x' }]), null, 'one odd span sends the whole batch to zod');
  assert.equal(parseSpanInputsFast('spans'), null);
});
