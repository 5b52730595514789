/**
 * KV-cache generation must sample exactly what naive full recomputation samples, token for token, for both
 * model families, greedy and seeded sampling with top-k/top-p, in one padded batch of unequal prompts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadPolicy } from '../../daemon/model/policy.js';
import { naiveGenerate, tinyGpt, writeTinyQwen2 } from './tiny.js';
import type { GenerateOptions } from '../../daemon/model/policy-contract.js';

function assertSame(batched: { tokenIds: number[]; logprobs: number[] }[], naive: { tokenIds: number[]; logprobs: number[] }[]): void {
  assert.equal(batched.length, naive.length);
  batched.forEach((g, i) => {
    assert.deepEqual(g.tokenIds, naive[i].tokenIds, `row ${i} tokens`);
    g.logprobs.forEach((lp, j) => assert.ok(Math.abs(lp - naive[i].logprobs[j]) < 1e-4, `row ${i} token ${j}: ${lp} vs ${naive[i].logprobs[j]}`));
  });
}

const settings: [string, GenerateOptions][] = [
  ['greedy', { maxTokens: 12, temperature: 0, seed: 1 }],
  ['sampled, top-k 20, top-p 0.9', { maxTokens: 12, temperature: 0.8, topK: 20, topP: 0.9, seed: 42 }],
  ['sampled, full distribution', { maxTokens: 12, temperature: 1.3, seed: 7 }],
];

test('built-in GPT: KV-cache batched sampling equals naive recomputation', async () => {
  const model = await tinyGpt(3);
  const tok = model.tokenizer;
  const prompts = [tok.encode('<|user|>hello there<|end|><|assistant|>'), tok.encode('ab'), tok.encode('The quick brown fox')];
  for (const [name, opts] of settings) {
    const got = await model.generate(prompts, opts);
    assert.ok(
      got.every((g) => g.tokenIds.length > 0),
      name,
    );
    assertSame(got, await naiveGenerate(model, prompts, opts));
  }
  // Rows that stop early (any of many one-byte stop strings) leave the batch and its KV cache mid-way.
  const manyStops = { maxTokens: 24, temperature: 1, seed: 5, stop: [...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'] };
  const rows = [...prompts, tok.encode('x'), tok.encode('yz'), tok.encode('0123'), tok.encode('<|user|>')];
  const got = await model.generate(rows, manyStops);
  const lengths = got.map((g) => g.tokenIds.length);
  assert.ok(Math.min(...lengths) < Math.max(...lengths) && got.some((g) => g.finishReason === 'stop'), `lengths ${lengths}`);
  assertSame(got, await naiveGenerate(model, rows, manyStops));
  model.dispose();
});

test('Qwen2 (RoPE, GQA, qkv bias, untied head): KV-cache sampling equals naive recomputation', async () => {
  const model = await loadPolicy(writeTinyQwen2());
  const prompts = [
    [1, 2, 3, 4, 5, 6, 7],
    [100, 200],
  ];
  for (const [, opts] of settings.slice(0, 2)) assertSame(await model.generate(prompts, opts), await naiveGenerate(model, prompts, opts));
  model.dispose();
});

test('a seeded row samples the same tokens alone or in a batch; logprobs match scoreLogprobs', async () => {
  const model = await tinyGpt(5);
  const prompts = [[1, 2, 3], [50, 60, 70, 80, 90, 100], [7]];
  const opts = { maxTokens: 10, temperature: 1, seed: 9 };
  const batch = await model.generate(prompts, opts);
  const single = await model.generate([prompts[0]], opts);
  assert.deepEqual(single[0].tokenIds, batch[0].tokenIds);
  const scored = await model.scoreLogprobs(batch.map((g, i) => ({ promptIds: prompts[i], completionIds: g.tokenIds })));
  batch.forEach((g, i) => g.logprobs.forEach((lp, j) => assert.ok(Math.abs(lp - scored[i][j]) < 1e-4, `row ${i} pos ${j}`)));
  model.dispose();
});

test('stop strings cut the text and end generation; maxTokens bounds length', async () => {
  const model = await tinyGpt(2);
  const [free] = await model.generate([[65, 66]], { maxTokens: 16, temperature: 0, seed: 1 });
  assert.equal(free.finishReason === 'length' ? free.tokenIds.length : 16, 16);
  // Greedy output is deterministic: stop at the text of its 3rd and 4th tokens.
  const stopAt = model.tokenizer.decode(free.tokenIds.slice(2, 4));
  assert.ok(stopAt.length > 0 && !stopAt.includes('\uFFFD'), `tokens 3-4 decode to ${JSON.stringify(stopAt)}`);
  const [cut] = await model.generate([[65, 66]], { maxTokens: 16, temperature: 0, seed: 1, stop: [stopAt] });
  assert.equal(cut.finishReason, 'stop');
  assert.ok(!cut.text.includes(stopAt), `text ${JSON.stringify(cut.text)} still has the stop string`);
  assert.ok(cut.tokenIds.length <= 4);
  await assert.rejects(model.generate([[]], { maxTokens: 2 }), /empty/);
  model.dispose();
});
