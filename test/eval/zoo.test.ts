/**
 * `agl eval`'s judge grader (an `agl` process, its own runner workers, a SQLite store) on the model zoo's untidy judges
 * (test/helpers/model-zoo.ts): one that thinks aloud in <think> before its answer, answers slowly, is rate limited
 * with a Retry-After and cuts its first answers at max_tokens still grades every row as the rubric says (each call
 * tried again until it reads); one that refuses every try grades none: each row is an error with the judge's reason
 * (a JUnit <error>, not a failure), and no judge reward is written on its rollout.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { AGL } from '../../protocol/spans.js';
import { runAgl } from '../algorithm/cli-helpers.js';
import { type ModelZoo, startModelZoo } from '../helpers/model-zoo.js';

const AGENT = 'test/eval/quiz-agent.ts#quizAgent';
let dir: string;
let zoo: ModelZoo;
let data: string;
let rubric: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agl-eval-zoo-'));
  zoo = await startModelZoo({ retryAfterSeconds: 1, slowMs: 10 });
  rubric = join(dir, 'rubric.md');
  writeFileSync(rubric, 'The listed answer scores 1.\n- q1 => 8\n- q2 => 11\n');
  data = join(dir, 'judged.eval.jsonl');
  writeFileSync(
    data,
    ['{"id":"q1","input":{"q":"q1","answer":7},"expected":8,"grader":"judge"}', '{"id":"q2","input":{"q":"q2","answer":11},"grader":"judge"}'].join('\n'),
  );
});
after(async () => {
  await zoo.close();
  rmSync(dir, { recursive: true, force: true });
});

/** `agl eval` of the quiz rows graded by the zoo's `model`, its JSON summary's tasks, and the JUnit file it wrote. */
async function evalWith(model: string) {
  const junit = join(dir, `${model}.xml`);
  const judgeFlags = ['--judge-url', zoo.url, '--judge-model', model, '--judge-rubric', rubric, '--judge-backoff-seconds', '0.01', '--judge-max-tokens', '40'];
  const r = await runAgl(
    ['eval', AGENT, '--data', data, '--store', join(dir, 'store.sqlite'), '--workers', '2', '--quiet', '--json', '--junit', junit, ...judgeFlags],
    dir,
  );
  const line = /^\{"runId".*$/m.exec(r.out)?.[0];
  assert.ok(line, r.out);
  const summary = JSON.parse(line) as { runId: string; tasks: { id: string; passed: boolean; errored: boolean; reason: string }[] };
  return { code: r.code, out: r.out, summary, junit: readFileSync(junit, 'utf8') };
}

test(
  'a judge that thinks aloud, answers slowly, is rate limited and cuts its first answers still grades every row as the rubric says',
  { timeout: 120_000 },
  async () => {
    const model = 'judge+think+slow+ratelimit1+cut2';
    const { summary, out } = await evalWith(model);
    assert.deepEqual(
      summary.tasks.map((t) => [t.id, t.passed, t.errored, t.reason]),
      [
        ['q1', false, false, 'the answer 7 is not 8'],
        ['q2', true, false, 'the answer 11 is the expected 11'],
      ],
      out,
    );
    const calls = zoo.requests.filter((q) => q.model === model);
    assert.equal(calls.length, 4, 'one 429, one cut answer, then each row read');
    assert.ok(calls.every((q) => q.maxTokens === 40));
  },
);

test('a judge that refuses every try grades no row: each an error with the reason, no judge reward on its rollout', { timeout: 120_000 }, async () => {
  const { summary, junit, out } = await evalWith('judge+refuse');
  for (const t of summary.tasks) {
    assert.deepEqual([t.passed, t.errored], [false, true], out);
    assert.match(t.reason, /^the judge gave no score: unusable answer: no JSON with a score per trajectory in the answer \(after 4 tries\)$/);
  }
  assert.match(junit, /failures="0" errors="2"/);
  const store = new SqliteStore(join(dir, 'store.sqlite'));
  try {
    const rollouts = (await store.queryRollouts({ runId: summary.runId, limit: 10 })).items;
    const spans = (await Promise.all(rollouts.map((x) => store.querySpans({ rolloutId: x.id })))).flat();
    assert.equal(spans.filter((s) => s.attributes[AGL.rewardSource] === 'judge').length, 0);
  } finally {
    await store.close();
  }
});
