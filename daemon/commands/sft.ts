/**
 * `agl sft --data demos.jsonl`: supervised warm-up from demonstrations (see daemon/algorithm/sft-trainer.ts for
 * the line format; dataset rows with corrected answers are demonstrations too, daemon/algorithm/sft-data.ts), writing a checkpoint folder that `agl train --model <folder>` starts from.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { engineOptions } from '../algorithm/config.js';
import { openPolicy } from '../algorithm/open-policy.js';
import { SFT_COMMAND } from '../../protocol/cli-commands.js';
import { commandHelp } from '../../protocol/cli-options.js';
import { engineFromFlags } from './engine-flags.js';
import { parseCommand } from './flags.js';
import { Progress } from './progress.js';
import { demoToPair, readJsonlLines, runSft } from '../algorithm/sft-trainer.js';
import { demonstrationsOf } from '../algorithm/sft-data.js';
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
  const model = a.model;
  const steps = num(a.steps, 'steps'),
    batchSize = num(a['batch-size'], 'batch-size');
  const lr = a.lr === undefined ? (model.startsWith('builtin:') ? 1e-3 : 1e-4) : num(a.lr, 'lr');
  const out = resolve(a.out ?? join(resolveDataDir(a['data-dir']), 'sft', new Date().toISOString().replace(/[:.]/g, '-')));
  let data: ReturnType<typeof demonstrationsOf>;
  try {
    data = demonstrationsOf(readJsonlLines(a.data), a.data);
  } catch (e) {
    process.stderr.write(`agl sft: ${(e as Error).message}\n`);
    return 2;
  }
  const demos = data.demos;
  const engine = engineOptions(engineFromFlags(a), { dataDir: resolveDataDir(a['data-dir']) });
  const policy = await openPolicy(model, {
    backend: a.backend,
    contextLength: num(a.context, 'context'),
    seed: num(a['init-seed'], 'init-seed'),
    ...engine,
  });
  try {
    const pairs = demos.map((d, i) => demoToPair(d, policy.tokenizer, `${a.data}:${data.lineOf[i]}`));
    if (data.rows)
      process.stderr.write(
        `agl sft: ${data.rows - data.uncorrected} of ${data.rows} dataset rows are corrected answers, trained as demonstrations of their final call` +
          `${data.uncorrected ? ` (${data.uncorrected} not corrected: left out)` : ''}\n`,
      );
    process.stderr.write(`agl sft: ${pairs.length} demonstrations, model ${policy.name} (${policy.backend}), ${steps} steps of ${batchSize}\n`);
    const bar = new Progress('sft', steps);
    const started = Date.now();
    const res = await runSft(policy, pairs, {
      steps,
      batchSize,
      lr,
      seed: num(a.seed, 'seed'),
      onStep: (step, loss, tps) => bar.update(step, `loss ${loss.toFixed(3)} ${Math.round(tps)} tok/s`),
    });
    bar.done();
    mkdirSync(out, { recursive: true });
    await policy.save(out);
    if (a['weights-only']) rmSync(join(out, 'optimizer.safetensors'), { force: true });
    // How the checkpoint was made, beside it (agl-sft.json): continued runs keep their base's record in `base`.
    const baseRecord = join(model, SFT_RECORD);
    const record: SftRecord = {
      data: a.data,
      model: model.startsWith('builtin:') ? model : undefined,
      steps: res.steps,
      batchSize,
      lr,
      seed: num(a.seed, 'seed'),
      seconds: Math.round((Date.now() - started) / 1000),
      finalLoss: Number(res.lastLoss.toFixed(4)),
      date: new Date().toISOString(),
      base: existsSync(baseRecord) ? (JSON.parse(readFileSync(baseRecord, 'utf8')) as SftRecord) : undefined,
    };
    writeFileSync(join(out, SFT_RECORD), `${JSON.stringify(record, null, 2)}\n`);
    process.stdout.write(
      `agl sft: ${res.steps} steps in ${((Date.now() - started) / 1000).toFixed(0)} s, final loss ${res.lastLoss.toFixed(3)}\ncheckpoint: ${out}\n`,
    );
    return 0;
  } finally {
    policy.dispose();
  }
}

/** The file `agl sft` writes beside a checkpoint: what made it (and, for a continued run, its base's record). */
export const SFT_RECORD = 'agl-sft.json';
export interface SftRecord {
  data: string;
  model?: string;
  steps: number;
  batchSize: number;
  lr: number;
  seed: number;
  seconds: number;
  finalLoss: number;
  date: string;
  base?: SftRecord;
}

/** Minutes of SFT that made a checkpoint (its record and its bases'), or undefined without a record. */
export function sftMinutes(checkpoint: string): number | undefined {
  const f = join(checkpoint, SFT_RECORD);
  if (!existsSync(f)) return undefined;
  let r: SftRecord | undefined = JSON.parse(readFileSync(f, 'utf8')) as SftRecord;
  let s = 0;
  for (; r; r = r.base) s += r.seconds;
  return s / 60;
}
