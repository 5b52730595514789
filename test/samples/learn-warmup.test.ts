/**
 * A sample's warm-up made in stages (samples/harness/learning.ts makeWarmup): sftFlags from a built-in model, then
 * each sftThen stage continuing from the checkpoint before it; the final checkpoint's agl-sft.json chains
 * every stage (as the shipped warm-ups' records do), and warmupCommands prints the same stages as command lines.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SFT_RECORD, type SftRecord } from '../../daemon/algorithm/sft-run.js';
import { makeWarmup, type SampleLearning, warmupCommands } from '../../samples/harness/learning.js';

test('makeWarmup runs sftFlags then each sftThen stage from the checkpoint before it (on its own --data where it names one); --sft-steps runs the first stage only', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-warmup-stages-'));
  try {
    const demos = join(dir, 'demos.jsonl');
    writeFileSync(demos, '{"prompt":"1+1=","completion":"2"}\n{"prompt":"2+2=","completion":"4"}\n');
    const drills = join(dir, 'drills.jsonl');
    writeFileSync(drills, '{"prompt":"3+3=","completion":"6"}\n{"prompt":"4+4=","completion":"8"}\n');
    const s: SampleLearning = {
      name: 'tiny',
      agent: 'x.ts#x',
      train: '',
      val: '',
      demos,
      config: '',
      sftFlags: { model: 'builtin:0.8m', steps: '2', 'batch-size': '2', context: '32', seed: '1' },
      sftThen: [
        { steps: '1', 'batch-size': '2', lr: '1e-3', seed: '2' },
        { data: drills, steps: '1', 'batch-size': '2', seed: '3' },
      ],
    };
    assert.deepEqual(warmupCommands(s, 'W'), [
      `agl sft --data ${demos} --out W-1 --model builtin:0.8m --steps 2 --batch-size 2 --context 32 --seed 1`,
      `agl sft --data ${demos} --out W-2 --model W-1 --steps 1 --batch-size 2 --lr 1e-3 --seed 2`,
      `agl sft --out W --model W-2 --data ${drills} --steps 1 --batch-size 2 --seed 3`,
    ]);
    const made = await makeWarmup(s, join(dir, 'full'));
    assert.equal(made.shipped, false);
    const r = JSON.parse(readFileSync(join(made.warmup, SFT_RECORD), 'utf8')) as SftRecord;
    const chain: SftRecord[] = [];
    for (let x: SftRecord | undefined = r; x; x = x.base) chain.push(x);
    assert.deepEqual(
      chain.map((x) => [x.data, x.steps, x.seed, x.lr, x.model]),
      [
        [drills, 1, 3, 1e-4, undefined],
        [demos, 1, 2, 1e-3, undefined],
        [demos, 2, 1, 1e-3, 'builtin:0.8m'],
      ],
    );

    const quick = await makeWarmup(s, join(dir, 'quick'), 1);
    const q = JSON.parse(readFileSync(join(quick.warmup, SFT_RECORD), 'utf8')) as SftRecord;
    assert.deepEqual([q.steps, q.seed, q.base], [1, 1, undefined]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
