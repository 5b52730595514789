/**
 * An SFT run, from demonstrations to a checkpoint folder that `agl train --model <folder>` starts from: the policy
 * opened, trained (sft-trainer.ts runSft), saved, and beside it a record of what made it (agl-sft.json; a run continued
 * from a checkpoint keeps its base's record). What `agl sft` calls once it has parsed its flags (daemon/commands/sft.ts),
 * as `agl train` calls training-run.ts; the samples' learning harness reads the records (sftMinutes).
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SFT_DEFAULT_LR } from '../../protocol/cli-commands.js';
import type { OpenPolicyOptions } from './open-policy.js';
import { openPolicy } from './open-policy.js';
import type { demonstrationsOf } from './sft-data.js';
import { demoToPair, runSft } from './sft-trainer.js';

/** The file an SFT run writes beside its checkpoint: what made it (and, for a continued run, its base's record). */
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

/** The learning rate of a run not given one (protocol/cli-commands.ts SFT_DEFAULT_LR): a new built-in model's, or a trained one's. */
export function sftDefaultLr(model: string): number {
  return model.startsWith('builtin:') ? SFT_DEFAULT_LR.newModel : SFT_DEFAULT_LR.trained;
}

export interface SftRunOptions {
  /** The demonstrations' file (named in the record and in errors) and what it held (sft-data.ts demonstrationsOf). */
  data: string;
  demonstrations: ReturnType<typeof demonstrationsOf>;
  /** builtin:<size>, or a model or checkpoint folder. */
  model: string;
  /** How to open it (backend, context length and seed of a new built-in model, engine). */
  open: OpenPolicyOptions;
  out: string;
  steps: number;
  batchSize: number;
  lr: number;
  seed: number;
  /** Leave the optimizer state out of the checkpoint. */
  weightsOnly: boolean;
  say: (line: string) => void;
  onStep?: (step: number, loss: number, tokensPerSecond: number) => void;
}

/** Trains the model on the demonstrations and writes the checkpoint and its record; returns the record. */
export async function runSftCheckpoint(o: SftRunOptions): Promise<SftRecord> {
  const { demos, lineOf, rows, uncorrected } = o.demonstrations;
  const policy = await openPolicy(o.model, o.open);
  try {
    const pairs = demos.map((d, i) => demoToPair(d, policy.tokenizer, `${o.data}:${lineOf[i]}`));
    if (rows)
      o.say(
        `${rows - uncorrected} of ${rows} dataset rows are corrected answers, trained as demonstrations of their final call` +
          `${uncorrected ? ` (${uncorrected} not corrected: left out)` : ''}`,
      );
    o.say(`${pairs.length} demonstrations, model ${policy.name} (${policy.backend}), ${o.steps} steps of ${o.batchSize}`);
    const started = Date.now();
    const res = await runSft(policy, pairs, { steps: o.steps, batchSize: o.batchSize, lr: o.lr, seed: o.seed, onStep: o.onStep });
    mkdirSync(o.out, { recursive: true });
    await policy.save(o.out);
    if (o.weightsOnly) rmSync(join(o.out, 'optimizer.safetensors'), { force: true });
    const baseRecord = join(o.model, SFT_RECORD);
    const record: SftRecord = {
      data: o.data,
      model: o.model.startsWith('builtin:') ? o.model : undefined,
      steps: res.steps,
      batchSize: o.batchSize,
      lr: o.lr,
      seed: o.seed,
      seconds: Math.round((Date.now() - started) / 1000),
      finalLoss: Number(res.lastLoss.toFixed(4)),
      date: new Date().toISOString(),
      base: existsSync(baseRecord) ? (JSON.parse(readFileSync(baseRecord, 'utf8')) as SftRecord) : undefined,
    };
    writeFileSync(join(o.out, SFT_RECORD), `${JSON.stringify(record, null, 2)}\n`);
    return record;
  } finally {
    policy.dispose();
  }
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
