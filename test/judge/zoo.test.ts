/**
 * The judge against the model zoo's untidy judges (test/helpers/model-zoo.ts), through the real `openai` client and a
 * real SQLite store: the training step's judge (daemon/algorithm/step-judge.ts), one ended rollout judged as
 * optimization judges it (daemon/judge/judge-rollout.ts) and the judge's calls (daemon/judge/judge.ts). A refusal and
 * an answer cut at max_tokens are unusable with their reason and tried again, and a group they keep spoiling is left
 * out, its rewards untouched, never 0; a 429 waits the Retry-After the server asked for; a slow answer is still read;
 * a draft, in <think> before the answer or followed by a correction, is never read as the answer; temperature noise is
 * a fresh draw per call and shows in the retest pairs, as position bias does; a score on a scale the answer states is
 * read on that scale.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { judgeMetrics, StepJudge } from '../../daemon/algorithm/step-judge.js';
import { Judge } from '../../daemon/judge/judge.js';
import { judgeEndedRollout } from '../../daemon/judge/judge-rollout.js';
import { ModelRefused } from '../../daemon/llm-calls/chat-caller.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { judgeVerdict } from '../../protocol/judge-reading.js';
import { JudgeSection, type JudgeSettingsInput } from '../../protocol/judge-settings.js';
import { finalReward } from '../../protocol/span-reading.js';
import { AGL } from '../../protocol/spans.js';
import { type ModelZoo, startModelZoo } from '../helpers/model-zoo.js';
import { storedRollout as stored, type Sample } from './stored-rollouts.js';

const RUBRIC = 'Right total: 1, else 0.\n- Ann has 23 pens => 38';
const TASK = { id: 'ann', input: { question: 'Ann has 23 pens, gets 15 more. How many?', answer: 38 } };
let store: SqliteStore;
let zoo: ModelZoo;

before(async () => {
  store = new SqliteStore(join(mkdtempSync(join(tmpdir(), 'agl-judge-zoo-')), 'store.sqlite'));
  zoo = await startModelZoo({ seed: 3, retryAfterSeconds: 1, slowMs: 20 });
});
after(async () => {
  await zoo.close();
  await store.close();
});

const storedRollout = (s: Sample) => stored(store, TASK, s);
const spansOf = (id: string) => store.querySpans({ rolloutId: id, attemptId: 'latest' });
/** A right answer and a wrong one, with the agent's own rewards 0.3 and 0.7 (the judge's would be 1 and 0). */
const rightAndWrong = async () => [await storedRollout({ answer: '38', reward: 0.3 }), await storedRollout({ answer: '40', reward: 0.7 })];

/** A right and a wrong answer as the judge is given them: each rollout's latest attempt's spans. */
const rightAndWrongToJudge = async () =>
  Promise.all(
    (await rightAndWrong()).map(async (g) => ({
      rolloutId: g.rollout.id,
      attemptId: (await spansOf(g.rollout.id))[0]!.attemptId,
      spans: await spansOf(g.rollout.id),
    })),
  );

function zooJudge(model: string, settings: Partial<JudgeSettingsInput> = {}) {
  const logs: string[] = [];
  const judge = new Judge({
    settings: JudgeSection.parse({ url: zoo.url, model, rubric: RUBRIC, retries: 1, backoffSeconds: 0.01, ...settings }),
    rubric: RUBRIC,
    apiKey: '',
    seed: 7,
    log: (l) => logs.push(l),
  });
  return { judge, logs, step: new StepJudge(judge, store, { runId: 'run-zoo', step: 1, log: (m) => logs.push(m) }) };
}
const callsTo = (model: string) => zoo.requests.filter((r) => r.model === model);

describe('the training step on the zoo', () => {
  it('a refusal is unusable and tried again; when every try refuses, the group is left out with the reason, its rewards untouched, never 0', async () => {
    const once = zooJudge('judge+refuse1');
    const scored = await rightAndWrong();
    const round = await once.step.judgeRound(scored);
    assert.equal(round.leftOut.length, 0);
    for (const [k, g] of scored.entries()) {
      const v = judgeVerdict(await spansOf(g.rollout.id))!;
      assert.deepEqual([v.score, v.attempts], [[1, 0][k], 2], 'the second try answered');
    }
    assert.match(once.logs.join('\n'), /unusable answer: no JSON with a score per trajectory in the answer; trying again/);

    const always = zooJudge('judge+refuse');
    const spoiled = await rightAndWrong();
    const left = await always.step.judgeRound(spoiled);
    assert.deepEqual(left.leftOut, spoiled);
    for (const [k, g] of spoiled.entries()) {
      const spans = await spansOf(g.rollout.id);
      assert.equal(finalReward(spans), [0.3, 0.7][k], "the agent's reward stands");
      assert.match(judgeVerdict(spans)!.error!, /no JSON with a score per trajectory.*after 2 tries/);
      assert.equal(spans.filter((s) => s.attributes[AGL.rewardSource] === 'judge').length, 0);
    }
    assert.equal(judgeMetrics(always.step.totals)['judge/failed_malformed'], 1);
    assert.equal(callsTo('judge+refuse').length, 2);
  });

  it('scores on a 1-5, a 1-10 or a percent scale the answer states are read on that scale: the right answer 1, the wrong 0', async () => {
    for (const model of ['judge+scale5', 'judge+scale10', 'judge+percent']) {
      const { step } = zooJudge(model);
      const groups = await rightAndWrong();
      const round = await step.judgeRound(groups);
      assert.equal(round.leftOut.length, 0, `${model}: ${step.lastReason}`);
      for (const [k, g] of groups.entries()) assert.equal(judgeVerdict(await spansOf(g.rollout.id))!.score, [1, 0][k], model);
    }
  });

  it('noise is a fresh draw per call at temperature > 0 and shows in the retest pairs; at temperature 0 the zoo judge is exact', async () => {
    const judgeAll = async (temperature: number) => {
      const { judge } = zooJudge('judge+noise0.5', { temperature });
      const out = [];
      for (let i = 0; i < 8; i++) out.push(await judge.judgeGroup(TASK.input, await rightAndWrongToJudge(), `g${i}`, 'group', { retest: true }));
      return out.map((j) => ('pairs' in j ? j.pairs : []));
    };
    const exact = (await judgeAll(0)).flat();
    assert.equal(exact.length, 8);
    assert.ok(exact.every((p) => p.first === p.second));
    const noisy = (await judgeAll(1)).flat();
    assert.ok(
      noisy.some((p) => p.first !== p.second),
      `8 pairs at temperature 1, none disagreeing: ${JSON.stringify(noisy)}`,
    );
    assert.ok(callsTo('judge+noise0.5').every((r) => r.temperature === 0 || r.temperature === 1));
  });

  it('position bias: the first shown scores 1 whatever it says, so the copy of a retested trajectory shown elsewhere disagrees with it', async () => {
    const { judge } = zooJudge('judge+position');
    const pairs = [];
    for (let i = 0; i < 6; i++) {
      const j = await judge.judgeGroup(TASK.input, await rightAndWrongToJudge(), `p${i}`, 'group', { retest: true });
      assert.ok('pairs' in j);
      const { shown, retest } = j.calls[0]!;
      assert.equal(retest!.position === 1 ? retest!.score : j.scores.get(shown[0]!.rolloutId)!.score, 1, 'the first shown scores 1');
      pairs.push(...j.pairs);
    }
    assert.ok(
      pairs.some((p) => p.first !== p.second),
      `the copies never disagreed: ${JSON.stringify(pairs)}`,
    );
  });
});

describe('one ended rollout judged on the zoo (judge-rollout)', () => {
  it('an answer cut at max_tokens is unusable and tried again; cut on every try, the rollout keeps its own reward, never 0', async () => {
    const once = zooJudge('judge+cut1', { maxTokens: 20 });
    const [r] = await rightAndWrong();
    const got = await judgeEndedRollout(store, once.judge, r!.rollout, 'cut1');
    assert.deepEqual(got, { kind: 'scored', score: 1, explanation: 'the answer 38 is the expected 38' });
    assert.match(once.logs.join('\n'), /cut off at the token limit; trying again/);
    assert.equal(callsTo('judge+cut1')[0]!.maxTokens, 20);

    const always = zooJudge('judge+cut', { maxTokens: 20 });
    const [, wrong] = await rightAndWrong();
    const failed = await judgeEndedRollout(store, always.judge, wrong!.rollout, 'cut');
    assert.equal(failed.kind, 'failed');
    assert.match((failed as { reason: string }).reason, /cut off at the token limit \(after 2 tries\)/);
    assert.equal(finalReward(await spansOf(wrong!.rollout.id)), 0.7);
  });

  it('a 429 waits the Retry-After the server gave (seconds), not the configured backoff, then the answer counts', async () => {
    const { judge, logs } = zooJudge('judge+ratelimit1', { backoffSeconds: 0.01 });
    const [r] = await rightAndWrong();
    const got = await judgeEndedRollout(store, judge, r!.rollout, 'rl');
    assert.equal(got.kind, 'scored');
    assert.match(logs.join('\n'), /429 zoo: rate limited; trying again in 1\.0s/);
    assert.equal(callsTo('judge+ratelimit1').length, 2);
  });

  it('a slow answer (the JSON body in pieces) is read whole; a draft in <think> or before a correction is never the answer, fenced or bare', async () => {
    for (const model of ['judge+slow', 'judge+think', 'judge+think+bare', 'judge+draft', 'judge+draft+bare', 'judge+think+draft+slow+bare']) {
      const { judge } = zooJudge(model);
      const [, wrong] = await rightAndWrong();
      assert.deepEqual(
        await judgeEndedRollout(store, judge, wrong!.rollout, model),
        { kind: 'scored', score: 0, explanation: 'the answer 40 is not 38' },
        model,
      );
    }
  });
});

describe('the zoo itself', () => {
  it('streams a slow answer as spaced SSE chunks with usage to the real client; a name it does not know is refused naming the bad part', async () => {
    const client = new OpenAI({ baseURL: zoo.url, apiKey: 'none', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'agent+slow',
      messages: [
        {
          role: 'user',
          content:
            'Record: order=A1; customer=Ann Lee; recipient=Bo; placed=2024-01-02; shipped=2024-01-03; total=12.5; items=2; paid=yes\nQuestion: Who placed the order?',
        },
      ],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage = 0;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      usage = chunk.usage?.completion_tokens ?? usage;
    }
    assert.ok(text.length > 0 && usage > 0, `${text} / ${usage}`);
    const judge = zooJudge('judge+sloppy').judge;
    await assert.rejects(judge.judgeGroup(TASK.input, await rightAndWrongToJudge(), 'x'), (e: Error) => {
      assert.ok(e instanceof ModelRefused, e.message);
      assert.match(e.message, /asks for 'sloppy', which is no zoo behaviour/);
      return true;
    });
  });
});
