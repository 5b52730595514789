/**
 * The graders without code, each kind passing and failing with the reason it gives, and the dataset reader: rows
 * given their grader (the row's, --grader's, exact with `expected`, the agent's reward without), and a file with bad
 * rows refused whole, each bad row named by its line and the field at fault.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { readDataset } from '../../daemon/eval/dataset.js';
import { prepareGrader } from '../../daemon/eval/graders.js';

const dir = mkdtempSync(join(tmpdir(), 'agl-eval-graders-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, lines: string[]) => {
  writeFileSync(join(dir, name), lines.join('\n'));
  return join(dir, name);
};
const grade = (name: Parameters<typeof prepareGrader>[0], expected: unknown, answer: unknown, tolerance?: number) =>
  prepareGrader(name, expected, tolerance).grade!(answer);

test('exact: strings trimmed, other values as canonical JSON; the reason quotes both', () => {
  assert.equal(grade('exact', 'Paris', ' Paris\n').score, 1);
  assert.equal(grade('exact', { b: 2, a: [1] }, { a: [1], b: 2 }).score, 1);
  assert.equal(grade('exact', 42, '42').score, 1);
  const v = grade('exact', 'Paris', 'Lyon');
  assert.equal(v.score, 0);
  assert.equal(v.reason, 'answered "Lyon", expected "Paris"');
});

test('contains: every expected string in the answer text; says which are missing', () => {
  assert.equal(grade('contains', 'Kape Guild', { answer: 'The Kape Guild' }).score, 1);
  assert.equal(grade('contains', ['a', 'b'], 'b and a').score, 1);
  const v = grade('contains', ['Mope', 'river'], 'the river Tane');
  assert.equal(v.score, 0);
  assert.match(v.reason, /lacks "Mope"$/);
});

test('regex: matches the answer text; says where, or that it does not', () => {
  const ok = grade('regex', '^SELECT\\s', 'SELECT name FROM emp');
  assert.equal(ok.score, 1);
  assert.match(ok.reason, /matches \/\^SELECT\\s\/ at "SELECT "/);
  assert.match(grade('regex', '\\d{3}', 'no digits').reason, /does not match/);
});

test('number: the answer itself, a numeric string, or the last number in its text; within the tolerance', () => {
  assert.equal(grade('number', 57, 57).score, 1);
  assert.equal(grade('number', 57, { answer: '57' }).score, 1);
  assert.equal(grade('number', '0.5', 'so x = 0.5001', 0.001).score, 1);
  const off = grade('number', 564, 'it is 560');
  assert.equal(off.score, 0);
  assert.equal(off.reason, 'answered 560, expected 564 (off by 4, tolerance 0.000001)');
  assert.match(grade('number', 3, 'three').reason, /holds no number \(.*\); expected 3/);
});

test('number: commas between thousands are separators ("1,234" is 1234), a comma before other digits separates numbers', () => {
  assert.equal(grade('number', 1234, 'The total is 1,234.').score, 1);
  assert.equal(grade('number', 1234567.5, '$1,234,567.50 in all').score, 1);
  assert.equal(grade('number', 1234, '1,234').score, 1);
  assert.equal(grade('number', -1234, { answer: '-1,234' }).score, 1);
  assert.equal(grade('number', '2,500', 'about 2500').score, 1, 'the expected value is read the same way');
  assert.match(grade('number', 1.5, 'it is 1,5').reason, /answered 5, expected 1\.5/);
  assert.match(grade('number', 3, 'three').reason, /holds no number \(digits, with commas only between thousands: 1,234\.5\); expected 3/);
});

test('json-schema: the answer (or a string of JSON) validated by ajv; the reason names what is wrong', () => {
  const schema = { type: 'object', required: ['sql'], properties: { sql: { type: 'string', pattern: '^SELECT' } } };
  assert.equal(grade('json-schema', schema, { sql: 'SELECT 1' }).score, 1);
  assert.equal(grade('json-schema', schema, '{"sql":"SELECT 1"}').score, 1);
  const bad = grade('json-schema', schema, { sql: 'DROP TABLE emp' });
  assert.equal(bad.score, 0);
  assert.match(bad.reason, /\/sql must match pattern "\^SELECT"/);
  assert.match(grade('json-schema', schema, { query: 1 }).reason, /must have required property 'sql'/);
  assert.match(grade('json-schema', schema, 'not json').reason, /is not JSON/);
});

test('a dataset gives each row its grader: its own, --grader, exact with expected, the reward without', () => {
  const f = file('ok.eval.jsonl', [
    '{"id":"a","input":{"q":1},"expected":2}',
    '',
    '{"input":{"q":2}}',
    '{"id":7,"input":"text","expected":"x","grader":"contains"}',
  ]);
  const { tasks } = readDataset(f, { grader: null });
  assert.deepEqual(
    tasks.map((t) => [t.id, t.line, t.grader.name]),
    [
      ['a', 1, 'exact'],
      ['line-3', 3, 'reward'],
      ['7', 4, 'contains'],
    ],
  );
  const regexFile = file('re.eval.jsonl', ['{"input":1,"expected":"^a"}']);
  assert.equal(readDataset(regexFile, { grader: 'regex' }).tasks[0]!.grader.name, 'regex');
});

test('a dataset with bad rows is refused, every bad row named by its line and field', () => {
  const f = file('bad.eval.jsonl', [
    '{"id":"a","input":{"q":1},"expected":2}',
    '{"id":"b","expected":2}',
    '{"id":"c","input":1,"expected":"(","grader":"regex"}',
    '{"id":"d","input":1,"expected":"x","grader":"fuzzy"}',
    '{"id":"a","input":2}',
    '{"id":"e","input":1,"expect":3}',
    'not json',
    '{"id":"f","input":1,"expected":"many","grader":"number"}',
    '{"id":"g","input":1,"expected":{"type":"nope"},"grader":"json-schema"}',
    '{"id":"h","input":1,"expected":1,"grader":"number","tolerance":-1}',
  ]);
  let message = '';
  assert.throws(
    () => readDataset(f, { grader: null }),
    (e: Error) => {
      message = e.message;
      return true;
    },
  );
  assert.match(message, /9 bad rows \(fix them; nothing was run\)/);
  const said = (line: number, field: string, what: RegExp) =>
    assert.match(message, new RegExp(`bad\\.eval\\.jsonl:${line}: field '${field}'.*${what.source}`), `line ${line}`);
  said(2, 'input', /every row needs the task the agent gets/);
  said(3, 'expected', /not a regular expression/);
  said(4, 'grader', /exact|expected one of/i);
  said(5, 'id', /'a' is the id of line 1 too/);
  said(6, 'expect', /is not a row's field/);
  assert.match(message, /bad\.eval\.jsonl:7: not valid JSON/);
  said(8, 'expected', /the number grader needs a number, got "many"/);
  said(9, 'expected', /not a valid JSON Schema/);
  said(10, 'tolerance', /0|>=/);
  assert.doesNotMatch(message, /jsonl:1:/);
  assert.throws(() => readDataset(file('empty.eval.jsonl', ['', '']), { grader: null }), /no rows/);
  assert.throws(() => readDataset(join(dir, 'missing.jsonl'), { grader: null }), /--data .*missing\.jsonl: cannot read it/);
});
