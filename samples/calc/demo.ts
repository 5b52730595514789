/**
 * `npm run demo`: trains the calc agent with the built-in model on this machine, end to end.
 *  1. datasets (samples/calc/data, regenerated if missing);
 *  2. SFT warm-up: the shipped checkpoint samples/calc/warmup (made by `agl sft`, see README there), or
 *     made now with `agl sft` when it is missing (--fresh-warmup forces it);
 *  3. GRPO with `agl train` through the real gateway and runner workers, held-out accuracy before/after;
 *  4. the report (HTML + PNG reward curve) path printed at the end.
 * Options: --minutes M (GRPO budget, default train.yaml's maxMinutes), --data-dir DIR (default: a fresh temp dir), --fresh-warmup,
 * --engine torch (train on the PyTorch engine; `agl engine install torch` first) and --procs N (its data-parallel ranks).
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { run as sft } from '../../daemon/commands/sft.js';
import { type TrainOutcome, trainAgent } from '../../daemon/commands/train.js';
import { SFT_COMMAND, type SftFlags } from '../../protocol/cli-commands.js';
import { commandLine, flagArgs } from '../../protocol/cli-options.js';
import { DATA_DIR, writeCalcData } from './make-data.js';

export const WARMUP_DIR = join('samples', 'calc', 'warmup');
/** How samples/calc/warmup was made (`agl sft --data samples/calc/data/demos.jsonl --out samples/calc/warmup` + these). */
export const WARMUP_SFT_FLAGS: SftFlags = {
  model: 'builtin:0.8m',
  steps: '1200',
  'batch-size': '32',
  lr: '1e-3',
  context: '128',
  seed: '1',
  'init-seed': '1234',
  backend: 'wasm',
};

export interface CalcRunOptions {
  minutes?: number;
  dataDir?: string;
  freshWarmup?: boolean;
  quiet?: boolean;
  workers?: number;
  engine?: 'tfjs' | 'torch';
  procs?: number;
  /** More agl train flags (bench/judge.ts: an LLM judge's --judge-*), over the demo's. */
  flags?: Partial<Parameters<typeof trainAgent>[0]>;
}

/** Warm-up (shipped, or made) then GRPO; returns agl train's outcome, the warm-up used and its minutes. */
export async function runCalcDemo(o: CalcRunOptions = {}): Promise<TrainOutcome & { warmup: string; warmupMinutes: number }> {
  if (!existsSync(join(DATA_DIR, 'train.jsonl'))) writeCalcData(DATA_DIR, 1);
  const dataDir = o.dataDir ?? mkdtempSync(join(tmpdir(), 'agl-calc-demo-'));
  let warmup = WARMUP_DIR;
  let warmupMinutes = 0;
  if (o.freshWarmup || !existsSync(join(WARMUP_DIR, 'config.json'))) {
    warmup = join(dataDir, 'warmup');
    const t0 = Date.now();
    const flags: SftFlags = { data: join(DATA_DIR, 'demos.jsonl'), out: warmup, ...WARMUP_SFT_FLAGS };
    process.stderr.write(`calc demo: no shipped warm-up checkpoint; making one with agl ${commandLine(SFT_COMMAND, flags).join(' ')}\n`);
    const code = await sft(flagArgs(SFT_COMMAND, flags));
    if (code !== 0) throw new Error(`agl sft failed with exit code ${code}`);
    warmupMinutes = (Date.now() - t0) / 60000;
  }
  const outcome = await trainAgent({
    agent: 'samples/calc/agent.ts#calcAgent',
    train: join(DATA_DIR, 'train.jsonl'),
    val: join(DATA_DIR, 'val.jsonl'),
    model: warmup,
    config: join('samples', 'calc', 'train.yaml'),
    ...(o.minutes ? { 'max-minutes': String(o.minutes) } : {}),
    'data-dir': dataDir,
    quiet: o.quiet,
    ...(o.workers ? { workers: String(o.workers) } : {}),
    ...(o.engine ? { engine: o.engine } : {}),
    ...(o.procs ? { procs: String(o.procs) } : {}),
    ...o.flags,
  });
  if (!outcome) throw new Error('training was interrupted');
  return { ...outcome, warmup, warmupMinutes };
}

if (/demo\.[mc]?[tj]s$/.test(process.argv[1] ?? '')) {
  const { values } = parseArgs({
    options: {
      minutes: { type: 'string' },
      'data-dir': { type: 'string' },
      'fresh-warmup': { type: 'boolean' },
      engine: { type: 'string' },
      procs: { type: 'string' },
    },
  });
  if (values.engine && !['tfjs', 'torch'].includes(values.engine)) {
    process.stderr.write(`calc demo: --engine must be tfjs or torch, got '${values.engine}'\n`);
    process.exit(2);
  }
  runCalcDemo({
    minutes: values.minutes ? Number(values.minutes) : undefined,
    dataDir: values['data-dir'],
    freshWarmup: values['fresh-warmup'],
    engine: values.engine as 'tfjs' | 'torch' | undefined,
    procs: values.procs ? Number(values.procs) : undefined,
  }).then(
    (r) => {
      const pct = (x: number | null) => (x === null ? '-' : `${Math.round(x * 100)}%`);
      process.stdout.write(
        `\ncalc demo: held-out accuracy ${pct(r.before)} -> ${pct(r.after)} in ${r.minutes.toFixed(1)} min of GRPO` +
          `${r.warmupMinutes ? ` (+${r.warmupMinutes.toFixed(1)} min SFT warm-up)` : ''}\nreport: ${r.report}\n`,
      );
      process.exit(0);
    },
    (e) => {
      process.stderr.write(`calc demo failed: ${(e as Error).message}\n`);
      process.exit(1);
    },
  );
}
