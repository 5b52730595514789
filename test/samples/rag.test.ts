/**
 * The rag sample: corpus, questions, retrieval and token-F1 reward on their own, then one rollout of the
 * OpenAI Agents SDK agent through a real daemon and runner (gateway in upstream mode, pointed at a
 * scripted LLM that writes the expert queries): both hops' queries and searches, the answer call and the
 * F1 reward are recorded, each LLM call under its agent's name.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { AGL, SPAN } from '../../protocol/spans.js';
import { makeCorpus, makeRagSplits, makeWorld, tokenF1 } from '../../samples/rag/corpus.js';
import { loadCorpus } from '../../samples/rag/data.js';
import { ANSWER_INSTRUCTIONS, cleanQuery, queryFor, QUERY_INSTRUCTIONS } from '../../samples/rag/prompts.js';
import { CorpusSearch } from '../../samples/rag/search.js';
import { type SampleDaemon, startSampleDaemon } from './sample-daemon.js';
import { contentText } from './scripted-llm.js';

describe('rag sample: corpus, retrieval and reward', () => {
  const world = makeWorld();
  const docs = makeCorpus(world);
  const splits = makeRagSplits(world);

  it('scores token F1 (case, punctuation and articles ignored)', () => {
    assert.equal(tokenF1('Belpeith', 'Belpeith'), 1);
    assert.equal(tokenF1('the river Mope.', 'Mope'), 2 / 3);
    assert.equal(tokenF1('Kape Guild', 'The Kape Guild'), 1);
    assert.equal(tokenF1('Oslo', 'Belpeith'), 0);
    assert.equal(tokenF1('', 'Belpeith'), 0);
  });

  it('ships a few hundred documents, the same ones the seed makes, with distinct titles', () => {
    assert.ok(docs.length >= 200, `${docs.length} documents`);
    assert.deepEqual(loadCorpus(), docs, 'data/corpus.jsonl is what make-data.ts writes');
    assert.equal(new Set(docs.map((d) => d.title)).size, docs.length);
  });

  it('needs two documents per question: the expert query of each hop retrieves it, and only the second holds the answer', () => {
    const search = new CorpusSearch(docs);
    const byTitle = new Map(docs.map((d) => [d.title, d]));
    let firstHopAnswers = 0;
    for (const t of [...splits.val, ...splits.test]) {
      const [a, b] = t.hops.map((h) => byTitle.get(h)!);
      assert.equal(search.search(queryFor(a))[0]?.id, a.id, `hop 1 of ${t.id}`);
      assert.equal(search.search(queryFor(b), 1, new Set([a.id]))[0]?.id, b.id, `hop 2 of ${t.id}`);
      assert.ok(b.text.includes(t.answer), `the second document holds the answer of ${t.id}`);
      if (a.text.includes(t.answer)) firstHopAnswers++;
      assert.ok(!t.question.includes(b.title.replace(' (guild)', '')), `the question of ${t.id} does not name the bridge entity`);
    }
    assert.equal(firstHopAnswers, 0);
  });

  it('reads a query out of a chatty reply', () => {
    assert.equal(cleanQuery('Query: "Rinbel Moul"\nbecause...'), 'Rinbel Moul');
  });
});

describe('rag sample: one rollout through the daemon', () => {
  const agent = `${resolve('samples/rag/agent.ts')}#ragAgent`; // tests run from the repo root
  const world = makeWorld();
  const task = makeRagSplits(world).test[0];
  let env: SampleDaemon;

  before(async () => {
    env = await startSampleDaemon((body) => {
      const system = contentText(body.messages?.[0]?.content);
      const user = contentText(body.messages?.at(-1)?.content);
      if (system === QUERY_INSTRUCTIONS) return queryFor({ title: user.includes('\nKnown: ') ? task.hops[1] : task.hops[0] });
      if (system === ANSWER_INSTRUCTIONS) return user.includes(task.answer) ? `${task.answer} town` : 'unknown';
      return 'unexpected prompt';
    });
  });
  after(() => env.close());

  it('records two query calls, two searches and the answer call by agent, and the F1 reward', async () => {
    const r = await env.runToEnd(task, agent);
    const [attempt] = await env.daemon.client.getAttempts(r.id);
    assert.equal(r.status, 'succeeded', attempt.error?.message);
    const spans = await env.daemon.client.querySpans({ rolloutId: r.id });
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const calls = spans.filter((s) => s.name === SPAN.llmCall).sort((a, b) => a.startTime - b.startTime);
    assert.deepEqual(
      calls.map((s) => byId.get(s.parentSpanId ?? '')?.attributes[AGL.agentName]),
      ['query_writer', 'query_writer', 'answerer'],
    );
    assert.ok(
      calls.every((s) => Array.isArray(s.attributes[AGL.completionTokenIds])),
      'token ids recorded for training',
    );
    const searches = spans.filter((s) => s.name === SPAN.tool).sort((a, b) => a.startTime - b.startTime);
    assert.deepEqual(
      searches.map((s) => s.attributes['search.query']),
      task.hops.map((h) => queryFor({ title: h })),
    );
    const final = spans.find((s) => s.name === SPAN.reward && s.attributes['agl.reward.final'] === true);
    assert.equal(final?.attributes[AGL.rewardValue], tokenF1(`${task.answer} town`, task.answer));
    assert.ok(Number(final?.attributes[AGL.rewardValue]) > 0 && Number(final?.attributes[AGL.rewardValue]) < 1, 'a partly right answer gets partial credit');
    const sent = env.llm.requests.map((b) => b.model);
    assert.ok(
      sent.every((m) => m === 'scripted'),
      'the Agents SDK sent the resource model',
    );
  });

  it('a malformed task fails the attempt with a message naming the fields', async () => {
    const bad = await env.runToEnd({ question: 'no answer' }, agent);
    assert.equal(bad.status, 'failed');
    const [attempt] = await env.daemon.client.getAttempts(bad.id);
    assert.match(attempt.error?.message ?? '', /expected \{"question": string, "answer": string\}/);
  });
});
