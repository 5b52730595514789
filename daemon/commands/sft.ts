/**
 * `agl sft --data demos.jsonl`: supervised warm-up from demonstrations (see daemon/algorithm/sft-trainer.ts for
 * the line format), writing a checkpoint folder that `agl train --model <folder>` starts from.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { engineOptions } from '../algorithm/config.js';
import { openPolicy } from '../algorithm/open-policy.js';
import { ENGINE_HELP, ENGINE_PARSE_OPTIONS, engineFromFlags } from './engine-flags.js';
import { Progress } from './progress.js';
import { demoToPair, readJsonl, runSft, type Demonstration } from '../algorithm/sft-trainer.js';
import { resolveDataDir } from '../../sdk/tools/daemon-state.js';

const HELP = `usage: agl sft --data demos.jsonl [options]

Supervised fine-tuning from demonstrations: {"prompt","completion"} or {"messages":[...]} per line.
  --data FILE        demonstrations (JSONL)                                   (required)
  --model M          builtin:0.8m (default), builtin:5m, or a model/checkpoint folder
  --out DIR          where the checkpoint goes (default <data-dir>/sft/<time>)
  --steps N          optimizer updates (default 300)
  --batch-size B     sequences per update (default 32)
  --lr X             learning rate (default 1e-3 for a new built-in model, else 1e-4)
  --context N        context length of a new built-in model (default 128)
  --backend B        auto, wasm, cpu, webgpu, node (default auto)
  --seed N           shuffling seed (default 1)
  --init-seed N      initialisation seed of a new built-in model (default 1234)
  --weights-only     leave the optimizer state out of the checkpoint (a third of the size; to ship it)
  --data-dir DIR     default ~/.agent-lightning (AGL_DATA_DIR)
${ENGINE_HELP}`;

export async function run(argv: string[]): Promise<number> {
  let a;
  try {
    a = parseArgs({
      args: argv,
      strict: true,
      options: {
        data: { type: 'string' },
        model: { type: 'string' },
        out: { type: 'string' },
        steps: { type: 'string' },
        'batch-size': { type: 'string' },
        lr: { type: 'string' },
        context: { type: 'string' },
        backend: { type: 'string' },
        seed: { type: 'string' },
        'init-seed': { type: 'string' },
        'weights-only': { type: 'boolean' },
        'data-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        ...ENGINE_PARSE_OPTIONS,
      },
    }).values;
  } catch (e) {
    process.stderr.write(`agl sft: ${(e as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (a.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (!a.data) {
    process.stderr.write(`agl sft: --data is required\n\n${HELP}`);
    return 2;
  }
  const num = (v: string | undefined, name: string, dflt: number) => {
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got '${v}'`);
    return n;
  };
  const model = a.model ?? 'builtin:0.8m';
  const steps = num(a.steps, 'steps', 300),
    batchSize = num(a['batch-size'], 'batch-size', 32);
  const lr = num(a.lr, 'lr', model.startsWith('builtin:') ? 1e-3 : 1e-4);
  const out = resolve(a.out ?? join(resolveDataDir(a['data-dir']), 'sft', new Date().toISOString().replace(/[:.]/g, '-')));
  const demos = readJsonl<Demonstration>(a.data);
  const engine = engineOptions(engineFromFlags(a), { dataDir: resolveDataDir(a['data-dir']) });
  const policy = await openPolicy(model, {
    backend: a.backend,
    learningRate: lr,
    contextLength: num(a.context, 'context', 128),
    seed: num(a['init-seed'], 'init-seed', 1234),
    ...engine,
  });
  try {
    const pairs = demos.map((d, i) => demoToPair(d, policy.tokenizer, `${a.data}:${i + 1}`));
    process.stderr.write(`agl sft: ${pairs.length} demonstrations, model ${policy.name} (${policy.backend}), ${steps} steps of ${batchSize}\n`);
    const bar = new Progress('sft', steps);
    const started = Date.now();
    const res = await runSft(policy, pairs, {
      steps,
      batchSize,
      seed: num(a.seed, 'seed', 1),
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
      seed: num(a.seed, 'seed', 1),
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
