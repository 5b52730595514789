/**
 * Reading a judge's answer (daemon/judge/answer.ts): the JSON asked for, found in a fenced block or in the words around
 * it, under the names models give it; a score per trajectory shown, each in [0, 1], or the reason it is unusable
 * (partial: a trajectory missing; malformed: anything else), never a default.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readScores } from '../../daemon/judge/answer.js';

const scores = (answer: string, shown: number) => {
  const got = readScores(answer, shown);
  return 'value' in got ? got.value.map((s) => [s.trajectory, s.score, s.explanation]) : got;
};

describe('reading a judge answer', () => {
  it('reads the JSON in a fenced block after words, whatever order the entries come in', () => {
    const answer =
      'Here is my verdict.\n```json\n{"scores": [{"trajectory": 2, "explanation": "wrong total", "score": 0}, {"trajectory": 1, "explanation": "right", "score": 1}]}\n```\nDone.';
    assert.deepEqual(scores(answer, 2), [
      [1, 1, 'right'],
      [2, 0, 'wrong total'],
    ]);
  });

  it('reads bare JSON inside prose, other list and field names, ids as text and scores as numeric strings', () => {
    const answer =
      'My ratings: {"results": [{"id": "Trajectory 1", "reason": "ok", "score": "0.5"}, {"index": 2, "rationale": "better", "score": 0.75}]} as asked.';
    assert.deepEqual(scores(answer, 2), [
      [1, 0.5, 'ok'],
      [2, 0.75, 'better'],
    ]);
  });

  it('reads a bare list, and for one trajectory a bare {score, explanation}', () => {
    assert.deepEqual(scores('[{"trajectory": 1, "score": 0.2}]', 1), [[1, 0.2, null]]);
    assert.deepEqual(scores('```\n{"explanation": "clear and correct", "score": 0.9}\n```', 1), [[1, 0.9, 'clear and correct']]);
  });

  it('skips a fenced block that is not the answer (code the judge quoted) for the JSON after it', () => {
    const answer = 'The agent ran:\n```python\nprint(1 + 1)\n```\nScores:\n```json\n{"scores": [{"trajectory": 1, "score": 1}]}\n```';
    assert.deepEqual(scores(answer, 1), [[1, 1, null]]);
  });

  it('a missing trajectory is partial, and says which', () => {
    const got = readScores('{"scores": [{"trajectory": 1, "score": 1}, {"trajectory": 3, "score": 0}]}', 3);
    assert.deepEqual(got, { unusable: 'trajectory 2 missing from the answer (it scored 1, 3)', kind: 'partial' });
  });

  it('malformed answers say what is wrong: no JSON, cut-off JSON, a score out of [0, 1], a trajectory twice, one never shown, no score', () => {
    const cases: [string, number, RegExp][] = [
      ['I think the first one is best.', 2, /no JSON with a score per trajectory/],
      ['{"scores": [{"trajectory": 1, "score": 0.9,, }', 1, /no JSON/],
      ['{"scores": [{"trajectory": 1, "score": 7}]}', 1, /trajectory 1's score 7 is outside \[0, 1\]/],
      ['{"scores": [{"trajectory": 1, "score": 1}, {"trajectory": 1, "score": 0}]}', 2, /trajectory 1 is scored twice/],
      ['{"scores": [{"trajectory": 4, "score": 1}]}', 2, /trajectory 4 was not shown \(there are 2\)/],
      ['{"scores": [{"trajectory": 1, "explanation": "fine"}]}', 1, /trajectory 1 has no numeric score/],
      ['{"scores": [{"explanation": "fine", "score": 1}, {"trajectory": 2, "score": 1}]}', 2, /entry 1 names no trajectory/],
    ];
    for (const [answer, shown, reason] of cases) {
      const got = readScores(answer, shown);
      assert.ok('unusable' in got, answer);
      assert.equal(got.kind, 'malformed', answer);
      assert.match(got.unusable, reason, answer);
    }
  });

  const unusable = (answer: string, shown: number): string => {
    const got = readScores(answer, shown);
    assert.ok('unusable' in got, `read ${JSON.stringify(got)} from ${answer}`);
    assert.equal(got.kind, 'malformed', answer);
    return got.unusable;
  };
  const two = (a: number, b: number) => `{"scores": [{"trajectory": 1, "score": ${a}}, {"trajectory": 2, "score": ${b}}]}`;

  it('drops reasoning before reading: <think>, <thinking>, <reasoning>, one whose opening tag was not sent, one never closed', () => {
    const draft = two(1, 0);
    const final = two(0, 1);
    for (const answer of [
      `<think>A first guess: ${draft}. No, 2 is right.</think>\n${final}`,
      `<thinking>\n${draft}\n</thinking>${final}`,
      `<REASONING>${draft}</REASONING>\n\n${final}`,
      `Let me think: ${draft} ... on reflection no.</think>\n${final}`,
    ])
      assert.deepEqual(scores(answer, 2), [
        [1, 0, null],
        [2, 1, null],
      ]);
    assert.match(unusable(`<think>Trajectory 1 looks right: ${draft} but let me check the totals`, 2), /no JSON with a score per trajectory/);
  });

  it('of several JSON values the last one that scores every trajectory is the answer: not a draft, a quoted tool result, a fragment', () => {
    const corrected = `Draft:\n\`\`\`json\n${two(0.9, 0.1)}\n\`\`\`\nI misread the second total. Corrected:\n\`\`\`json\n${two(0.2, 0.8)}\n\`\`\``;
    assert.deepEqual(scores(corrected, 2), [
      [1, 0.2, null],
      [2, 0.8, null],
    ]);
    const quoted = 'The test tool returned {"score": 1, "status": "ok"}, yet the answer is wrong.\n{"scores": [{"trajectory": 1, "score": 0}]}';
    assert.deepEqual(scores(quoted, 1), [[1, 0, null]]);
    assert.match(unusable('The tool returned {"score": 1, "status": "ok"} and the agent stopped.', 1), /no JSON with a score per trajectory/);
    const laterPartial = `${two(0.3, 0.6)}\nIn short, the best: {"scores": [{"trajectory": 2, "score": 0.6}]}`;
    assert.deepEqual(scores(laterPartial, 2), [
      [1, 0.3, null],
      [2, 0.6, null],
    ]);
  });

  it('trajectory ids are integers and scores plain numbers: nothing is coerced', () => {
    assert.deepEqual(scores('{"scores": [{"trajectory": "2", "score": " 0.5 "}, {"trajectory": "<trajectory 1>", "score": 1.0}]}', 2), [
      [1, 1, null],
      [2, 0.5, null],
    ]);
    const cases: [string, RegExp][] = [
      ['{"scores": [{"trajectory": "1.2", "score": 1}]}', /entry 1 names no trajectory/],
      ['{"scores": [{"trajectory": "2b", "score": 1}]}', /entry 1 names no trajectory/],
      ['{"scores": [{"trajectory": 1.5, "score": 1}]}', /entry 1 names no trajectory/],
      ['{"scores": [{"trajectory": 1, "score": "0x1"}]}', /trajectory 1 has no numeric score \("0x1" is not a plain decimal number\)/],
      ['{"scores": [{"trajectory": 1, "score": "high"}]}', /"high" is not a plain decimal/],
      ['{"scores": [{"trajectory": 1, "score": "1e-1"}]}', /"1e-1" is not a plain decimal/],
      ['{"scores": [{"trajectory": 1, "score": true}]}', /trajectory 1 has no numeric score/],
    ];
    for (const [answer, reason] of cases) assert.match(unusable(answer, 2), reason, answer);
  });

  it('an answer on another scale is read by the scale it states, or refused saying so, never taken at face value', () => {
    assert.deepEqual(scores('{"scale": "1-5", "scores": [{"trajectory": 1, "score": 1}, {"trajectory": 2, "score": 1}]}', 2), [
      [1, 0, null],
      [2, 0, null],
    ]);
    assert.deepEqual(scores(`{"scale": "1 to 10", ${two(1, 10).slice(1)}`, 2), [
      [1, 0, null],
      [2, 1, null],
    ]);
    assert.deepEqual(scores(`{"out_of": 10, ${two(7, 10).slice(1)}`, 2), [
      [1, 0.7, null],
      [2, 1, null],
    ]);
    assert.deepEqual(scores(`{"scale": "percent", ${two(80, 25).slice(1)}`, 2), [
      [1, 0.8, null],
      [2, 0.25, null],
    ]);
    assert.deepEqual(
      scores(
        '{"scores": [{"trajectory": 1, "score": "4/5"}, {"trajectory": 2, "score": "80%"}, {"trajectory": 3, "score": "3 out of 10", "scale": "0-10"}]}',
        3,
      ),
      [
        [1, 0.8, null],
        [2, 0.8, null],
        [3, 0.3, null],
      ],
    );
    assert.match(unusable(two(1, 4), 2), /trajectory 2's score 4 is outside \[0, 1\] \(another scale\? .*"scale": "1-5"/);
    assert.match(unusable(`{"scale": "1-5", ${two(0, 3).slice(1)}`, 2), /trajectory 1's score 0 is outside the scale it states \(1-5\)/);
    assert.match(unusable(`{"scale": "stars", ${two(1, 3).slice(1)}`, 2), /"scale" "stars" is not a scale this reads/);
    assert.match(unusable(`On a scale of 1 to 5 both are weak:\n${two(1, 1)}`, 2), /speaks of a 1-5 scale but its JSON states none/);
    assert.deepEqual(scores(`On a scale of 1 to 5 both are weak:\n{"scale": "1-5", ${two(1, 2).slice(1)}`, 2), [
      [1, 0, null],
      [2, 0.25, null],
    ]);
  });
});
