/** Ids shortened for table cells stay told apart: store ids made together share their first digits. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { shortId } from '../../webview/shared/dom.js';
import { newId } from '../../daemon/store/common.js';

test('shortId keeps the kind and the distinguishing tail of store ids', () => {
  const ids = Array.from({ length: 200 }, () => newId('ro'));
  const shown = new Set(ids.map(shortId));
  assert.equal(shown.size, ids.length, 'ids made in the same millisecond still look different');
  assert.match(shortId(ids[0]!), /^ro-…[0-9a-f]{7}$/);
  assert.equal(shortId('ro-short'), 'ro-short');
  assert.equal(shortId('0123456789abcdef0123'), '…def0123');
});
