/**
 * `agl sft --data demos.jsonl`: supervised warm-up from demonstrations (see daemon/algorithm/sft-trainer.ts for
 * the line format; dataset rows with corrected answers are demonstrations too, daemon/algorithm/sft-data.ts), writing a
 * checkpoint folder that `agl train --model <folder>` starts from. This command parses its flags and the
 * demonstrations, and calls the run (daemon/algorithm/sft-run.ts) with a progress bar.
 */
import { join, resolve } from 'node:path';
import { engineOptions } from '../algorithm/config.js';
import { SFT_COMMAND } from '../../protocol/cli-commands.js';
import { commandHelp } from '../../protocol/cli-options.js';
import { engineFromFlags } from './engine-flags.js';
import { parseCommand } from './flags.js';
import { Progress } from './progress.js';
import { readJsonlLines } from '../algorithm/sft-trainer.js';
import { demonstrationsOf } from '../algorithm/sft-data.js';
import { runSftCheckpoint, sftDefaultLr } from '../algorithm/sft-run.js';
import { resolveDataDir } from '../../client/daemon-state.js';

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand(SFT_COMMAND, argv);
  if ('exit' in parsed) return parsed.exit;
  const a = parsed.values;
  if (!a.data) {
    process.stderr.write(`agl sft: --data is required\n\n${commandHelp(SFT_COMMAND)}`);
    return 2;
  }
  const num = (v: string, name: string) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got '${v}'`);
    return n;
  };
  const steps = num(a.steps, 'steps');
  let demonstrations: ReturnType<typeof demonstrationsOf>;
  try {
    demonstrations = demonstrationsOf(readJsonlLines(a.data), a.data);
  } catch (e) {
    process.stderr.write(`agl sft: ${(e as Error).message}\n`);
    return 2;
  }
  const out = resolve(a.out ?? join(resolveDataDir(a['data-dir']), 'sft', new Date().toISOString().replace(/[:.]/g, '-')));
  const bar = new Progress('sft', steps);
  const record = await runSftCheckpoint({
    data: a.data,
    demonstrations,
    model: a.model,
    open: {
      backend: a.backend,
      contextLength: num(a.context, 'context'),
      seed: num(a['init-seed'], 'init-seed'),
      ...engineOptions(engineFromFlags(a), { dataDir: resolveDataDir(a['data-dir']) }),
    },
    out,
    steps,
    batchSize: num(a['batch-size'], 'batch-size'),
    lr: a.lr === undefined ? sftDefaultLr(a.model) : num(a.lr, 'lr'),
    seed: num(a.seed, 'seed'),
    weightsOnly: Boolean(a['weights-only']),
    say: (line) => process.stderr.write(`agl sft: ${line}\n`),
    onStep: (step, loss, tps) => bar.update(step, `loss ${loss.toFixed(3)} ${Math.round(tps)} tok/s`),
  });
  bar.done();
  process.stdout.write(`agl sft: ${record.steps} steps in ${record.seconds} s, final loss ${record.finalLoss.toFixed(3)}\ncheckpoint: ${out}\n`);
  return 0;
}
