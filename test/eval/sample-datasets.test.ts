/**
 * The samples' eval datasets (samples/{calc,sql,rag}/data/*.eval.jsonl) read as `agl eval` reads them: every row
 * valid, with the graders that fit each sample (calc: number; sql: the agent's own reward and json-schema; rag:
 * contains), and the graders accept the answers each agent records for a right answer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readDataset } from '../../daemon/eval/dataset.js';

const read = (sample: string) => readDataset(`samples/${sample}/data/${sample}.eval.jsonl`, { grader: null }).tasks;

test('calc: number, graded against the answer the agent emits ({ answer: "57" })', () => {
  const tasks = read('calc');
  assert.equal(tasks.length, 16);
  assert.deepEqual([...new Set(tasks.map((t) => t.grader.name))], ['number']);
  const t = tasks[0]!;
  assert.equal(t.grader.grade!({ answer: String(t.expected) }).score, 1);
  assert.equal(t.grader.grade!({ answer: String(Number(t.expected) + 1) }).score, 0);
});

test("sql: the agent's own reward, and the answer's shape ({ sql: a SELECT, result }) by json-schema", () => {
  const tasks = read('sql');
  assert.deepEqual(
    tasks.map((t) => t.grader.name),
    [...Array(12).fill('reward'), ...Array(4).fill('json-schema')],
  );
  const shape = tasks.at(-1)!.grader.grade!;
  assert.equal(shape({ sql: 'SELECT name FROM emp', result: 'Walt' }).score, 1);
  assert.equal(shape({ sql: 'DROP TABLE emp', result: '' }).score, 0);
});

test('rag: contains, the expected entity in the answer the agent emits', () => {
  const tasks = read('rag');
  assert.equal(tasks.length, 16);
  const t = tasks[0]!;
  assert.equal(t.grader.name, 'contains');
  assert.equal(t.grader.grade!({ answer: `It is the ${String(t.expected)}.` }).score, 1);
  assert.equal(t.grader.grade!({ answer: 'I do not know' }).score, 0);
});
