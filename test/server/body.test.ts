/**
 * The body reader every JSON route shares (daemon/server/body.ts): its UTF-8 check agrees with node's
 * validator on any bytes and names the first bad byte; only application/json (UTF-8) is a JSON body.
 */
import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { decodeUtf8, firstInvalidUtf8, parseJsonBytes, requireJsonType } from '../../daemon/server/body.js';
import { HttpProblem } from '../../daemon/server/errors.js';

describe('JSON body reader', () => {
  it('finds a bad byte exactly when node says the bytes are not UTF-8, and everything before it is UTF-8', () => {
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 64 }),
      fc.string({ unit: 'binary', maxLength: 32 }).map((s) => new Uint8Array(Buffer.from(s))),
      fc
        .tuple(fc.string({ unit: 'binary', maxLength: 16 }), fc.uint8Array({ minLength: 1, maxLength: 4 }))
        .map(([s, b]) => new Uint8Array(Buffer.concat([Buffer.from(s), b]))),
    );
    fc.assert(
      fc.property(bytes, (b) => {
        const at = firstInvalidUtf8(b);
        assert.equal(at === -1, isUtf8(b));
        if (at >= 0) assert.ok(isUtf8(b.subarray(0, at)), 'the prefix before the bad byte is UTF-8');
      }),
      { seed: 11, numRuns: 500 },
    );
  });

  it('refuses what is not UTF-8 with the offset, keeps every character of what is', () => {
    assert.equal(decodeUtf8(Buffer.from('caf\u00e9 \u{1f600}')), 'caf\u00e9 \u{1f600}');
    assert.throws(
      () => decodeUtf8(Buffer.from([0x61, 0xed, 0xa0, 0x80])),
      (e: unknown) => e instanceof HttpProblem && e.status === 400 && /offset 1/.test(e.detail),
    );
    assert.deepEqual(parseJsonBytes(Buffer.from('\ufeff{"a":1}')), { a: 1 }, 'a byte-order mark is dropped');
    assert.deepEqual(parseJsonBytes(Buffer.alloc(0)), {});
    // JSON that is not an object or array is named as what it is (not called malformed); text that is not JSON is malformed.
    for (const [text, got] of [
      ['"text"', 'string'],
      ['7', 'number'],
      ['null', 'null'],
      ['true', 'boolean'],
    ])
      assert.throws(
        () => parseJsonBytes(Buffer.from(text)),
        (e: unknown) =>
          e instanceof HttpProblem && e.status === 400 && e.errors?.[0]?.path === '(body)' && e.errors[0].message === `expected object, received ${got}`,
        text,
      );
    assert.throws(
      () => parseJsonBytes(Buffer.from('nope')),
      (e: Error & { type?: string }) => e.type === 'entity.parse.failed' && /Unexpected token/.test(e.message),
    );
  });

  it('takes application/json with a UTF-8 charset or none; 415 naming the header otherwise', () => {
    for (const ok of ['application/json', 'Application/JSON; charset=UTF-8', 'application/json;charset="utf8"', 'application/json; foo=bar'])
      requireJsonType(ok);
    for (const bad of [undefined, '', 'text/plain', 'application/json; charset=latin1', 'application/jsonx', 'application/x-www-form-urlencoded']) {
      assert.throws(
        () => requireJsonType(bad),
        (e: unknown) => e instanceof HttpProblem && e.status === 415 && e.errors?.[0]?.path === 'headers.content-type',
        String(bad),
      );
    }
  });
});
