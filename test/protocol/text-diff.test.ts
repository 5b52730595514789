/**
 * A prompt's change as a diff (protocol/text-diff.ts): lines kept, deleted and added in order (a deletion before the
 * addition replacing it), a replaced line's changed words marked on both sides, and the texts given back whole.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lcsDiff, lineDiff, wordDiff } from '../../protocol/text-diff.js';

test('lines: the longest common subsequence kept, the rest deleted then added; each side reads back whole', () => {
  const before = 'You answer questions.\nBe brief.\nAnswer with the value only.';
  const after = 'You answer questions.\nA delivery date is the shipped date.\nAnswer with the value only.\nWrite dates as YYYY-MM-DD.';
  const diff = lineDiff(before, after);
  assert.deepEqual(
    diff.map((l) => [l.op, l.text]),
    [
      ['same', 'You answer questions.'],
      ['del', 'Be brief.'],
      ['add', 'A delivery date is the shipped date.'],
      ['same', 'Answer with the value only.'],
      ['add', 'Write dates as YYYY-MM-DD.'],
    ],
  );
  const side = (ops: string[]) =>
    diff
      .filter((l) => ops.includes(l.op))
      .map((l) => l.text)
      .join('\n');
  assert.equal(side(['same', 'del']), before);
  assert.equal(side(['same', 'add']), after);
  assert.deepEqual(lineDiff('same', 'same'), [{ op: 'same', text: 'same' }]);
  assert.deepEqual(
    lcsDiff([], ['a']).map((d) => d.op),
    ['add'],
  );
});

test('a replaced line: its changed words marked on each side, the unchanged ones joined', () => {
  const diff = lineDiff('Write the answer plainly.', 'Write the answer plainly. Write dates as YYYY-MM-DD.');
  assert.deepEqual(diff[0], { op: 'del', text: 'Write the answer plainly.', parts: [{ text: 'Write the answer plainly.', changed: false }] });
  assert.deepEqual(diff[1]!.parts, [
    { text: 'Write the answer plainly.', changed: false },
    { text: ' Write dates as YYYY-MM-DD.', changed: true },
  ]);
  const words = wordDiff('Answer with the value.', 'Answer with the number.');
  assert.deepEqual(
    words.before.filter((p) => p.changed).map((p) => p.text),
    ['value.'],
  );
  assert.deepEqual(
    words.after.filter((p) => p.changed).map((p) => p.text),
    ['number.'],
  );
  assert.equal(words.after.map((p) => p.text).join(''), 'Answer with the number.');
  // Two lines replaced by three: not paired line by line, so no word marks.
  assert.ok(lineDiff('a\nb', 'x\ny\nz').every((l) => l.parts === undefined));
});
