/**
 * The gateway serving the daemon's local policy (a tiny built-in TF.js model), driven by the real
 * `openai` client: the prompt is the tokenizer's chat template, the span records the exact prompt and
 * completion token ids and per-token log-probs (streaming too), and concurrent calls are batched into
 * one generate().
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { GenerateOptions, Generation, PolicyModel } from '../../daemon/model/policy-contract.js';
import { createPolicy } from '../../daemon/model/policy.js';
import { AGL, GENAI, SPAN } from '../../protocol/spans.js';
import { attemptBaseUrl } from '../../protocol/ids.js';
import { type Harness, startDaemon } from '../helpers/daemon.js';

/** Observes the real model's generate() calls (batch sizes) and delegates everything to it. */
function observed(model: PolicyModel, batches: number[]): PolicyModel {
  return new Proxy(model, {
    get(target, prop, receiver) {
      if (prop === 'generate')
        return (prompts: number[][], opts: GenerateOptions): Promise<Generation[]> => {
          batches.push(prompts.length);
          return target.generate(prompts, opts);
        };
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

describe('gateway, local policy backend', () => {
  let daemon: Harness;
  let policy: PolicyModel;
  const batches: number[] = [];
  before(async () => {
    const real = await createPolicy({ size: '0.8m', contextLength: 256, seed: 1, name: 'tiny' });
    policy = observed(real, batches);
    // Served as a checkpoint after 34 updates would be (served-policy-set.ts version): each call records it.
    daemon = await startDaemon({ getPolicy: (name) => (name === 'tiny' ? policy : null), updates: (name) => (name === 'tiny' ? 34 : null) });
    await daemon.client.addResources({
      resources: { llm: { type: 'llm', endpoint: `${daemon.url}/v1`, model: 'tiny', backend: 'local', samplingParams: { temperature: 0, maxTokens: 12 } } },
    });
  });
  after(async () => {
    await daemon.close();
    policy.dispose();
  });

  async function attempt() {
    const claim = await daemon.client.startRollout({ input: {} }, 'test');
    const openai = new OpenAI({ baseURL: attemptBaseUrl(`${daemon.url}/v1`, claim.rollout.id, claim.attempt.id), apiKey: 'agl', maxRetries: 0 });
    const spans = async () => (await daemon.client.querySpans({ rolloutId: claim.rollout.id })).filter((s) => s.name === SPAN.llmCall);
    return { openai, spans };
  }
  const messages = [
    { role: 'system' as const, content: 'You are terse.' },
    { role: 'user' as const, content: 'What is 2+3?' },
  ];

  it('answers a chat and records exact token ids and logprobs', async () => {
    const { openai, spans } = await attempt();
    const res = await openai.chat.completions.create({ model: 'tiny', messages, logprobs: true });
    assert.equal(res.model, 'tiny');
    assert.ok(['stop', 'length'].includes(res.choices[0].finish_reason));
    const [span] = await spans();
    const expectedPrompt = policy.tokenizer.encode(policy.tokenizer.applyChatTemplate(messages, { addGenerationPrompt: true }));
    assert.deepEqual(span.attributes[AGL.promptTokenIds], expectedPrompt, 'the prompt is the chat template, tokenized');
    const ids = span.attributes[AGL.completionTokenIds] as number[];
    const lps = span.attributes[AGL.completionLogprobs] as number[];
    assert.equal(ids.length, res.usage?.completion_tokens);
    assert.ok(ids.length >= 1 && ids.length <= 12, 'max tokens from the resource sampling params');
    assert.equal(lps.length, ids.length);
    assert.ok(lps.every((x) => x <= 0));
    assert.equal(res.choices[0].logprobs?.content?.length, ids.length);
    assert.equal(span.attributes[AGL.localPolicy], true);
    assert.equal(span.attributes[AGL.servedBy], 'tiny', 'what answered: the local policy the resource names');
    assert.equal(span.attributes[AGL.servedUpdates], 34, 'and the training updates it had');
    assert.equal(span.attributes[AGL.policyName], undefined, 'one policy: no per-role policy recorded');
    assert.equal(span.attributes[GENAI.usageInputTokens], expectedPrompt.length);
    assert.equal(policy.tokenizer.decode(ids).startsWith(res.choices[0].message.content ?? ''), true);
  });

  it('streams the same greedy answer, keeping token ids (agent-lightning #262)', async () => {
    const { openai, spans } = await attempt();
    const plain = await openai.chat.completions.create({ model: 'tiny', messages, max_tokens: 10 });
    const stream = await openai.chat.completions.create({ model: 'tiny', messages, max_tokens: 10, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage = -1;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage.completion_tokens;
    }
    assert.equal(text, plain.choices[0].message.content ?? '');
    const recorded = await spans();
    const streamed = recorded.find((s) => s.attributes[AGL.streamed] === true)!;
    assert.equal((streamed.attributes[AGL.completionTokenIds] as number[]).length, usage);
    assert.deepEqual(
      streamed.attributes[AGL.completionTokenIds],
      recorded.find((s) => s.attributes[AGL.streamed] === false)!.attributes[AGL.completionTokenIds],
    );
  });

  it('records every choice of an n > 1 call (the first one also under the single-choice names)', async () => {
    const { openai, spans } = await attempt();
    const res = await openai.chat.completions.create({ model: 'tiny', messages, n: 3, temperature: 1, seed: 7, max_tokens: 8 });
    assert.equal(res.choices.length, 3);
    const [span] = await spans();
    const all = JSON.parse(span.attributes[AGL.choicesTokenIds] as string) as number[][];
    const lps = JSON.parse(span.attributes[AGL.choicesLogprobs] as string) as number[][];
    assert.equal(all.length, 3);
    all.forEach((ids, i) => {
      assert.equal(policy.tokenizer.decode(ids).startsWith(res.choices[i].message.content ?? ''), true, `choice ${i} ids decode to its text`);
      assert.equal(lps[i].length, ids.length);
    });
    assert.deepEqual(span.attributes[AGL.completionTokenIds], all[0]);
    assert.equal(
      span.attributes[GENAI.usageOutputTokens],
      all.reduce((s, ids) => s + ids.length, 0),
    );
  });

  it('batches concurrent calls into one generate(), each with its own max_tokens', async () => {
    const { openai, spans } = await attempt();
    batches.length = 0;
    const limits = [2, 4, 6, 8, 3, 5, 7, 9];
    const results = await Promise.all(
      limits.map((max_tokens, i) => openai.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: `question ${i}` }], max_tokens })),
    );
    results.forEach((r, i) => assert.ok((r.usage?.completion_tokens ?? 99) <= limits[i]));
    assert.ok(Math.max(...batches) > 1, `calls were batched (batch sizes ${batches.join(',')})`);
    assert.ok(batches.length < limits.length);
    assert.equal((await spans()).length, limits.length);
  });

  it('serves text completions and answers a missing model with 503', async () => {
    const { openai } = await attempt();
    const res = await openai.completions.create({ model: 'tiny', prompt: 'Once upon', max_tokens: 5 });
    assert.ok(res.choices[0].text.length >= 0 && (res.usage?.completion_tokens ?? 0) <= 5);
    await daemon.client.addResources({ resources: { llm: { type: 'llm', endpoint: `${daemon.url}/v1`, model: 'not-loaded', backend: 'local' } } });
    const { openai: other } = await attempt();
    await assert.rejects(
      other.chat.completions.create({ model: 'not-loaded', messages }),
      (err: unknown) => err instanceof OpenAI.APIError && err.status === 503 && /no local policy model 'not-loaded'/.test(err.message),
    );
  });
});
