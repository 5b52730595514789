/**
 * bench/gpu.py runs where no GPU is (so the one prepared call on a lent GPU machine is not its first run): the tiny
 * shape on the CPU, the engine through its protocol beside transformers' generate and a plain PyTorch step, every
 * metric written, and a plain statement that no GPU was seen. `--plan` prints the memory table the README quotes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { torchPython } from '../helpers/torch.js';

test('bench/gpu.py --quick on a CPU writes every metric and says no GPU was seen', { timeout: 600_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-bench-gpu-'));
  try {
    const out = join(dir, 'gpu.json');
    const r = spawnSync(torchPython(), ['bench/gpu.py', '--quick', '--out', out], {
      encoding: 'utf8',
      timeout: 600_000,
      env: { ...process.env, HF_HUB_OFFLINE: '1' },
    });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`.slice(-4000));
    assert.match(r.stdout, /no CUDA device is visible: running the tiny shape on the CPU/);
    const { metrics, machine } = JSON.parse(readFileSync(out, 'utf8')) as { metrics: Record<string, number>; machine: string };
    assert.match(machine, /^cpu/);
    assert.equal(metrics.gpu_seen, 0);
    assert.equal(metrics['decoders.same_tokens_share'], 1, "the engine's decoder and transformers' sample the same tokens");
    assert.ok(metrics['decoders.max_logprob_diff']! < 1e-4);
    for (const k of [
      'tiny.engine.generate_tok_s',
      'tiny.engine.score_tok_s',
      'tiny.engine.train_tok_s',
      'tiny.engine.lora_train_tok_s',
      'tiny.engine.train_peak_gb',
      'tiny.peer.generate_tok_s',
      'tiny.peer.train_tok_s',
      'tiny.generate_ratio_vs_transformers',
      'tiny.train_ratio_vs_pytorch',
      'tiny.engine.mfu_vs_matmul',
    ])
      assert.ok(Number.isFinite(metrics[k]) && metrics[k]! > 0, `${k} = ${metrics[k]}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('bench/gpu.py --plan: what fits on 24, 48 and 80 GB for the 0.5B, 1.5B and 7B shapes', () => {
  const r = spawnSync(torchPython(), ['bench/gpu.py', '--plan'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const rows = r.stdout.split('\n').filter((l) => /^\| qwen2/.test(l));
  assert.equal(rows.length, 12);
  // a 7B model's full weights and moments fit no single GPU; its LoRA adapter on a frozen bf16 base fits 24 GB
  assert.match(r.stdout, /\| qwen2-7b \| 7\.62B \| full bf16 \| [\d.]+ \| no \| no \| no \|/);
  assert.match(r.stdout, /\| qwen2-7b \| 7\.62B \| LoRA r16 \(q,v\) \+ checkpointing \| [\d.]+ \| yes \| yes \| yes \|/);
});
