/**
 * The gateway in upstream mode, driven by the real `openai` npm client: plain and streamed chat with
 * tools, text completions, errors; each call tied to its attempt becomes a span with usage, messages,
 * tool calls and (when the upstream returns them, as vLLM does) token ids and logprobs.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { AGL, GENAI, SPAN } from '../../protocol/spans.js';
import { AglHttpError } from '../../client/client.js';
import { attemptBaseUrl, rootSpanIdForAttempt, traceIdForAttempt } from '../../protocol/ids.js';
import { FAKE_ANSWER, FAKE_PROMPT_IDS, FAKE_TOKEN_IDS, type FakeUpstream, startFakeUpstream } from '../helpers/fake-upstream.js';
import { type Harness, startDaemon } from '../helpers/daemon.js';

const tools = [
  {
    type: 'function' as const,
    function: {
      name: 'calculator',
      description: 'evaluates arithmetic',
      parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
    },
  },
];

describe('gateway, upstream backend', () => {
  let daemon: Harness;
  let upstream: FakeUpstream;
  let resourcesId: string;
  before(async () => {
    upstream = await startFakeUpstream();
    daemon = await startDaemon();
    const r = await daemon.client.addResources({
      resources: {
        llm: {
          type: 'llm',
          endpoint: `${daemon.url}/v1`,
          model: 'fake-model',
          backend: 'upstream',
          upstreamUrl: upstream.url,
          samplingParams: { temperature: 0.7 },
        },
      },
    });
    resourcesId = r.id;
  });
  after(async () => {
    await daemon.close();
    await upstream.close();
  });

  async function attempt() {
    const claim = await daemon.client.startRollout({ input: { q: 'x' } }, 'test');
    const openai = new OpenAI({ baseURL: attemptBaseUrl(`${daemon.url}/v1`, claim.rollout.id, claim.attempt.id), apiKey: 'unused', maxRetries: 0 });
    const spans = async () => (await daemon.client.querySpans({ rolloutId: claim.rollout.id })).filter((s) => s.name === SPAN.llmCall);
    return { claim, openai, spans };
  }

  it('forwards a chat with tools and records the call as a span', async () => {
    const { claim, openai, spans } = await attempt();
    const res = await openai.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'what is 6*7?' }], tools });
    assert.equal(res.choices[0].finish_reason, 'tool_calls');
    const call = res.choices[0].message.tool_calls?.[0];
    assert.equal(call?.type === 'function' && call.function.name, 'calculator');
    assert.deepEqual(upstream.requests.at(-1)?.tools, tools, 'tools reach the upstream unchanged');
    const [span] = await spans();
    assert.ok(span, 'the call was recorded');
    assert.equal(span.attemptId, claim.attempt.id);
    assert.equal(span.traceId, traceIdForAttempt(claim.attempt.id));
    assert.equal(span.parentSpanId, rootSpanIdForAttempt(claim.attempt.id));
    assert.equal(span.attributes[GENAI.operationName], 'chat');
    assert.equal(span.attributes[GENAI.requestModel], 'fake-model');
    assert.equal(span.attributes[GENAI.requestTemperature], 0.7, 'resource sampling params are the defaults');
    assert.deepEqual(span.attributes[GENAI.responseFinishReasons], ['tool_calls']);
    assert.equal(span.attributes[GENAI.usageInputTokens], FAKE_PROMPT_IDS.length);
    assert.equal(span.attributes[GENAI.usageOutputTokens], FAKE_TOKEN_IDS.length);
    assert.equal(span.attributes[AGL.resourcesId], resourcesId);
    assert.equal(span.attributes[AGL.resourcesVersion], 1);
    assert.equal(span.attributes[AGL.localPolicy], false);
    assert.equal(span.attributes[AGL.servedBy], 'fake-model', 'what answered: the upstream model, as it named itself');
    assert.equal(span.attributes[AGL.servedUpdates], null, 'an upstream model has no training updates of ours');
    const out = JSON.parse(String(span.attributes[GENAI.outputMessages]));
    assert.equal(out[0].tool_calls[0].function.name, 'calculator');
    assert.equal(JSON.parse(String(span.attributes[GENAI.toolDefinitions]))[0].function.name, 'calculator');
  });

  it('streams a chat and keeps the token ids and usage the upstream returned', async () => {
    const { openai, spans } = await attempt();
    const stream = (await openai.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      return_token_ids: true,
      logprobs: true,
    } as never)) as unknown as AsyncIterable<OpenAI.Chat.ChatCompletionChunk>;
    let text = '';
    let usageSeen = false;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usageSeen = true;
    }
    assert.equal(text, FAKE_ANSWER);
    assert.equal(usageSeen, false, 'the usage chunk is not sent when the agent did not ask for it');
    const [span] = await spans();
    assert.equal(span.attributes[AGL.streamed], true);
    assert.deepEqual(span.attributes[AGL.completionTokenIds], FAKE_TOKEN_IDS);
    assert.deepEqual(span.attributes[AGL.promptTokenIds], FAKE_PROMPT_IDS);
    assert.equal(span.attributes[GENAI.usageOutputTokens], FAKE_TOKEN_IDS.length, 'usage recorded from the upstream usage chunk');
    assert.equal(JSON.parse(String(span.attributes[GENAI.outputMessages]))[0].content, FAKE_ANSWER);
  });

  it('asks a vLLM-style upstream for token ids and logprobs when the resource says so', async () => {
    await daemon.client.addResources({
      resources: {
        llm: { type: 'llm', endpoint: `${daemon.url}/v1`, model: 'fake-model', backend: 'upstream', upstreamUrl: upstream.url, requestTokenIds: true },
      },
    });
    try {
      const { openai, spans } = await attempt();
      await openai.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(upstream.requests.at(-1)?.return_token_ids, true);
      const [span] = await spans();
      assert.deepEqual(span.attributes[AGL.promptTokenIds], FAKE_PROMPT_IDS);
      assert.deepEqual(span.attributes[AGL.completionTokenIds], FAKE_TOKEN_IDS);
      assert.deepEqual(
        span.attributes[AGL.completionLogprobs],
        FAKE_TOKEN_IDS.map(() => -0.5),
      );
    } finally {
      await daemon.client.addResources({
        resources: {
          llm: {
            type: 'llm',
            endpoint: `${daemon.url}/v1`,
            model: 'fake-model',
            backend: 'upstream',
            upstreamUrl: upstream.url,
            samplingParams: { temperature: 0.7 },
          },
        },
      });
    }
  });

  it('streams tool calls through', async () => {
    const { openai, spans } = await attempt();
    const stream = await openai.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: '6*7' }],
      tools,
      stream: true,
      stream_options: { include_usage: true },
    });
    const names: string[] = [];
    let usage = 0;
    for await (const chunk of stream) {
      for (const tc of chunk.choices[0]?.delta?.tool_calls ?? []) if (tc.function?.name) names.push(tc.function.name);
      if (chunk.usage) usage = chunk.usage.completion_tokens;
    }
    assert.deepEqual(names, ['calculator']);
    assert.equal(usage, FAKE_TOKEN_IDS.length, 'usage chunk passed on when asked for');
    const [span] = await spans();
    assert.deepEqual(span.attributes[GENAI.responseFinishReasons], ['tool_calls']);
  });

  it('serves text completions and lists models', async () => {
    const { openai, spans } = await attempt();
    const res = await openai.completions.create({ model: 'fake-model', prompt: 'Once upon a time' });
    assert.equal(res.choices[0].text, FAKE_ANSWER);
    const [span] = await spans();
    assert.equal(span.attributes[GENAI.operationName], 'text_completion');
    const models = await openai.models.list();
    assert.deepEqual(
      models.data.map((m) => m.id),
      ['fake-model'],
    );
  });

  it('passes OpenAI fields it does not read on unchanged; refuses a field it reads with the wrong type before forwarding or recording', async () => {
    const { openai, spans } = await attempt();
    const messages = [{ role: 'user' as const, content: 'x' }];
    const extras = { parallel_tool_calls: false, agl_future_option: { a: [1, 2] } };
    await openai.chat.completions.create({ model: 'fake-model', messages, ...extras } as never);
    const sent = upstream.requests.at(-1)!;
    assert.deepEqual([sent.parallel_tool_calls, sent.agl_future_option], [false, { a: [1, 2] }], 'unknown OpenAI fields reach the upstream');
    const forwarded = upstream.requests.length;
    await assert.rejects(openai.chat.completions.create({ model: 'fake-model', messages, temperature: 'hot' } as never), (err: unknown) => {
      assert.ok(err instanceof OpenAI.BadRequestError, String(err));
      assert.match(err.message, /temperature: expected number, received string/);
      assert.equal((err.error as { param?: string }).param, 'temperature');
      return true;
    });
    assert.equal(upstream.requests.length, forwarded, 'nothing was forwarded');
    assert.equal((await spans()).length, 1, 'only the call served was recorded');
  });

  it('passes upstream errors on in the OpenAI error shape, and records the failed call', async () => {
    const { openai, spans } = await attempt();
    await assert.rejects(openai.chat.completions.create({ model: 'missing-model', messages: [{ role: 'user', content: 'x' }] }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.NotFoundError);
      assert.match((err as Error).message, /missing-model/);
      return true;
    });
    const [span] = await spans();
    assert.equal(span.status.code, 'error');
  });

  it('rejects an unknown rollout and an unauthenticated bare call with clear errors', async () => {
    const stray = new OpenAI({ baseURL: attemptBaseUrl(`${daemon.url}/v1`, 'ro-nope', 'at-nope'), apiKey: 'x', maxRetries: 0 });
    await assert.rejects(stray.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'x' }] }), /rollout 'ro-nope' not found/);
    const bare = new OpenAI({ baseURL: `${daemon.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await assert.rejects(
      bare.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'x' }] }),
      (err: unknown) => err instanceof OpenAI.AuthenticationError,
    );
    const authed = new OpenAI({ baseURL: `${daemon.url}/v1`, apiKey: daemon.token, maxRetries: 0 });
    const res = await authed.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(res.choices[0].message.content, FAKE_ANSWER);
    const bad = await fetch(`${daemon.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${daemon.token}`, 'content-type': 'application/json' },
      body: '{not json',
    });
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { error: { message: string } }).error.message, /invalid request body/);
  });

  it("refuses, before forwarding anything, a call it could not record: unknown attempt, another rollout's, an ended one", async () => {
    const one = await attempt();
    const other = await attempt();
    const forwarded = upstream.requests.length;
    const ask = (client: OpenAI) => client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'x' }] });
    const at = (rid: string, aid: string) => new OpenAI({ baseURL: attemptBaseUrl(`${daemon.url}/v1`, rid, aid), apiKey: 'x', maxRetries: 0 });
    const refused = (status: number, pattern: RegExp) => (err: unknown) => {
      assert.ok(err instanceof OpenAI.APIError, String(err));
      assert.equal(err.status, status);
      assert.match(err.message, pattern);
      return true;
    };
    await assert.rejects(ask(at(one.claim.rollout.id, 'at-nope')), refused(404, /attempt 'at-nope' of rollout '.*' not found.*not forwarded/));
    await assert.rejects(ask(at(one.claim.rollout.id, other.claim.attempt.id)), refused(404, new RegExp(`attempt '${other.claim.attempt.id}' of rollout`)));
    // The bare route, tied to an attempt by header: an unknown attempt id is refused too.
    const bare = new OpenAI({ baseURL: `${daemon.url}/v1`, apiKey: daemon.token, maxRetries: 0, defaultHeaders: { 'x-agl-attempt-id': 'at-nope' } });
    await assert.rejects(ask(bare), refused(404, /attempt 'at-nope' not found/));
    await daemon.client.finishAttempt(one.claim.attempt.id, { status: 'succeeded' });
    await assert.rejects(ask(one.openai), refused(409, /already ended \(status 'succeeded'\).*not forwarded/));
    assert.equal(upstream.requests.length, forwarded, 'nothing reached the upstream');
    assert.deepEqual(await one.spans(), [], 'and nothing was recorded against the wrong attempt');
    // A header naming only a live attempt ties the bare call to it (its rollout is the attempt's).
    const byHeader = new OpenAI({
      baseURL: `${daemon.url}/v1`,
      apiKey: daemon.token,
      maxRetries: 0,
      defaultHeaders: { 'x-agl-attempt-id': other.claim.attempt.id },
    });
    assert.equal((await ask(byHeader)).choices[0].message.content, FAKE_ANSWER);
    assert.equal((await other.spans()).length, 1);
  });

  it('refuses bodies it cannot read faithfully: not JSON, not UTF-8, too deep (nothing forwarded)', async () => {
    const { claim } = await attempt();
    const url = `${attemptBaseUrl(`${daemon.url}/v1`, claim.rollout.id, claim.attempt.id)}/chat/completions`;
    const forwarded = upstream.requests.length;
    const post = async (body: string | Uint8Array, contentType = 'application/json') => {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': contentType }, body: body as BodyInit });
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      return { status: res.status, error: ((await res.json()) as { error: { message: string; param: string | null } }).error };
    };
    const text = await post('{"model":"fake-model","messages":[]}', 'text/plain');
    assert.equal(text.status, 415);
    assert.equal(text.error.param, 'headers.content-type');
    const before = '{"model":"fake-model","messages":[{"role":"user","content":"caf';
    const latin = await post(Buffer.concat([Buffer.from(before), Buffer.from([0xe9]), Buffer.from('"}]}')]));
    assert.equal(latin.status, 400);
    assert.match(latin.error.message, new RegExp(`not valid UTF-8 \\(first bad byte at offset ${before.length}\\)`));
    const deep = `${'['.repeat(5000)}"x"${']'.repeat(5000)}`; // written out: JSON.stringify itself overflows at this depth
    const tooDeep = await post(`{"model":"fake-model","messages":[{"role":"user","content":${deep}}]}`);
    assert.equal(tooDeep.status, 400);
    assert.match(tooDeep.error.message, /deeper than 64 levels/);
    assert.equal(tooDeep.error.param, 'messages');
    assert.equal(upstream.requests.length, forwarded);
  });

  it('sends an upstream key only from a variable the daemon was started to allow', async () => {
    process.env.AGL_TEST_SECRET = 'must-not-leak';
    const leaky = {
      resources: {
        llm: {
          type: 'llm' as const,
          endpoint: `${daemon.url}/v1`,
          model: 'leaky',
          backend: 'upstream' as const,
          upstreamUrl: upstream.url,
          apiKeyEnv: 'AGL_TEST_SECRET',
        },
      },
    };
    await assert.rejects(daemon.client.addResources(leaky), (err: unknown) => {
      assert.ok(err instanceof AglHttpError && err.status === 403, String(err));
      assert.deepEqual(err.errors, [{ path: 'resources.llm.apiKeyEnv', message: "'AGL_TEST_SECRET' is not allowed" }]);
      return true;
    });
    // One already in the store (written before a restart, or by another daemon on the same PostgreSQL) is refused at call time.
    const r = await daemon.store.addResources(leaky);
    const claim = await daemon.client.startRollout({ input: null, resourcesId: r.id });
    const openai = new OpenAI({ baseURL: attemptBaseUrl(`${daemon.url}/v1`, claim.rollout.id, claim.attempt.id), apiKey: 'x', maxRetries: 0 });
    const forwarded = upstream.requests.length;
    await assert.rejects(openai.chat.completions.create({ model: 'leaky', messages: [{ role: 'user', content: 'x' }] }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.APIError && err.status === 403, String(err));
      assert.match(err.message, /apiKeyEnv 'AGL_TEST_SECRET'.*--upstream-key-env AGL_TEST_SECRET/);
      return true;
    });
    assert.equal(upstream.requests.length, forwarded);
    delete process.env.AGL_TEST_SECRET;
  });
});
