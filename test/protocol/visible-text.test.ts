/**
 * Unprintable characters made visible (protocol/visible-text.ts): a failed eval item's answer of broken bytes
 * (`{"answer":"\ufffdZ\u0010..."}`) reads as its escapes in the Test Explorer, not as blank space; text stays as it is.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { visibleText } from '../../protocol/visible-text.js';

test('control characters, replacement characters and lone surrogates become \\uXXXX; newlines, tabs and other text stay', () => {
  assert.equal(visibleText('{"answer":"\ufffdZ\u0010\u0000"}'), '{"answer":"\\ufffdZ\\u0010\\u0000"}');
  assert.equal(visibleText('bad \ud800 half'), 'bad \\ud800 half');
  assert.equal(visibleText('line one\n\tline two · 57 ✓ 😀'), 'line one\n\tline two · 57 ✓ 😀');
  assert.equal(visibleText('del\u007f c1\u0085'), 'del\\u007f c1\\u0085');
});
