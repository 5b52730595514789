/** The calc task: disjoint splits, a calculator that refuses what it cannot do, exact-answer reward, demos that solve their tasks. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { calculate, demonstrations, makeSplits, parseToolCall, reward } from './task.js';
import { solveCalc } from './solve.js';

test('splits are deterministic and share no question', () => {
  const a = makeSplits(1, { train: 300, val: 50, test: 50 }), b = makeSplits(1, { train: 300, val: 50, test: 50 });
  assert.deepEqual(a, b);
  const q = (xs: { question: string }[]) => new Set(xs.map((x) => x.question));
  const train = q(a.train);
  assert.ok([...q(a.val), ...q(a.test)].every((x) => !train.has(x)));
  assert.ok(a.train.every((t) => Number.isInteger(t.answer)));
});

test('calculator: integer a op b only', () => {
  assert.equal(calculate('12*7'), 84);
  assert.equal(calculate(' 91 / 7 '), 13);
  assert.equal(calculate('10/3'), null);
  assert.equal(calculate('1/0'), null);
  assert.equal(calculate('2+3*4'), null);
  assert.equal(calculate('rm -rf'), null);
});

test('reward is exact: the whole first line must be the integer', () => {
  assert.equal(reward({ answer: 38 }, '38'), 1);
  assert.equal(reward({ answer: 38 }, ' 38\nmore'), 1);
  assert.equal(reward({ answer: 38 }, '380'), 0);
  assert.equal(reward({ answer: 38 }, '38 pens'), 0);
  assert.equal(parseToolCall('calc 3+4'), '3+4');
  assert.equal(parseToolCall('7'), null);
});

test('an agent that follows the demonstrations scores 1 on every task', async () => {
  for (const task of makeSplits(2, { train: 100, val: 1, test: 1 }).train) {
    const demos = demonstrations(task);
    const byPrompt = new Map(demos.map((d) => [d.prompt, d.completion]));
    const outcome = await solveCalc(task, async (prompt) => byPrompt.get(prompt) ?? 'wrong');
    assert.equal(outcome.reward, 1, task.question);
  }
});
