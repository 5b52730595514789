/**
 * The TF.js engine against Hugging Face transformers itself: tiny random Llama, Qwen2 and GPT-2 models made and
 * saved by transformers (test/engine/hf_models.py: float32, eager attention, RoPE theta in rope_parameters, a
 * byte-level BPE tokenizer.json and a ChatML chat template with tools) load in our engine with
 *   - logits within 1e-4 of transformers' on the same ids, also left-padded in a batch,
 *   - the same greedy tokens,
 *   - the same token ids for chats rendered through the chat template and encoded (tools, tool calls, unicode),
 * and the log-probs the gateway records for a chat completion (the real openai client against our daemon serving
 * the Qwen2 model) equal transformers' log-probs of the same prompt and completion tokens.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import OpenAI from 'openai';
import { HfTokenizer } from '../../daemon/model/hf-tokenizer.js';
import { loadPolicy, type TfPolicyModel } from '../../daemon/model/policy.js';
import { forward, lmHead } from '../../daemon/model/transformer.js';
import type { ChatMessage, ToolSpec } from '../../daemon/model/policy-contract.js';
import { AGL, SPAN } from '../../protocol/spans.js';
import { attemptBaseUrl } from '../../protocol/ids.js';
import { type Harness, startDaemon } from '../helpers/daemon.js';
import { runPython } from '../helpers/torch.js';

interface Reference {
  inputIds: number[][];
  logits: number[];
  shape: [number, number, number];
  greedyFrom: number;
  greedy: number[][];
  transformers: string;
}
interface Chat {
  messages: (ChatMessage & { tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: unknown } }[] })[];
  tools?: ToolSpec[];
  ids: number[];
  idsNoGenerationPrompt: number[];
}

const FAMILIES = ['llama', 'qwen2', 'gpt2'] as const;
let dir = '';
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'agl-hf-ref-'));
  runPython(['test/engine/hf_models.py', 'make', '--out', dir]);
});
after(() => rmSync(dir, { recursive: true, force: true }));

const maxAbsDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  assert.equal(a.length, b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
};

for (const family of FAMILIES) {
  describe(`${family} made by transformers`, () => {
    let model: TfPolicyModel;
    let ref: Reference;
    before(async () => {
      model = await loadPolicy(join(dir, family));
      ref = JSON.parse(readFileSync(join(dir, family, 'reference.json'), 'utf8')) as Reference;
    });
    after(() => model.dispose());

    it("loads with transformers' logits within 1e-4 (also left-padded in a batch)", async () => {
      const [B, T, V] = ref.shape;
      const c = model.config;
      assert.equal(c.vocabSize, V);
      const logits = tf.tidy(() => {
        const { hidden } = forward(c, model.params, tf.tensor2d(ref.inputIds.flat(), [B, T], 'int32'), [0, 0], null);
        return lmHead(c, model.params, hidden.reshape([B * T, c.dModel]));
      });
      const got = (await logits.data()) as Float32Array;
      logits.dispose();
      const worst = maxAbsDiff(got, ref.logits);
      assert.ok(worst < 1e-4, `max |ours - transformers ${ref.transformers}| = ${worst}`);
      // Row 1's first 8 tokens left-padded by 5 beside row 0's first 13: the same logits as transformers' row 1.
      const P = 8,
        pad = 5;
      const padded = [...ref.inputIds[0].slice(0, P + pad), ...Array(pad).fill(0), ...ref.inputIds[1].slice(0, P)];
      const l2 = tf.tidy(() => {
        const { hidden } = forward(c, model.params, tf.tensor2d(padded, [2, P + pad], 'int32'), [0, pad], null);
        return lmHead(c, model.params, hidden.slice([1, pad, 0], [1, P, c.dModel]).reshape([P, c.dModel]));
      });
      const g2 = (await l2.data()) as Float32Array;
      l2.dispose();
      const want = ref.logits.slice(T * V, T * V + P * V);
      assert.ok(maxAbsDiff(g2, want) < 1e-4, `left-padded: max diff ${maxAbsDiff(g2, want)}`);
      assert.ok(Math.max(...ref.logits) - Math.min(...ref.logits) > 1, 'the reference logits spread (the comparison means something)');
    });

    it("generates transformers' greedy tokens", async () => {
      const prompts = ref.inputIds.map((row) => row.slice(0, ref.greedyFrom));
      const gens = await model.generate(prompts, { maxTokens: ref.greedy[0].length, temperature: 0 });
      const eos = new Set(model.tokenizer.eosTokenIds);
      gens.forEach((g, i) => {
        // transformers ran without stopping; ours stops at an end-of-sequence token, which must then be the last one.
        assert.deepEqual(g.tokenIds, ref.greedy[i].slice(0, g.tokenIds.length), `row ${i}`);
        if (g.tokenIds.length < ref.greedy[i].length) assert.ok(eos.has(g.tokenIds.at(-1)!), `row ${i} stopped early without an EOS`);
      });
      assert.ok(
        gens.some((g) => g.tokenIds.length >= 6),
        'at least one row compares several tokens',
      );
    });
  });
}

describe('tokenizer.json and chat template made by transformers', () => {
  it("give transformers' ids: chats with a system turn, unicode, tools and a tool call", () => {
    const tok = HfTokenizer.fromFolder(join(dir, 'qwen2'));
    const chats = JSON.parse(readFileSync(join(dir, 'chats.json'), 'utf8')) as Chat[];
    assert.equal(chats.length, 3);
    for (const [i, chat] of chats.entries()) {
      // Our gateway hands the template tool-call arguments as the JSON string the OpenAI API carries.
      const messages = chat.messages.map((m) => ({
        ...m,
        tool_calls: m.tool_calls?.map((c) => ({ ...c, function: { name: c.function.name, arguments: JSON.stringify(c.function.arguments) } })),
      })) as ChatMessage[];
      const withPrompt = tok.encode(tok.applyChatTemplate(messages, { addGenerationPrompt: true, tools: chat.tools }));
      assert.deepEqual(withPrompt, chat.ids, `chat ${i}: ${tok.applyChatTemplate(messages, { addGenerationPrompt: true, tools: chat.tools })}`);
      assert.deepEqual(
        tok.encode(tok.applyChatTemplate(messages, { addGenerationPrompt: false, tools: chat.tools })),
        chat.idsNoGenerationPrompt,
        `chat ${i} without the generation prompt`,
      );
    }
  });
});

describe('gateway on a transformers Qwen2', () => {
  let daemon: Harness;
  let policy: TfPolicyModel;
  before(async () => {
    policy = await loadPolicy(join(dir, 'qwen2'), { name: 'qwen2-tiny' });
    daemon = await startDaemon({ getPolicy: (name) => (name === 'qwen2-tiny' ? policy : null) });
    await daemon.client.addResources({
      resources: {
        llm: { type: 'llm', endpoint: `${daemon.url}/v1`, model: 'qwen2-tiny', backend: 'local', samplingParams: { temperature: 1, maxTokens: 16 } },
      },
    });
  });
  after(async () => {
    await daemon.close();
    policy.dispose();
  });

  it('records the log-probs transformers gives the same tokens', async () => {
    const claim = await daemon.client.startRollout({ input: {} }, 'test');
    const openai = new OpenAI({ baseURL: attemptBaseUrl(`${daemon.url}/v1`, claim.rollout.id, claim.attempt.id), apiKey: 'agl', maxRetries: 0 });
    for (const content of ['What is 23+15?', 'Which department is Otto in?']) {
      await openai.chat.completions.create({
        model: 'qwen2-tiny',
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content },
        ],
        logprobs: true,
        seed: 11,
      });
    }
    const spans = (await daemon.client.querySpans({ rolloutId: claim.rollout.id })).filter((s) => s.name === SPAN.llmCall);
    assert.equal(spans.length, 2);
    const pairs = spans.map((s) => ({
      promptIds: s.attributes[AGL.promptTokenIds] as number[],
      completionIds: s.attributes[AGL.completionTokenIds] as number[],
    }));
    const recorded = spans.map((s) => s.attributes[AGL.completionLogprobs] as number[]);
    assert.ok(pairs.every((p) => p.completionIds.length >= 1));
    const { logprobs } = runPython<{ logprobs: number[][] }>(['test/engine/hf_models.py', 'logprobs', '--model', join(dir, 'qwen2')], { pairs });
    recorded.forEach((row, i) => {
      assert.equal(row.length, logprobs[i].length);
      assert.ok(maxAbsDiff(row, logprobs[i]) < 1e-4, `call ${i}: recorded ${row} vs transformers ${logprobs[i]}`);
    });
  });
});
