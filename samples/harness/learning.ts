/**
 * The learning harness the samples share: a sample's SFT warm-up (`agl sft`, made in stages, or its shipped
 * checkpoint), then GRPO with `agl train`, with held-out scores before and after (and on the test split). What
 * `npm run bench:learning` runs for sql, rag and calc-py, what their `samples/<name>/learn.ts` entries run, and what
 * the credit sweep (bench/credit-sweep.ts) starts from. A sample describes itself with a SampleLearning.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { run as sft } from '../../daemon/commands/sft.js';
import { sftMinutes } from '../../daemon/algorithm/sft-run.js';
import { type TrainOutcome, trainAgent } from '../../daemon/commands/train.js';
import { SFT_COMMAND, type SftFlags } from '../../protocol/cli-commands.js';
import { commandLine, flagArgs } from '../../protocol/cli-options.js';

/** What a sample needs to learn: its agent, data, warm-up demonstrations and GRPO config. */
export interface SampleLearning {
  name: string;
  agent: string;
  train: string;
  val: string;
  demos: string;
  config: string;
  /** `agl sft` flags for the warm-up (the context must hold the sample's longest chat). */
  sftFlags: SftFlags;
  /**
   * Further `agl sft` runs, each continuing from the checkpoint before it (`--model <it>` added): how a
   * shipped warm-up that was extended stage by stage is remade exactly (same seeds, same steps per stage).
   * A stage trains on `demos` unless it names its own `data`.
   */
  sftThen?: SftFlags[];
  /** A shipped warm-up checkpoint made with sftFlags (then sftThen): used instead of running the SFT again. */
  warmup?: string;
  /** The test split (never used in training or selection) and how a checkpoint is scored on it (greedy). */
  test?: { file: string; score(checkpoint: string, file: string): Promise<number> };
}

export interface LearnOptions {
  minutes?: number;
  sftSteps?: number;
  dataDir?: string;
  quiet?: boolean;
  workers?: number;
  test?: boolean;
}

export type LearnOutcome = TrainOutcome & { warmupMinutes: number; testBefore?: number; testAfter?: number };

/**
 * Warm-up then GRPO; returns agl train's outcome (before/after on val), the warm-up's minutes and, unless
 * `test: false`, the test split's score of the warm-up and of the final checkpoint (not the best on val).
 */
export async function learnSample(s: SampleLearning, o: LearnOptions = {}): Promise<LearnOutcome> {
  const dataDir = o.dataDir ?? mkdtempSync(join(tmpdir(), `agl-${s.name}-learn-`));
  const { warmup, minutes: warmupMinutes } = await makeWarmup(s, dataDir, o.sftSteps);
  const outcome = await trainAgent({
    agent: s.agent,
    train: s.train,
    val: s.val,
    model: warmup,
    config: s.config,
    'data-dir': dataDir,
    quiet: o.quiet,
    ...(o.minutes !== undefined ? { 'max-minutes': String(o.minutes) } : {}),
    ...(o.workers ? { workers: String(o.workers) } : {}),
  });
  if (!outcome) throw new Error('training was interrupted');
  if (!s.test || o.test === false) return { ...outcome, warmupMinutes };
  const testBefore = await s.test.score(warmup, s.test.file);
  const testAfter = await s.test.score(outcome.checkpoint, s.test.file);
  return { ...outcome, warmupMinutes, testBefore, testAfter };
}

/** A warm-up stage's data flag: the sample's demonstrations unless the stage names its own `data`. */
const stageData = (s: SampleLearning, stage: SftFlags): SftFlags => (stage.data === undefined ? { data: s.demos } : {});

/** The `agl sft` command lines that make a sample's warm-up (the first from a built-in model, each next from the one before). */
export function warmupCommands(s: SampleLearning, out = 'DIR'): string[] {
  const stages = [s.sftFlags, ...(s.sftThen ?? [])];
  return stages.map((stage, i) => {
    const flags: SftFlags = { ...stageData(s, stage), out: i < stages.length - 1 ? `${out}-${i + 1}` : out, ...(i ? { model: `${out}-${i}` } : {}), ...stage };
    return `agl ${commandLine(SFT_COMMAND, flags).join(' ')}`;
  });
}

/**
 * The sample's warm-up checkpoint: the shipped one (its minutes from the agl-sft.json record beside it), or
 * made here by sftFlags then sftThen. `sftSteps` (a quick run) replaces the first stage's steps and skips the rest.
 */
export async function makeWarmup(s: SampleLearning, dataDir: string, sftSteps?: number): Promise<{ warmup: string; minutes: number; shipped: boolean }> {
  if (s.warmup !== undefined && sftSteps === undefined && existsSync(join(s.warmup, 'config.json'))) {
    return { warmup: s.warmup, minutes: sftMinutes(s.warmup) ?? 0, shipped: true };
  }
  const stages = sftSteps !== undefined ? [s.sftFlags] : [s.sftFlags, ...(s.sftThen ?? [])];
  const t0 = Date.now();
  let prev: string | undefined;
  for (const [i, stage] of stages.entries()) {
    const flags: SftFlags = { ...(prev ? { model: prev } : {}), ...stage, ...(sftSteps !== undefined ? { steps: String(sftSteps) } : {}) };
    const out = join(dataDir, i === stages.length - 1 ? 'warmup' : `warmup-${i + 1}`);
    process.stderr.write(`${s.name}: warm-up stage ${i + 1}/${stages.length}: agl ${commandLine(SFT_COMMAND, flags).join(' ')}\n`);
    const code = await sft(flagArgs(SFT_COMMAND, { ...stageData(s, stage), out, 'data-dir': dataDir, ...flags }));
    if (code !== 0) throw new Error(`agl sft failed with exit code ${code}`);
    prev = out;
  }
  return { warmup: prev!, minutes: (Date.now() - t0) / 60000, shipped: false };
}

/** Command-line entry shared by the samples' learn.ts files. */
export function learnMain(s: SampleLearning): void {
  const { values } = parseArgs({
    options: { minutes: { type: 'string' }, 'sft-steps': { type: 'string' }, 'data-dir': { type: 'string' }, workers: { type: 'string' } },
  });
  learnSample(s, {
    minutes: values.minutes ? Number(values.minutes) : undefined,
    sftSteps: values['sft-steps'] ? Number(values['sft-steps']) : undefined,
    dataDir: values['data-dir'],
    workers: values.workers ? Number(values.workers) : undefined,
  }).then(
    (r) => {
      const pct = (x: number | null) => (x === null ? '-' : `${Math.round(x * 100)}%`);
      const test = r.testBefore !== undefined ? `; test split ${pct(r.testBefore)} -> ${pct(r.testAfter ?? null)}` : '';
      process.stdout.write(
        `\n${s.name}: held-out (val) score ${pct(r.before)} -> ${pct(r.after)} in ${r.minutes.toFixed(1)} min of GRPO (+${r.warmupMinutes.toFixed(1)} min SFT warm-up)${test}\ncheckpoint: ${r.checkpoint}\nreport: ${r.report}\n`,
      );
      process.exit(0);
    },
    (e) => {
      process.stderr.write(`${s.name} learning failed: ${(e as Error).message}\n`);
      process.exit(1);
    },
  );
}
