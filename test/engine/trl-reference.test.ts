/**
 * TRL as the reference for our GRPO-family loss: for each variant TRL also has (grpo, dr_grpo, dapo, GSPO as TRL's
 * sequence-level importance sampling, and grpo / dapo with a KL term), the torch engine's loss, built from the same
 * description the daemon sends (protocol/engine.ts TrainLoss), equals TRL's GRPOTrainer.compute_loss on the same model
 * (a tiny random Qwen2 made by transformers) and batch, fed as the dict TRL's own _generate_and_score_completions
 * returns; their gradients agree too. And the TF.js engine computes the same loss as the torch engine
 * (test/engine/parity.test.ts), so all three agree. test/engine/trl_reference.py does the Python side.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runPython } from '../helpers/torch.js';

interface Case {
  name: string;
  trl: number;
  ours: number;
  gradMaxDiff: number;
  gradMaxAbs: number;
  clipped: number;
  tokens: number;
  tisCapped: number;
}

let dir = '';
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'agl-trl-ref-'));
  runPython(['test/engine/hf_models.py', 'make', '--out', dir]);
});
after(() => rmSync(dir, { recursive: true, force: true }));

test("our loss equals TRL's compute_loss for grpo, dr_grpo, dapo, GSPO, the KL term and the truncated importance weight, gradients included", () => {
  const r = runPython<{ trl: string; cases: Case[] }>(['test/engine/trl_reference.py', '--model', join(dir, 'qwen2')]);
  assert.deepEqual(
    r.cases.map((c) => c.name),
    ['grpo', 'dr_grpo', 'dapo', 'gspo', 'grpo+kl', 'dapo+kl', 'dapo+tis', 'grpo+kl+tis'],
  );
  for (const c of r.cases) {
    console.log(
      `${c.name}: TRL ${r.trl} ${c.trl}, ours ${c.ours}; gradients differ by at most ${c.gradMaxDiff.toExponential(1)} (largest ${c.gradMaxAbs.toFixed(3)}); ${c.clipped}/${c.tokens} tokens clipped`,
    );
    assert.ok(Math.abs(c.trl - c.ours) <= 1e-5 * Math.abs(c.trl) + 1e-7, `${c.name}: TRL ${c.trl} vs ours ${c.ours}`);
    assert.ok(Math.abs(c.trl) > 1e-3, `${c.name}: a loss that means something`);
    assert.ok(c.gradMaxDiff <= 1e-5 * Math.max(1, c.gradMaxAbs), `${c.name}: gradients differ by ${c.gradMaxDiff}`);
    assert.ok(c.gradMaxAbs > 1e-2, `${c.name}: there is a gradient`);
    if (c.name.endsWith('+tis')) {
      // The ratio is against the update's own log-probs (exactly 1): the truncated importance weight does the work.
      assert.equal(c.clipped, 0, `${c.name}: a ratio of 1 never clips`);
      assert.ok(c.tisCapped > 0, `${c.name}: the importance weight's cap binds on some tokens`);
    } else assert.ok(c.clipped > 0, `${c.name}: clipping binds on some tokens`);
  }
});
