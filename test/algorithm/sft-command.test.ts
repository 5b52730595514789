/**
 * `agl sft` writes, beside the checkpoint, a record of what made it (agl-sft.json): data, steps, lr, seed,
 * seconds, final loss; a run continued from a checkpoint keeps its base's record, and sftMinutes adds the
 * chain up (bench:learning reports a shipped warm-up's minutes from it). Real SFT on the built-in model.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run as sft } from '../../daemon/commands/sft.js';
import { SFT_RECORD, type SftRecord, sftMinutes } from '../../daemon/algorithm/sft-run.js';
import { SFT_COMMAND, SFT_DEFAULT_LR } from '../../protocol/cli-commands.js';
import { commandHelp } from '../../protocol/cli-options.js';

test('agl sft records how its checkpoint was made, and a continued run chains its base record', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-sft-cmd-'));
  try {
    const data = join(dir, 'demos.jsonl');
    writeFileSync(data, ['{"prompt":"2+3=","completion":"5"}', '{"prompt":"4+4=","completion":"8"}'].join('\n') + '\n');
    const first = join(dir, 'first'),
      second = join(dir, 'second');
    assert.equal(await sft(['--data', data, '--out', first, '--steps', '2', '--batch-size', '2', '--context', '32', '--seed', '3', '--data-dir', dir]), 0);
    const r1 = JSON.parse(readFileSync(join(first, SFT_RECORD), 'utf8')) as SftRecord;
    assert.equal(r1.model, 'builtin:0.8m');
    assert.deepEqual([r1.data, r1.steps, r1.batchSize, r1.lr, r1.seed], [data, 2, 2, SFT_DEFAULT_LR.newModel, 3]);
    assert.ok(Number.isFinite(r1.finalLoss) && r1.finalLoss > 0, `final loss ${r1.finalLoss}`);
    assert.equal(r1.base, undefined);
    assert.ok(existsSync(join(first, 'optimizer.safetensors')));

    assert.equal(await sft(['--data', data, '--model', first, '--out', second, '--steps', '1', '--batch-size', '2', '--weights-only', '--data-dir', dir]), 0);
    const r2 = JSON.parse(readFileSync(join(second, SFT_RECORD), 'utf8')) as SftRecord;
    assert.equal(r2.model, undefined, 'a checkpoint base is named by its record, not a built-in name');
    assert.equal(r2.lr, SFT_DEFAULT_LR.trained, 'a checkpoint continues at the smaller default lr');
    assert.deepEqual(r2.base, r1);
    assert.ok(!existsSync(join(second, 'optimizer.safetensors')));
    // sftMinutes sums the chain (made-up seconds, to check the arithmetic exactly)
    writeFileSync(join(second, SFT_RECORD), JSON.stringify({ ...r2, seconds: 90, base: { ...r1, seconds: 30 } }));
    assert.equal(sftMinutes(second), 2);
    assert.equal(sftMinutes(dir), undefined, 'no record, no minutes');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('agl sft --help shows the one declared default learning rate, for a new built-in model and for a trained one', () => {
  const help = commandHelp(SFT_COMMAND);
  const shown = /--lr.*\(default (\S+) for a new built-in model, else (\S+)\)/.exec(help);
  assert.ok(shown, help);
  assert.deepEqual([Number(shown[1]), Number(shown[2])], [SFT_DEFAULT_LR.newModel, SFT_DEFAULT_LR.trained]);
});
