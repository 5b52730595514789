/**
 * The judge against a scripted judge model over real HTTP, through the real `openai` client (daemon/judge/judge.ts,
 * daemon/llm-calls/chat-caller.ts): scores reach the rollouts they are about whatever order the judge was shown them in
 * (a seeded shuffle per call, recorded); malformed answers, a trajectory missing, 500s, 429s and timeouts are tried
 * again with backoff and, when they keep failing, the group gets no scores with the reason and its kind; a refused key
 * stops at once. The scripted judge also speaks SSE to the real client.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import OpenAI from 'openai';
import { Judge, type RolloutToJudge } from '../../daemon/judge/judge.js';
import { ModelRefused } from '../../daemon/llm-calls/chat-caller.js';
import { JudgeSection, type JudgeSettingsInput } from '../../protocol/judge-settings.js';
import { AGL, GENAI, SPAN } from '../../protocol/spans.js';
import type { Span } from '../../protocol/store.js';
import { answerKeyJudge, startScriptedJudge, type Fault, type ScriptedJudge } from '../helpers/scripted-judge.js';

const RUBRIC = 'Score 1 for the right total, 0 otherwise.\n- Ann has 23 pens => 38\n- Bob has 7 cups => 12';
const TASK = { question: 'Ann has 23 pens, gets 15 more. How many?', answer: 38 };

let seq = 0;
/** A rollout whose agent answered `answer` (one chat call, then its answer object). */
function answeredRollout(id: string, answer: string): RolloutToJudge {
  const s = (name: string, t: number, attributes: Span['attributes']): Span => ({
    rolloutId: id,
    attemptId: `${id}-a`,
    sequenceId: ++seq,
    traceId: 't',
    spanId: `${id}-s${seq}`,
    parentSpanId: null,
    name,
    kind: 'internal',
    startTime: t,
    endTime: t + 1,
    attributes,
    events: [],
    status: { code: 'ok' },
    resource: {},
  });
  return {
    rolloutId: id,
    attemptId: `${id}-a`,
    spans: [
      s(SPAN.llmCall, 1, {
        [GENAI.operationName]: 'chat',
        [GENAI.inputMessages]: JSON.stringify([{ role: 'user', content: TASK.question }]),
        [GENAI.outputMessages]: JSON.stringify([{ role: 'assistant', content: `It is ${answer}.` }]),
      }),
      s(SPAN.object, 2, { [AGL.objectJson]: JSON.stringify({ answer }), [AGL.objectKind]: 'final' }),
    ],
  };
}

const judges: ScriptedJudge[] = [];
after(async () => {
  for (const j of judges) await j.close();
});

async function judgeWith(faults: (n: number) => Fault | null, settings: Partial<JudgeSettingsInput> = {}, style?: 'fenced' | 'bare' | 'prose') {
  const server = await startScriptedJudge({ score: answerKeyJudge(), faults, style, timeoutHoldMs: 3_000 });
  judges.push(server);
  const logs: string[] = [];
  const judge = new Judge({
    settings: JudgeSection.parse({
      url: server.url,
      model: 'scripted-judge',
      rubric: RUBRIC,
      backoffSeconds: 0.01,
      retries: 2,
      priceIn: 1,
      priceOut: 2,
      ...settings,
    }),
    rubric: RUBRIC,
    apiKey: 'test-key',
    seed: 1,
    log: (l) => logs.push(l),
  });
  return { server, judge, logs };
}

const group = () => [answeredRollout('r-right', '38'), answeredRollout('r-wrong', '40'), answeredRollout('r-right2', '38'), answeredRollout('r-none', '37')];

describe('the judge over a scripted judge model', () => {
  it('group mode: one call shows every rollout shuffled, and each score reaches the rollout it is about', async () => {
    const { server, judge } = await judgeWith(() => null);
    const got = await judge.judgeGroup(TASK, group(), 'run\u00001\u0000task-1');
    assert.ok('scores' in got, JSON.stringify(got));
    assert.deepEqual(Object.fromEntries([...got.scores].map(([id, s]) => [id, s.score])), { 'r-right': 1, 'r-wrong': 0, 'r-right2': 1, 'r-none': 0 });
    assert.equal(got.scores.get('r-wrong')!.explanation, 'the answer 40 is not 38');
    assert.equal(server.requests.length, 1);
    const [call] = got.calls;
    // What the judge read at place k is the rollout the call says it showed at place k.
    const shownAnswers = server.requests[0]!.trajectories.map((t) => JSON.parse(t.finalAnswer!).answer as string);
    const answerOf = new Map(group().map((r) => [r.rolloutId, JSON.parse(String(r.spans[1]!.attributes[AGL.objectJson])).answer as string]));
    assert.deepEqual(
      shownAnswers,
      call!.shown.map((r) => answerOf.get(r.rolloutId)),
    );
    // The task reached the judge without its expected answer; the rubric with its key.
    assert.doesNotMatch(server.requests[0]!.task, /38/);
    assert.match(server.requests[0]!.rubric, /Ann has 23 pens => 38/);
    // Tokens and cost at the prices given (1 and 2 per million).
    const r = call!.result;
    assert.ok(r.promptTokens > 100 && r.completionTokens > 10, JSON.stringify(r));
    assert.equal(r.cost, (r.promptTokens * 1 + r.completionTokens * 2) / 1e6);
  });

  it('shuffles per call: over several groups the judge sees other orders, and the same group again sees the same', async () => {
    const { judge } = await judgeWith(() => null, {}, 'bare');
    const orders = new Set<string>();
    for (let k = 0; k < 8; k++) {
      const got = await judge.judgeGroup(TASK, group(), `run\u00001\u0000task-${k}`);
      orders.add(got.calls[0]!.shown.map((r) => r.rolloutId).join(','));
    }
    assert.ok(orders.size >= 3, `only ${orders.size} orders over 8 calls`);
    const again = await Promise.all([0, 1].map(() => judge.judgeGroup(TASK, group(), 'run\u00001\u0000task-0')));
    assert.equal(again[0]!.calls[0]!.shown.map((r) => r.rolloutId).join(), again[1]!.calls[0]!.shown.map((r) => r.rolloutId).join());
  });

  it('single mode: one call per rollout, answers read from prose around the JSON', async () => {
    const { server, judge } = await judgeWith(() => null, { mode: 'single' }, 'prose');
    const got = await judge.judgeGroup(TASK, group(), 'single');
    assert.ok('scores' in got);
    assert.equal(server.requests.length, 4);
    assert.ok(server.requests.every((r) => r.trajectories.length === 1));
    assert.equal(got.scores.get('r-right')!.score, 1);
    assert.equal(got.scores.get('r-wrong')!.score, 0);
  });

  it('a malformed answer, a 500 and a 429 are tried again with backoff, then the answer counts; every try is counted', async () => {
    const faults: Fault[] = ['malformed', 'server-error', 'rate-limit'];
    const { server, judge, logs } = await judgeWith((n) => faults[n] ?? null, { retries: 3 });
    const got = await judge.judgeGroup(TASK, group(), 'retry');
    assert.ok('scores' in got, JSON.stringify(got));
    assert.equal(server.requests.length, 4);
    assert.equal(got.calls[0]!.result.attempts, 4);
    assert.equal(logs.length, 3);
    assert.match(logs[0]!, /unusable answer: no JSON.*trying again/);
    assert.match(logs[1]!, /500/);
    assert.match(logs[2]!, /429.*trying again in 0\.1s/); // the server's retry-after-ms (50 ms)
  });

  it('a trajectory missing from every answer: the group gets no scores, the reason says which (partial)', async () => {
    const { judge } = await judgeWith(() => 'partial');
    const got = await judge.judgeGroup(TASK, group(), 'partial');
    assert.ok('failed' in got);
    assert.equal(got.failed.kind, 'partial');
    assert.match(got.failed.reason, /trajectory 4 missing from the answer \(it scored 1, 2, 3\) \(after 3 tries\)/);
    assert.equal(got.calls[0]!.scores, null);
  });

  it('scores out of [0, 1] and malformed JSON in every answer: malformed', async () => {
    for (const fault of ['out-of-range', 'malformed'] as const) {
      const { judge } = await judgeWith(() => fault, { retries: 1 });
      const got = await judge.judgeGroup(TASK, group(), fault);
      assert.ok('failed' in got);
      assert.equal(got.failed.kind, 'malformed');
    }
  });

  it('an answer held past the timeout is tried again, then the group fails as timed out', async () => {
    const { judge } = await judgeWith(() => 'timeout', { timeoutSeconds: 0.3, retries: 1 });
    const t0 = Date.now();
    const got = await judge.judgeGroup(TASK, group(), 'timeout');
    assert.ok('failed' in got);
    assert.equal(got.failed.kind, 'timeout');
    assert.match(got.failed.reason, /timed out after 0\.3s \(after 2 tries\)/);
    assert.ok(Date.now() - t0 < 2_500, 'the client gave up at its timeout, not the server');
  });

  it('500s on every try: failed requests, with the last error', async () => {
    const { judge } = await judgeWith(() => 'server-error', { retries: 1 });
    const got = await judge.judgeGroup(TASK, group(), '500');
    assert.ok('failed' in got);
    assert.equal(got.failed.kind, 'error');
    assert.match(got.failed.reason, /^500 scripted judge: internal error \(after 2 tries\)$/);
  });

  it('a refused key stops at once, naming the settings to check', async () => {
    const { server, judge } = await judgeWith(() => 'unauthorized');
    await assert.rejects(judge.judgeGroup(TASK, group(), '401'), (e: Error) => {
      assert.ok(e instanceof ModelRefused);
      assert.match(e.message, /refused the request \(401.*check judge\.url, judge\.model and the key in judge\.keyEnv/);
      return true;
    });
    assert.equal(server.requests.length, 1);
  });

  it('the scripted judge streams (SSE) to the real client as it answers in JSON', async () => {
    const { server } = await judgeWith(() => null);
    const client = new OpenAI({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    const user = `Task:\nq\n\n<trajectory 1>\nFinal answer: 38\n</trajectory 1>\n`;
    const messages = [
      { role: 'system' as const, content: `Rubric:\n- q => 38\n\nAnswer with JSON` },
      { role: 'user' as const, content: user },
    ];
    const stream = await client.chat.completions.create({ model: 'm', messages, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: { prompt_tokens: number } | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      usage = chunk.usage ?? usage;
    }
    const plain = await client.chat.completions.create({ model: 'm', messages });
    assert.equal(text, plain.choices[0]!.message.content);
    assert.match(text, /"score": 1/);
    assert.ok(usage && usage.prompt_tokens > 0);
  });
});
