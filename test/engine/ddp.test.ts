/**
 * Data-parallel training on torch.distributed: the torch engine under torchrun with 2 ranks (gloo on this CPU), DDP
 * (every rank holds the model) and FSDP2 (`shard: fsdp`: each rank holds half of the weights and Adam moments),
 * produces the same parameters as 1 rank on the same batch (within 1e-5, two updates in a row): micro-batches split
 * evenly, unevenly, and fewer micro-batches than ranks; sharded, it samples the same tokens and saves the same folder,
 * which the TF.js engine opens. A rank that dies takes the engine down with an error that names it, instead of leaving
 * the daemon waiting.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SequencePair } from '../../daemon/model/policy-contract.js';
import { loadPolicy } from '../../daemon/model/policy.js';
import { EngineError, startTorchEngine } from '../../daemon/model/torch-engine.js';
import { torchPython } from '../helpers/torch.js';
import { compareFiles, tokenMeanGrpo } from './compare.js';

const WARMUP = join('samples', 'calc', 'warmup');

describe('torch engine on 2 ranks', () => {
  let scratch: string;
  let pairs: SequencePair[];
  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'agl-ddp-'));
    const e = await startTorchEngine(WARMUP, { python: torchPython() });
    const t = e.tokenizer;
    const prompts = ['Ann has 23 pens, gets 15 more. How many?', 'What is 42*17?', 'Sum 7 and 8.', 'Q:Bo had 9 apples and ate 4.'].map((q) =>
      t.encode(t.applyChatTemplate([{ role: 'user', content: q }])),
    );
    const gens = await e.generate([...prompts, ...prompts, ...prompts], { maxTokens: 20, temperature: 1, seed: 2 });
    pairs = gens.map((g, i) => ({ promptIds: prompts[i % 4], completionIds: g.tokenIds }));
    await e.close();
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  /** Two GRPO updates on `procs` ranks with `micro` sequences per micro-batch; returns the saved folder. */
  async function twoSteps(
    procs: number,
    micro: number,
    label: string,
    shard: 'none' | 'fsdp' = 'none',
  ): Promise<{ dir: string; engine: string; losses: number[]; sampled: number[][] }> {
    const e = await startTorchEngine(WARMUP, { python: torchPython(), procs, shard, optimizer: { microBatchSize: micro } });
    try {
      const losses: number[] = [];
      for (let s = 0; s < 2; s++) {
        const old = await e.scoreLogprobs(pairs);
        const samples = old.map((row, i) => ({ advantage: [1, -0.5, 0.25, -0.75][i % 4], oldLogprobs: row.map((x, t) => x + 0.2 * Math.sin(i + t)) }));
        const r = await e.trainStep(pairs, tokenMeanGrpo(samples));
        losses.push(r.loss);
        assert.equal(r.stats.sequences, pairs.length, 'every sequence counted once over the ranks');
      }
      const sampled = (
        await e.generate(
          pairs.slice(0, 3).map((p) => p.promptIds),
          { maxTokens: 12, temperature: 1, seed: 8 },
        )
      ).map((g) => g.tokenIds);
      const dir = join(scratch, label);
      await e.save(dir);
      return { dir, engine: e.backend, losses, sampled };
    } finally {
      await e.close();
    }
  }

  it("2 ranks give 1 rank's parameters: even, uneven and fewer micro-batches than ranks", async () => {
    for (const micro of [2, 5, 64]) {
      // 12 pairs: 6 micro-batches (3 per rank), 3 (2 + 1), 1 (rank 1 contributes zeros)
      const one = await twoSteps(1, micro, `one-${micro}`);
      const two = await twoSteps(2, micro, `two-${micro}`);
      assert.equal(two.engine, 'torch cpu x2 (gloo)');
      two.losses.forEach((l, i) => assert.ok(Math.abs(l - one.losses[i]) <= 1e-5 * Math.abs(one.losses[i]), `step ${i}: loss ${l} vs ${one.losses[i]}`));
      const w = compareFiles(join(one.dir, 'model.safetensors'), join(two.dir, 'model.safetensors'), 128);
      const m = compareFiles(join(one.dir, 'optimizer.safetensors'), join(two.dir, 'optimizer.safetensors'), 128);
      const moved = compareFiles(join(WARMUP, 'model.safetensors'), join(one.dir, 'model.safetensors'), 128);
      console.log(
        `micro-batches of ${micro}: max |1 rank - 2 ranks| parameters ${w.worst.toExponential(2)}, moments ${m.worst.toExponential(2)}; the updates moved weights by up to ${moved.worst.toExponential(2)}`,
      );
      assert.ok(w.worst < 1e-5, `parameter ${w.name} differs by ${w.worst}`);
      assert.ok(m.worst < 1e-5, `moment ${m.name} differs by ${m.worst}`);
      assert.ok(moved.worst > 1e-4);
    }
  });

  it("FSDP over 2 ranks gives 1 rank's parameters and moments, samples the same tokens, and saves a folder both engines open", async () => {
    for (const micro of [5, 64]) {
      // 12 pairs: 3 micro-batches (2 + 1: rank 1 runs a zero-weight one too), or 1 (rank 1 only zero-weight ones)
      const one = await twoSteps(1, micro, `fsdp-one-${micro}`);
      const two = await twoSteps(2, micro, `fsdp-two-${micro}`, 'fsdp');
      assert.equal(two.engine, 'torch cpu x2 (gloo, fsdp)');
      two.losses.forEach((l, i) => assert.ok(Math.abs(l - one.losses[i]) <= 1e-5 * Math.abs(one.losses[i]), `step ${i}: loss ${l} vs ${one.losses[i]}`));
      assert.deepEqual(two.sampled, one.sampled, 'sharded sampling (each layer gathered as it runs) gives the same tokens');
      const w = compareFiles(join(one.dir, 'model.safetensors'), join(two.dir, 'model.safetensors'), 128);
      const m = compareFiles(join(one.dir, 'optimizer.safetensors'), join(two.dir, 'optimizer.safetensors'), 128);
      console.log(`FSDP, micro-batches of ${micro}: max |1 rank - 2 ranks| parameters ${w.worst.toExponential(2)}, moments ${m.worst.toExponential(2)}`);
      assert.ok(w.worst < 1e-5, `parameter ${w.name} differs by ${w.worst}`);
      assert.ok(m.worst < 1e-5, `moment ${m.name} differs by ${m.worst}`);
    }
    const tf = await loadPolicy(join(scratch, 'fsdp-two-5'));
    assert.equal(tf.parameterCount, 843520, 'the sharded run saved the whole model, in the layout the TF.js engine reads');
    tf.dispose();
  });

  it('a rank that dies ends the engine with an error naming it', async () => {
    const e = await startTorchEngine(WARMUP, { python: torchPython(), procs: 2 });
    try {
      // torchrun's children are the ranks; rank 0 is the one that said hello.
      const children = (pid: number) => readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
      const ranks = children(e.pid!);
      assert.equal(ranks.length, 2, `torchrun runs 2 ranks: ${ranks}`);
      const other = ranks.find((p) => p !== e.hello!.pid)!;
      process.kill(other, 'SIGKILL');
      await assert.rejects(
        async () => {
          for (;;) {
            await e.scoreLogprobs(pairs.slice(0, 1));
            await new Promise((r) => setTimeout(r, 200));
          }
        },
        (err: Error) => {
          assert.ok(err instanceof EngineError, String(err));
          assert.match(err.message, /the torch engine \(pid \d+, 2 ranks\) (exited with code \d+|was killed by \w+)/);
          assert.match(err.message, /Its last output/);
          return true;
        },
      );
    } finally {
      await e.close();
    }
  });
});
