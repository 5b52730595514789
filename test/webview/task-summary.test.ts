/** The rollouts list's Input column: a task's question as text, cut at a word, the whole of it for the tooltip. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clipAtWord, taskSummary } from '../../webview/trajectory/task-summary.js';

test('a task shows its question (or prompt, or last user message), not its JSON', () => {
  assert.deepEqual(taskSummary({ id: 't1', answer: 38, question: 'Ann has 23 pens, gets 15 more. How many?' }), {
    text: 'Ann has 23 pens, gets 15 more. How many?',
    full: 'Ann has 23 pens, gets 15 more. How many?',
  });
  assert.equal(taskSummary({ Prompt: 'Write a haiku', temperature: 0.2 }).text, 'Write a haiku');
  assert.equal(
    taskSummary({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Capital of France?' },
      ],
    }).text,
    'Capital of France?',
  );
  assert.equal(taskSummary({ db: 'shop', nl: { text: 'How many orders in May?' } }).text, 'shop', 'else its first text');
  assert.equal(taskSummary('plain task').text, 'plain task');
  assert.deepEqual(taskSummary(42), { text: '42', full: '42' });
  assert.deepEqual(taskSummary(null), { text: '', full: '' });
  assert.equal(taskSummary({ a: [1, 2] }).text, '1');
});

test('a long task is cut at a word with an ellipsis; the tooltip keeps all of it', () => {
  const question = 'Sam splits 35 pens into 5 piles and then gives two piles to each of his three friends. How many pens does each friend get?';
  const { text, full } = taskSummary({ question }, 60);
  assert.equal(full, question);
  assert.ok(text.length <= 60, text);
  assert.ok(text.endsWith('…'));
  assert.ok(question.startsWith(text.slice(0, -1)), 'a prefix of the question');
  assert.match(question.slice(text.length - 1), /^ /, `cut before a space, not inside a word: ${text}`);
  assert.equal(clipAtWord('short', 60), 'short');
  assert.equal(clipAtWord('x'.repeat(100), 10), `${'x'.repeat(9)}…`, 'one long word is cut where it must');
  assert.equal(clipAtWord('line one\n\n   line two', 60), 'line one line two');
});
