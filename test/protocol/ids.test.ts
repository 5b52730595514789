/**
 * protocol/ids.ts needs neither node nor the DOM (its SHA-256 is its own): it hashes exactly as node's crypto does,
 * so the trace and root span ids of an attempt are the ones the Python runner (hashlib) and every earlier store
 * derived, and its random ids are well-formed and distinct.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { newSpanId, newTraceId, parseTraceparent, formatTraceparent, rootSpanIdForAttempt, sha256, traceIdForAttempt } from '../../protocol/ids.js';

test("SHA-256 equals node's on block boundaries, long and non-ASCII inputs", () => {
  for (const text of ['', 'abc', 'x'.repeat(55), 'x'.repeat(56), 'x'.repeat(63), 'x'.repeat(64), 'y'.repeat(10_000), 'ünïcödé 🙂 東京']) {
    assert.equal(Buffer.from(sha256(new TextEncoder().encode(text))).toString('hex'), createHash('sha256').update(text).digest('hex'), `length ${text.length}`);
  }
});

test('an attempt has one trace id and one root span id, derived as before', () => {
  const hex = (s: string, n: number) => createHash('sha256').update(s).digest('hex').slice(0, n);
  assert.equal(traceIdForAttempt('at-01abc'), hex('agl-trace:at-01abc', 32));
  assert.equal(rootSpanIdForAttempt('at-01abc'), hex('agl-root:at-01abc', 16));
  assert.deepEqual(parseTraceparent(formatTraceparent(traceIdForAttempt('a'), rootSpanIdForAttempt('a'))), {
    traceId: traceIdForAttempt('a'),
    spanId: rootSpanIdForAttempt('a'),
  });
});

test('random ids: hex of the right length, distinct across pool refills', () => {
  const spans = new Set(Array.from({ length: 2000 }, () => newSpanId()));
  assert.equal(spans.size, 2000);
  for (const id of spans) assert.match(id, /^[0-9a-f]{16}$/);
  assert.match(newTraceId(), /^[0-9a-f]{32}$/);
});
