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
});
