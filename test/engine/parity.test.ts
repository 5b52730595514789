/**
 * One loss definition, two engines: on the same weights and the same batch, the TF.js engine and the PyTorch engine
 * (a real child process, transformers models) give
 *   - completion log-probs within 1e-4, and the same greedy tokens,
 *   - the same loss (1e-5 relative), gradient norm and loss statistics (clipped tokens counted alike),
 *   - parameters and AdamW moments within 1e-5 after each update,
 * for each GRPO variant the trainer can ask for (built from `training.grpo` by grpoLoss: grpo token-mean with
 * clip-higher, dr_grpo's token-sum-norm, GSPO's sequence ratio, seq-mean with a k3 KL to a reference) and SFT's nll,
 * one after another on the same two models (so differences would accumulate), micro-batched (3 sequences per
 * micro-batch), with old log-probs moved off-policy so that clipping binds. Models: the shipped calc warm-up (a
 * built-in GPT-2 with saved Adam state) and tiny random Llama (untied head: linear layouts) and Qwen2 (tied, qkv
 * biases) made by transformers.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { grpoLoss, type GrpoConfigInput } from '../../daemon/algorithm/grpo.js';
import { loadPolicy, type TfPolicyModel } from '../../daemon/model/policy.js';
import type { SequencePair, TrainLoss } from '../../daemon/model/policy-contract.js';
import { readSafetensors } from '../../daemon/model/safetensors.js';
import { startTorchEngine, type TorchPolicyModel } from '../../daemon/model/torch-engine.js';
import { runPython, torchPython } from '../helpers/torch.js';
import { compareFiles } from './compare.js';

let fixtures = '';
before(() => {
  fixtures = mkdtempSync(join(tmpdir(), 'agl-parity-'));
  runPython(['test/engine/hf_models.py', 'make', '--out', fixtures]);
});
after(() => rmSync(fixtures, { recursive: true, force: true }));

const QUESTIONS = ['Ann has 23 pens, gets 15 more. How many?', 'What is 42*17?', 'Q:Bo had 9 apples and ate 4.', 'Sum 7 and 8.'];
// The ratio against the sampler's (here off-policy) log-probs, so that clipping binds; and once against the update's
// own, with the sampler's in a truncated importance weight whose cap binds.
const VARIANTS: [string, GrpoConfigInput | 'nll'][] = [
  ['grpo (token-mean, clip-higher)', { ratioBase: 'sampler' }],
  ['dr_grpo (token-sum-norm, no std scaling)', { variant: 'dr_grpo', lossNormTokens: 16, ratioBase: 'sampler' }],
  ['gspo (sequence ratio)', { variant: 'gspo', sequenceEpsilon: 0.02, sequenceEpsilonHigh: 0.03, ratioBase: 'sampler' }],
  ['seq-mean with k3 KL to a reference (beta 0.05)', { lossAggregation: 'seq-mean', beta: 0.05, ratioBase: 'sampler' }],
  ['ratio against the update, truncated importance weight (cap 1.2)', { ratioBase: 'update', tisCap: 1.2 }],
  ['nll (SFT)', 'nll'],
];

const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  assert.equal(a.length, b.length);
  let w = 0;
  for (let i = 0; i < a.length; i++) w = Math.max(w, Math.abs(a[i] - b[i]));
  return w;
};

for (const folder of ['calc-warmup', 'llama', 'qwen2'] as const) {
  describe(`tfjs and torch on ${folder}`, () => {
    const optimizer = { microBatchSize: 3 };
    const update = { lr: 1e-3 }; // every update's own learning rate, as the trainer sends it
    let pairs: SequencePair[];
    let scratch: string;
    let start: string;
    let reference: number[][];

    before(async () => {
      scratch = mkdtempSync(join(tmpdir(), `agl-parity-${folder}-`));
      // Both engines start every comparison from the same folder: weights and Adam moments. The models made by
      // transformers have no Adam state yet; a first step from zero moments divides each gradient by its own size
      // (g / (|g| + eps)), which turns rounding differences in near-zero gradients into lr-sized ones: one SFT step
      // (TF.js) gives them moments first.
      start = folder === 'calc-warmup' ? join('samples', 'calc', 'warmup') : join(scratch, 'start');
      const tfm = await loadPolicy(folder === 'calc-warmup' ? start : join(fixtures, folder), { optimizer });
      const tok = tfm.tokenizer;
      const prompts = QUESTIONS.map((q, i) =>
        tok.encode(
          tok.applyChatTemplate(
            i % 2
              ? [
                  { role: 'system', content: 'Be brief.' },
                  { role: 'user', content: q },
                ]
              : [{ role: 'user', content: q }],
          ),
        ),
      );
      const sampled = await tfm.generate([...prompts, ...prompts], { maxTokens: 16, temperature: 1, seed: 5 });
      pairs = sampled.map((g, i) => ({ promptIds: prompts[i % prompts.length], completionIds: g.tokenIds.length ? g.tokenIds : [tok.eosTokenIds[0]] }));
      if (folder !== 'calc-warmup') {
        await tfm.trainStep(pairs, { kind: 'nll' }, update);
        await tfm.save(start);
      }
      reference = await tfm.scoreLogprobs(pairs);
      tfm.dispose();
    });
    after(() => rmSync(scratch, { recursive: true, force: true }));

    /** Both engines on the start folder. */
    async function both(): Promise<[TfPolicyModel, TorchPolicyModel]> {
      return [await loadPolicy(start, { optimizer }), await startTorchEngine(start, { python: torchPython(), optimizer, attn: 'eager' })];
    }

    it('completion log-probs within 1e-4, the same greedy tokens', async () => {
      const [tfm, th] = await both();
      try {
        const [mine, theirs] = [await tfm.scoreLogprobs(pairs), await th.scoreLogprobs(pairs)];
        const worst = Math.max(...mine.map((r, i) => maxDiff(r, theirs[i])));
        assert.ok(worst < 1e-4, `max |tfjs - torch| log-prob = ${worst}`);
        const prompts = pairs.slice(0, 4).map((p) => p.promptIds);
        const [a, b] = [await tfm.generate(prompts, { maxTokens: 12, temperature: 0 }), await th.generate(prompts, { maxTokens: 12, temperature: 0 })];
        assert.deepEqual(
          b.map((g) => g.tokenIds),
          a.map((g) => g.tokenIds),
        );
        assert.deepEqual(
          b.map((g) => g.text),
          a.map((g) => g.text),
        );
      } finally {
        tfm.dispose();
        await th.close();
      }
    });

    for (const [label, cfg] of VARIANTS) {
      it(`${label}: the same loss, statistics and update`, async () => {
        const [tfm, th] = await both();
        try {
          // Off-policy old log-probs (a fixed pattern of shifts up to 0.4): ratios leave the clip range on some tokens.
          const samples = reference.map((row, i) => ({
            advantage: [1.3, -0.7, 0.4, -1.1, 0.9, -0.2, 0.6, -0.5][i % 8],
            oldLogprobs: row.map((x, t) => x + 0.4 * Math.sin(3 * i + 5 * t)),
            refLogprobs: row.map((x, t) => x - 0.3 * Math.cos(2 * i + t)),
          }));
          const loss: TrainLoss = cfg === 'nll' ? { kind: 'nll' } : grpoLoss(samples, cfg);
          const [a, b] = [await tfm.trainStep(pairs, loss, update), await th.trainStep(pairs, loss, update)];
          console.log(`${folder} ${label}: loss ${a.loss} / ${b.loss}, grad norm ${a.gradNorm} / ${b.gradNorm}, clipped ${a.stats.clipped}`);
          assert.ok(Math.abs(a.loss - b.loss) <= 1e-5 * Math.abs(a.loss), `loss tfjs ${a.loss} vs torch ${b.loss}`);
          assert.ok(Math.abs(a.loss) > 1e-3, `a loss that means something: ${a.loss}`);
          assert.ok(Math.abs(a.gradNorm - b.gradNorm) <= 1e-4 * a.gradNorm, `grad norm ${a.gradNorm} vs ${b.gradNorm}`);
          assert.equal(b.tokens, a.tokens);
          assert.equal(b.stats.tokens, a.stats.tokens);
          assert.equal(b.stats.sequences, a.stats.sequences);
          assert.equal(b.stats.clipped, a.stats.clipped, 'the same tokens clipped');
          if (cfg !== 'nll' && cfg.ratioBase === 'update') {
            assert.equal(a.stats.clipped, 0, 'a ratio of 1 never clips');
            assert.ok(a.stats.tisCapped > 0, "the importance weight's cap binds on some tokens");
            assert.equal(b.stats.tisCapped, a.stats.tisCapped, 'the same tokens at the cap');
          } else if (cfg !== 'nll') assert.ok(a.stats.clipped > 0, 'clipping binds on some tokens');
          for (const k of ['klSum', 'entropySum', 'ratioSum', 'gapSum'] as const) {
            assert.ok(Math.abs(a.stats[k] - b.stats[k]) <= 1e-4 * Math.max(1, Math.abs(a.stats[k])), `${k}: ${a.stats[k]} vs ${b.stats[k]}`);
          }
          if (cfg !== 'nll' && (cfg.beta ?? 0) > 0) assert.ok(a.stats.klSum > 0, 'the KL term is there');
          const [ta, tb] = [join(scratch, `tfjs-${label.split(' ')[0]}`), join(scratch, `torch-${label.split(' ')[0]}`)];
          await tfm.save(ta);
          await th.save(tb);
          const w = compareFiles(join(ta, 'model.safetensors'), join(tb, 'model.safetensors'), tfm.config.dModel);
          assert.ok(w.worst < 1e-5, `parameter ${w.name} differs by ${w.worst} after the update`);
          const m = compareFiles(join(ta, 'optimizer.safetensors'), join(tb, 'optimizer.safetensors'), tfm.config.dModel);
          assert.ok(m.worst < 1e-5, `Adam moment ${m.name} differs by ${m.worst} after the update`);
          assert.equal(readSafetensors(join(tb, 'optimizer.safetensors')).metadata.step, readSafetensors(join(ta, 'optimizer.safetensors')).metadata.step);
          const moved = compareFiles(join(start, 'model.safetensors'), join(ta, 'model.safetensors'), tfm.config.dModel);
          assert.ok(moved.worst > 1e-4, `the update moved the weights (by up to ${moved.worst})`);
          console.log(
            `  max |tfjs - torch|: parameters ${w.worst.toExponential(2)} (${w.name}), moments ${m.worst.toExponential(2)}; the update itself ${moved.worst.toExponential(2)}`,
          );
        } finally {
          tfm.dispose();
          await th.close();
        }
      });
    }
  });
}

describe('every shipped warm-up runs on both engines', () => {
  for (const sample of ['calc', 'sql', 'rag']) {
    it(`samples/${sample}/warmup: the same log-probs and greedy answer on tfjs and torch`, async () => {
      const dir = join('samples', sample, 'warmup');
      const tfm = await loadPolicy(dir);
      const th = await startTorchEngine(dir, { python: torchPython() });
      try {
        const tok = tfm.tokenizer;
        const prompt = tok.encode(tok.applyChatTemplate([{ role: 'user', content: QUESTIONS[0] }]));
        const [greedyTf] = await tfm.generate([prompt], { maxTokens: 24, temperature: 0 });
        const [greedyTorch] = await th.generate([prompt], { maxTokens: 24, temperature: 0 });
        assert.deepEqual(greedyTorch.tokenIds, greedyTf.tokenIds);
        const sampled = await tfm.generate([prompt, prompt, prompt], { maxTokens: 24, temperature: 1, seed: 3 });
        const pairs = sampled.map((g) => ({ promptIds: prompt, completionIds: g.tokenIds }));
        const [a, b] = [await tfm.scoreLogprobs(pairs), await th.scoreLogprobs(pairs)];
        const worst = Math.max(...a.map((r, i) => maxDiff(r, b[i])));
        assert.ok(worst < 1e-4, `max |tfjs - torch| = ${worst}`);
        assert.equal(th.hello!.model.step, JSON.parse(readSafetensors(join(dir, 'optimizer.safetensors')).metadata.step ?? '0'), 'its Adam state came along');
      } finally {
        tfm.dispose();
        await th.close();
      }
    });
  }
});
