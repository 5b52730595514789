/**
 * Data-parallel training on torch.distributed: the torch engine under torchrun with 2 ranks (gloo on this CPU), DDP
 * (every rank holds the model) and FSDP2 (`shard: fsdp`: each rank holds half of the weights and Adam moments),
 * produces the same parameters as 1 rank on the same batch (within 1e-5, six updates in a row): micro-batches split
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
import { EngineError, startTorchEngine, type TorchPolicyModel } from '../../daemon/model/torch-engine.js';
import { torchPython } from '../helpers/torch.js';
import { compareFiles, tokenMeanGrpo } from './compare.js';

const WARMUP = join('samples', 'calc', 'warmup');

/** Sequences per micro-batch, one phase of two updates each: 12 pairs make 6 micro-batches (3 per rank), 3 (2 + 1: under
 * FSDP rank 1 runs a zero-weight one too), and 1 (rank 1 contributes zeros, or under FSDP only zero-weight ones). The
 * first is each engine's configured size; the others are sent with each update (they hold for that update only). */
const PHASES = [2, 5, 64];

/** What an engine did in one phase: its losses, what it sampled after, and the folder it saved then. */
interface Phase {
  micro: number;
  dir: string;
  losses: number[];
  sampled: number[][];
}

describe('torch engine on 2 ranks', () => {
  let scratch: string;
  let pairs: SequencePair[];
  let oneRank: Phase[]; // the reference: 1 rank through every phase
  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'agl-ddp-'));
    const e = await startTorchEngine(WARMUP, { python: torchPython(), optimizer: { microBatchSize: PHASES[0] } });
    try {
      const t = e.tokenizer;
      const prompts = ['Ann has 23 pens, gets 15 more. How many?', 'What is 42*17?', 'Sum 7 and 8.', 'Q:Bo had 9 apples and ate 4.'].map((q) =>
        t.encode(t.applyChatTemplate([{ role: 'user', content: q }])),
      );
      const gens = await e.generate([...prompts, ...prompts, ...prompts], { maxTokens: 20, temperature: 1, seed: 2 });
      pairs = gens.map((g, i) => ({ promptIds: prompts[i % 4], completionIds: g.tokenIds }));
      oneRank = await phases(e, 'one');
    } finally {
      await e.close();
    }
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  /** Every phase on engine `e` (started from the warm-up with PHASES[0] per micro-batch), one after another: two GRPO
   * updates, a sample, a save. Each update lands on the one before, so differences between engines would accumulate. */
  async function phases(e: TorchPolicyModel, label: string): Promise<Phase[]> {
    const out: Phase[] = [];
    for (const micro of PHASES) {
      const losses: number[] = [];
      for (let s = 0; s < 2; s++) {
        const old = await e.scoreLogprobs(pairs);
        const samples = old.map((row, i) => ({ advantage: [1, -0.5, 0.25, -0.75][i % 4], oldLogprobs: row.map((x, t) => x + 0.2 * Math.sin(i + t)) }));
        const r = await e.trainStep(pairs, tokenMeanGrpo(samples), micro === PHASES[0] ? { lr: 1e-3 } : { lr: 1e-3, microBatchSize: micro });
        losses.push(r.loss);
        assert.equal(r.stats.sequences, pairs.length, 'every sequence counted once over the ranks');
      }
      const prompts = pairs.slice(0, 3).map((p) => p.promptIds);
      const sampled = (await e.generate(prompts, { maxTokens: 12, temperature: 1, seed: 8 })).map((g) => g.tokenIds);
      const dir = join(scratch, `${label}-${micro}`);
      await e.save(dir);
      out.push({ micro, dir, losses, sampled });
    }
    return out;
  }

  /** Phase by phase, `two` (2 ranks) against 1 rank: the same losses, parameters and Adam moments (1e-5). */
  function assertOneRanks(two: Phase[], what: string): void {
    two.forEach((p, k) => {
      const one = oneRank[k];
      p.losses.forEach((l, i) =>
        assert.ok(Math.abs(l - one.losses[i]) <= 1e-5 * Math.abs(one.losses[i]), `${p.micro}, step ${i}: loss ${l} vs ${one.losses[i]}`),
      );
      const w = compareFiles(join(one.dir, 'model.safetensors'), join(p.dir, 'model.safetensors'), 128);
      const m = compareFiles(join(one.dir, 'optimizer.safetensors'), join(p.dir, 'optimizer.safetensors'), 128);
      const moved = compareFiles(join(k === 0 ? WARMUP : oneRank[k - 1].dir, 'model.safetensors'), join(one.dir, 'model.safetensors'), 128);
      console.log(
        `${what}, micro-batches of ${p.micro}: max |1 rank - 2 ranks| parameters ${w.worst.toExponential(2)}, moments ${m.worst.toExponential(2)}; the phase's updates moved weights by up to ${moved.worst.toExponential(2)}`,
      );
      assert.ok(w.worst < 1e-5, `micro-batches of ${p.micro}: parameter ${w.name} differs by ${w.worst}`);
      assert.ok(m.worst < 1e-5, `micro-batches of ${p.micro}: moment ${m.name} differs by ${m.worst}`);
      assert.ok(moved.worst > 1e-4);
    });
  }

  it("2 ranks give 1 rank's parameters: even, uneven and fewer micro-batches than ranks", async () => {
    const e = await startTorchEngine(WARMUP, { python: torchPython(), procs: 2, optimizer: { microBatchSize: PHASES[0] } });
    try {
      assert.equal(e.backend, 'torch cpu x2 (gloo)');
      assertOneRanks(await phases(e, 'ddp'), 'DDP');
    } finally {
      await e.close();
    }
  });

  it("FSDP over 2 ranks gives 1 rank's parameters and moments, samples the same tokens, and saves a folder both engines open", async () => {
    const e = await startTorchEngine(WARMUP, { python: torchPython(), procs: 2, shard: 'fsdp', optimizer: { microBatchSize: PHASES[0] } });
    let two: Phase[];
    try {
      assert.equal(e.backend, 'torch cpu x2 (gloo, fsdp)');
      two = await phases(e, 'fsdp');
    } finally {
      await e.close();
    }
    assertOneRanks(two, 'FSDP');
    two.forEach((p, k) => assert.deepEqual(p.sampled, oneRank[k].sampled, 'sharded sampling (each layer gathered as it runs) gives the same tokens'));
    const tf = await loadPolicy(two[1].dir);
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
