/**
 * The calc task: disjoint splits, a calculator that refuses what it cannot do, exact-answer reward, demos
 * that solve their tasks; the shipped data and warm-up are what the code makes, and the warm-up starts
 * where the demo says it does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openPolicy } from '../../daemon/algorithm/open-policy.js';
import { calculate, type CalcTask, demonstrations, firstPrompt, makeSplits, parseToolCall, reward, warmupDemonstrations } from './task.js';
import { inspectCalc } from './inspect.js';
import { solveCalc } from './solve.js';

const jsonl = <T>(path: string): T[] =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as T);

test("splits are deterministic and share no question (the demonstrations' problems included)", () => {
  const a = makeSplits(1, { train: 300, val: 50, test: 50, demo: 300 }),
    b = makeSplits(1, { train: 300, val: 50, test: 50, demo: 300 });
  assert.deepEqual(a, b);
  const all = [...a.train, ...a.val, ...a.test, ...a.demo].map((x) => x.question);
  assert.equal(new Set(all).size, all.length);
  assert.ok(a.train.every((t) => Number.isInteger(t.answer)));
});

test('the shipped datasets and demonstrations are the ones make-data writes', () => {
  const s = makeSplits(1);
  for (const split of ['train', 'val', 'test'] as const) assert.deepEqual(jsonl(join('samples', 'calc', 'data', `${split}.jsonl`)), s[split], split);
  assert.deepEqual(jsonl(join('samples', 'calc', 'data', 'demos.jsonl')), warmupDemonstrations(s.demo, 1));
});

test('warm-up demonstrations: the calculator on about 30% of problems, the right answer straight away on the rest', () => {
  const tasks = makeSplits(1).demo;
  const demos = warmupDemonstrations(tasks, 1);
  const byPrompt = new Map(demos.map((d) => [d.prompt, d.completion]));
  let tool = 0;
  for (const t of tasks) {
    const first = byPrompt.get(firstPrompt(t))!;
    if (parseToolCall(first) !== null) {
      tool++;
      assert.deepEqual(
        demos.filter((d) => d.prompt.startsWith(firstPrompt(t))),
        demonstrations(t),
      );
    } else assert.equal(first, String(t.answer));
  }
  assert.ok(Math.abs(tool / tasks.length - 0.3) < 0.03, `tool share ${tool / tasks.length}`);
});

test('the shipped warm-up starts at most 35% on the held-out problems and rarely calls the calculator', async () => {
  const policy = await openPolicy(join('samples', 'calc', 'warmup'), { backend: 'wasm' });
  try {
    const r = await inspectCalc(policy, jsonl<CalcTask>(join('samples', 'calc', 'data', 'val.jsonl')));
    assert.ok(r.accuracy <= 0.35, `greedy held-out accuracy ${r.accuracy}`);
    assert.ok(r.toolRate < 0.5, `calls the calculator on ${r.toolRate} of the problems`);
    assert.ok(r.rightCallRate > 0.1 && r.copyRate > 0.8, `but knows how to use it when it does: ${JSON.stringify(r)}`);
  } finally {
    policy.dispose();
  }
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
