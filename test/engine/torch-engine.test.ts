/**
 * The PyTorch engine behind the policy contract, as the daemon uses it: a real Python child process on the shipped
 * calc warm-up. Sampling (seeds, rows independent of batching, EOS, stop strings, max tokens, top-p, streaming),
 * micro-batching, save / load (weights, Adam state: two steps straight = one, save, reload, one), an update's own
 * optimizer settings holding for that update only, and what goes wrong: bad pairs (the TF.js engine's messages; the
 * engine keeps serving), a folder that is no model, one that transformers cannot open, a missing Python, one without
 * torch, and a kill -9 in the middle of a training step.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SequencePair } from '../../daemon/model/policy-contract.js';
import { readSafetensors } from '../../daemon/model/safetensors.js';
import { EngineError, startTorchEngine, type TorchPolicyModel } from '../../daemon/model/torch-engine.js';
import { torchPython } from '../helpers/torch.js';
import { maxParamDiff, tokenMeanGrpo } from './compare.js';

const WARMUP = join('samples', 'calc', 'warmup');
const opts = () => ({ python: torchPython(), optimizer: { microBatchSize: 16 } });
/** Each update's own learning rate (a policy has none of its own): the warm-up's, as it was trained. */
const LR = { lr: 1e-3 };

function prompt(engine: TorchPolicyModel, q: string): number[] {
  const t = engine.tokenizer;
  return t.encode(t.applyChatTemplate([{ role: 'user', content: q }]));
}

const D = 128; // the warm-up's width

// One engine on the warm-up for the file: sampling and bad requests leave its weights as they were; the learning-rate
// test trains it, and the kill -9 test, the last, kills it. Tests that compare weights start their own.
let e: TorchPolicyModel;
before(async () => {
  e = await startTorchEngine(WARMUP, opts());
});
after(async () => {
  await e.close();
});

describe('torch engine: sampling', () => {
  it('says what it runs: torch and transformers versions, device, ranks, the model', () => {
    assert.ok(e.hello);
    assert.match(e.hello.torch, /^2\.13\.0/);
    assert.match(e.hello.transformers, /^5\./);
    assert.equal(e.hello.device, 'cpu');
    assert.equal(e.hello.ranks, 1);
    assert.equal(e.hello.model.family, 'gpt');
    assert.equal(e.hello.model.parameters, 843520);
    assert.equal(e.contextLength, 128);
    assert.equal(e.backend, 'torch cpu');
    assert.equal(e.hello.model.step, 1200, "the warm-up's Adam step count");
  });

  it('a seed gives the same tokens, alone or beside other prompts; another seed other tokens', async () => {
    const a = prompt(e, 'Ann has 23 pens, gets 15 more. How many?'),
      b = prompt(e, 'What is 42*17?');
    const alone = await e.generate([a], { maxTokens: 24, temperature: 1, seed: 9 });
    const batched = await e.generate([a, b, b], { maxTokens: 24, temperature: 1, seed: 9 });
    assert.deepEqual(batched[0].tokenIds, alone[0].tokenIds);
    assert.deepEqual((await e.generate([a], { maxTokens: 24, temperature: 1, seed: 9 }))[0].tokenIds, alone[0].tokenIds);
    const others = await Promise.all([10, 11, 12, 13].map((seed) => e.generate([a], { maxTokens: 24, temperature: 1.5, seed })));
    assert.ok(new Set(others.map((g) => g[0].tokenIds.join(','))).size > 1, 'different seeds sample differently');
    const lp = alone[0].logprobs;
    assert.equal(lp.length, alone[0].tokenIds.length);
    assert.ok(lp.every((x) => x <= 0 && Number.isFinite(x)));
  });

  it("log-probs are the untempered model's: what scoreLogprobs gives the same tokens", async () => {
    const p = prompt(e, 'Q:Bo had 9 apples and ate 4.');
    const [g] = await e.generate([p], { maxTokens: 20, temperature: 1.7, seed: 3 });
    const [scored] = await e.scoreLogprobs([{ promptIds: p, completionIds: g.tokenIds }]);
    scored.forEach((x, i) => assert.ok(Math.abs(x - g.logprobs[i]) < 1e-4, `token ${i}: ${x} vs ${g.logprobs[i]}`));
  });

  it('stops at EOS (kept as the last token, not in the text), at a stop string (cut from the text), or at max tokens', async () => {
    const p = prompt(e, 'Ann has 23 pens, gets 15 more. How many?');
    const [greedy] = await e.generate([p], { maxTokens: 40, temperature: 0 });
    assert.equal(greedy.finishReason, 'stop');
    assert.ok(e.tokenizer.eosTokenIds.includes(greedy.tokenIds.at(-1)!));
    assert.equal(greedy.text, e.tokenizer.decode(greedy.tokenIds.slice(0, -1)));
    const [short] = await e.generate([p], { maxTokens: 2, temperature: 0 });
    assert.deepEqual(short.tokenIds, greedy.tokenIds.slice(0, 2));
    assert.equal(short.finishReason, 'length');
    const stopAt = greedy.text.slice(1, 2);
    assert.ok(stopAt, `the greedy answer has two characters: ${greedy.text}`);
    const [stopped] = await e.generate([p], { maxTokens: 40, temperature: 0, stop: [stopAt] });
    assert.equal(stopped.finishReason, 'stop');
    assert.equal(stopped.text, greedy.text.slice(0, greedy.text.indexOf(stopAt)));
    const [nucleus] = await e.generate([p], { maxTokens: 40, temperature: 1, topP: 1e-6, seed: 4 });
    assert.deepEqual(nucleus.tokenIds, greedy.tokenIds, 'top-p that keeps one token is greedy');
    const [topK] = await e.generate([p], { maxTokens: 40, temperature: 1, topK: 1, seed: 4 });
    assert.deepEqual(topK.tokenIds, greedy.tokenIds, 'top-k 1 is greedy');
  });

  it('streams each token as it is sampled', async () => {
    const p = prompt(e, 'What is 42*17?');
    const seen: [number, number][] = [];
    const [g] = await e.generate([p, p], {
      maxTokens: 16,
      temperature: 1,
      seed: 5,
      onToken: (i, t) => {
        if (i === 1) seen.push([t, i]);
      },
    });
    const [again] = (await e.generate([p, p], { maxTokens: 16, temperature: 1, seed: 5 })).slice(1);
    assert.deepEqual(
      seen.map(([t]) => t),
      again.tokenIds,
    );
    assert.ok(g.tokenIds.length > 0);
  });

  it('bad pairs are refused with an error naming the field, and the engine keeps serving', async () => {
    await assert.rejects(e.trainStep([{ promptIds: [], completionIds: [1] }], { kind: 'nll' }, LR), /pairs\[0\]\.promptIds: empty/);
    await assert.rejects(
      e.trainStep([{ promptIds: Array(100).fill(1), completionIds: Array(40).fill(1) }], { kind: 'nll' }, LR),
      /pairs\[0\]: 100\+40 tokens exceed the context of 128/,
    );
    await assert.rejects(e.generate([[]], { maxTokens: 4 }), /prompts\[0\]: empty/);
    await assert.rejects(e.scoreLogprobs([{ promptIds: [], completionIds: [1] }]), /promptIds: empty/);
    await assert.rejects(
      e.scoreLogprobs([{ promptIds: [1], completionIds: [5, 264] }]),
      /pairs\[0\]\.completionIds\[1\]: token id 264 is outside the vocabulary \[0, 264\)/,
    );
    await assert.rejects(e.trainStep([{ promptIds: [1, 2], completionIds: [3] }], tokenMeanGrpo([]), LR), /loss\.samples: one per pair is needed/);
    const [g] = await e.generate([prompt(e, 'Still there?')], { maxTokens: 4, temperature: 0 });
    assert.ok(g.tokenIds.length > 0);
  });
});

describe('torch engine: training, save and load', () => {
  let scratch: string;
  let pairs: SequencePair[];
  // What the tests compare with: an engine on the warm-up (all 9 pairs in one micro-batch of 16) after one step on
  // `pairs` (saved in 'half') and after a second (saved in 'straight').
  let one: { loss: number };
  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'agl-torch-engine-'));
    const prompts = ['Ann has 23 pens, gets 15 more. How many?', 'What is 42*17?', 'Sum 7 and 8.'].map((q) => prompt(e, q));
    const gens = await e.generate([...prompts, ...prompts, ...prompts], { maxTokens: 16, temperature: 1, seed: 1 });
    pairs = gens.map((g, i) => ({ promptIds: prompts[i % 3], completionIds: g.tokenIds }));
    const straight = await startTorchEngine(WARMUP, opts());
    try {
      one = await straight.trainStep(pairs, { kind: 'nll' }, LR);
      await straight.save(join(scratch, 'half'));
      await straight.trainStep(pairs, { kind: 'nll' }, LR);
      await straight.save(join(scratch, 'straight'));
    } finally {
      await straight.close();
    }
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('micro-batching does not change the update (2 per micro-batch vs all in one)', async () => {
    const small = await startTorchEngine(WARMUP, { ...opts(), optimizer: { microBatchSize: 2 } });
    const a = await small.trainStep(pairs, { kind: 'nll' }, LR);
    assert.ok(Math.abs(a.loss - one.loss) < 1e-6 * Math.abs(a.loss), `loss ${a.loss} vs ${one.loss}`);
    await small.save(join(scratch, 'small'));
    await small.close();
    assert.ok(maxParamDiff(join(scratch, 'small'), join(scratch, 'half'), D) < 1e-6);
    assert.ok(maxParamDiff(WARMUP, join(scratch, 'half'), D) > 1e-4, 'the step moved the weights');
  });

  it('save then load restores weights and Adam state: two steps straight = one, save, reload, one', async () => {
    const resumed = await startTorchEngine(join(scratch, 'half'), opts());
    assert.equal(resumed.hello!.model.step, 1201);
    await resumed.trainStep(pairs, { kind: 'nll' }, LR);
    await resumed.save(join(scratch, 'resumed'));
    await resumed.close();
    assert.ok(maxParamDiff(join(scratch, 'straight'), join(scratch, 'resumed'), D) < 1e-6);
    const meta = readSafetensors(join(scratch, 'resumed', 'optimizer.safetensors')).metadata;
    assert.equal(meta.step, '1202');
    assert.equal(meta.layout, 'disk');
    assert.equal(JSON.parse(meta.config).microBatchSize, 16);
  });

  it('the learning rate a step carries is the one used, for that step only; a step without one is refused naming lr, and checkpoints save none', async () => {
    const configured = e.optimizerConfig; // the file's engine: still the warm-up's weights
    assert.equal(configured.lr, undefined, "the rate the warm-up's folder saved (an older default) is not read: a policy has none of its own");
    const r = await e.trainStep(pairs, { kind: 'nll' }, { lr: 0 });
    assert.ok(r.gradNorm > 0);
    await e.save(join(scratch, 'lr0'));
    await e.trainStep(pairs, { kind: 'nll' }, { lr: 0.1 });
    await e.save(join(scratch, 'at-0.1'));
    await assert.rejects(e.trainStep(pairs, { kind: 'nll' }), /lr: the update carries no learning rate/);
    // The engine itself refuses a request without settings (the configured ones hold no rate).
    await assert.rejects(e.call('train_step', { pairs, loss: { kind: 'nll' } }), /optimizer\.lr: the update carries no learning rate/);
    await e.save(join(scratch, 'then-refused'));
    assert.ok(maxParamDiff(WARMUP, join(scratch, 'lr0'), D) < 1e-9, 'lr 0: nothing moved (weight decay is scaled by lr too)');
    // AdamW moves a weight by about its learning rate per update (|m / sqrt(v)| is about 1 or less).
    const first = maxParamDiff(join(scratch, 'lr0'), join(scratch, 'at-0.1'), D);
    assert.ok(first > 0.02, `lr 0.1 moved the weights by ${first}`);
    assert.equal(maxParamDiff(join(scratch, 'at-0.1'), join(scratch, 'then-refused'), D), 0, 'the refused steps moved nothing');
    const saved = JSON.parse(readSafetensors(join(scratch, 'then-refused', 'optimizer.safetensors')).metadata.config);
    assert.equal('lr' in saved, false, `saved settings: ${JSON.stringify(saved)}`);
    assert.deepEqual(saved, configured, "the engine holds its configured settings still: a checkpoint records them, not an update's own");
  });
});

describe('torch engine: what goes wrong', () => {
  let scratch: string;
  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'agl-torch-bad-'));
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('a folder that is no model folder, and one transformers cannot open, are named with the reason', async () => {
    await assert.rejects(startTorchEngine(scratch, opts()), /has no config\.json: is it a model folder/);
    const broken = join(scratch, 'broken');
    mkdirSync(broken);
    copyFileSync(join(WARMUP, 'config.json'), join(broken, 'config.json'));
    writeFileSync(join(broken, 'model.safetensors'), 'not a safetensors file');
    await assert.rejects(startTorchEngine(broken, opts()), (e: Error) => {
      assert.ok(e instanceof EngineError);
      assert.match(e.message, /could not load the model: transformers 5\.\S+ cannot open the model folder .*broken/);
      return true;
    });
  });

  it('a missing Python and a Python without torch say what to install', async () => {
    await assert.rejects(startTorchEngine(WARMUP, { python: join(scratch, 'no-such-python') }), /Python was not found .*agl engine install torch/);
    const bare = join(scratch, 'bare-venv');
    const { spawnSync } = await import('node:child_process');
    const made = spawnSync('python3', ['-m', 'venv', '--without-pip', bare]);
    assert.equal(made.status, 0, String(made.stderr));
    await assert.rejects(
      startTorchEngine(WARMUP, { python: join(bare, 'bin', 'python') }),
      /lacks a package the torch engine needs.*agl engine install torch/s,
    );
  });

  it('kill -9 in the middle of a training step: that call and every later one fail, naming what happened', async () => {
    const p = prompt(e, 'Ann has 23 pens, gets 15 more. How many?');
    // ~30k tokens: a few seconds of work, so the kill lands while the step runs.
    const many: SequencePair[] = Array.from({ length: 256 }, (_, i) => ({
      promptIds: p,
      completionIds: Array.from({ length: 80 }, (_, t) => 48 + ((i + t) % 10)),
    }));
    const step = e.trainStep(many, { kind: 'nll' }, LR);
    await new Promise((r) => setTimeout(r, 300));
    process.kill(e.hello!.pid, 'SIGKILL');
    await assert.rejects(step, (err: Error) => {
      assert.ok(err instanceof EngineError);
      assert.match(err.message, new RegExp(`the torch engine \\(pid ${e.pid}\\) was killed by SIGKILL during train_step`));
      return true;
    });
    await assert.rejects(e.generate([p], { maxTokens: 2 }), /was killed by SIGKILL/);
  });
});
