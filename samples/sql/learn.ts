/**
 * The sql sample's learning run, as `npm run bench:learning -- --sample sql` runs it: an SFT warm-up
 * of the built-in model on the shipped demonstrations (`agl sft`, the start a tiny model needs before
 * RL has reward to learn from), then GRPO with `agl train` (writer and rewriter only), held-out
 * execution accuracy on the val split before and after.
 *   npx tsx samples/sql/learn.ts [--minutes M] [--sft-steps N] [--data-dir DIR]
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { run as sft, sftMinutes } from '../../daemon/commands/sft.js';
import { type TrainOutcome, trainAgent } from '../../daemon/commands/train.js';
import { readJsonl } from '../../daemon/algorithm/sft-trainer.js';
import type { SqlTask } from './task.js';

/** What a sample needs to learn: its agent, data, warm-up demonstrations and GRPO config. */
export interface SampleLearning {
  name: string;
  agent: string;
  train: string;
  val: string;
  demos: string;
  config: string;
  /** `agl sft` flags for the warm-up (the context must hold the sample's longest chat). */
  sftArgs: string[];
  /** A shipped warm-up checkpoint made with sftArgs: used instead of running the SFT again. */
  warmup?: string;
  /** The test split (never used in training or selection) and how a checkpoint is scored on it (greedy). */
  test?: { file: string; score(checkpoint: string, file: string): Promise<number> };
}

export const SQL_LEARNING: SampleLearning = {
  name: 'sql',
  agent: 'samples/sql/agent.ts#sqlAgent',
  train: join('samples', 'sql', 'data', 'train.jsonl'),
  val: join('samples', 'sql', 'data', 'val.jsonl'),
  demos: join('samples', 'sql', 'data', 'demos.jsonl'),
  config: join('samples', 'sql', 'train.yaml'),
  sftArgs: ['--model', 'builtin:0.8m', '--steps', '300', '--batch-size', '32', '--lr', '1e-3', '--context', '256', '--seed', '1'],
  warmup: join('samples', 'sql', 'warmup'),
  test: {
    file: join('samples', 'sql', 'data', 'test.jsonl'),
    async score(checkpoint, file) {
      const { inspectSql } = await import('./inspect.js');
      const eps = await inspectSql(checkpoint, readJsonl<SqlTask>(file));
      return eps.reduce((a, e) => a + e.reward, 0) / eps.length;
    },
  },
};

export interface LearnOptions { minutes?: number; sftSteps?: number; dataDir?: string; quiet?: boolean; workers?: number; test?: boolean }

export type LearnOutcome = TrainOutcome & { warmupMinutes: number; testBefore?: number; testAfter?: number };

/**
 * Warm-up then GRPO; returns agl train's outcome (before/after on val), the warm-up's minutes and, unless
 * `test: false`, the test split's score of the warm-up and of the final checkpoint (not the best on val).
 */
export async function learnSample(s: SampleLearning, o: LearnOptions = {}): Promise<LearnOutcome> {
  const dataDir = o.dataDir ?? mkdtempSync(join(tmpdir(), `agl-${s.name}-learn-`));
  const shipped = s.warmup !== undefined && o.sftSteps === undefined && existsSync(join(s.warmup, 'config.json'));
  const warmup = shipped ? s.warmup! : join(dataDir, 'warmup');
  // A shipped warm-up's minutes come from the record agl sft wrote beside it (agl-sft.json).
  let warmupMinutes = shipped ? sftMinutes(warmup) ?? 0 : 0;
  if (!shipped) {
    const args = [...s.sftArgs];
    if (o.sftSteps !== undefined) args.splice(args.indexOf('--steps'), 2, '--steps', String(o.sftSteps));
    const t0 = Date.now();
    const code = await sft(['--data', s.demos, '--out', warmup, '--data-dir', dataDir, ...args]);
    if (code !== 0) throw new Error(`agl sft failed with exit code ${code}`);
    warmupMinutes = (Date.now() - t0) / 60000;
  }
  const outcome = await trainAgent({
    agent: s.agent, train: s.train, val: s.val, model: warmup, config: s.config, 'data-dir': dataDir, quiet: o.quiet,
    ...(o.minutes !== undefined ? { 'max-minutes': String(o.minutes) } : {}),
    ...(o.workers ? { workers: String(o.workers) } : {}),
  });
  if (!outcome) throw new Error('training was interrupted');
  if (!s.test || o.test === false) return { ...outcome, warmupMinutes };
  const testBefore = await s.test.score(warmup, s.test.file);
  const testAfter = await s.test.score(outcome.checkpoint, s.test.file);
  return { ...outcome, warmupMinutes, testBefore, testAfter };
}

/** Command-line entry shared by the samples' learn.ts files. */
export function learnMain(s: SampleLearning): void {
  const { values } = parseArgs({ options: { minutes: { type: 'string' }, 'sft-steps': { type: 'string' }, 'data-dir': { type: 'string' }, workers: { type: 'string' } } });
  learnSample(s, {
    minutes: values.minutes ? Number(values.minutes) : undefined, sftSteps: values['sft-steps'] ? Number(values['sft-steps']) : undefined,
    dataDir: values['data-dir'], workers: values.workers ? Number(values.workers) : undefined,
  }).then((r) => {
    const pct = (x: number | null) => (x === null ? '-' : `${Math.round(x * 100)}%`);
    const test = r.testBefore !== undefined ? `; test split ${pct(r.testBefore)} -> ${pct(r.testAfter ?? null)}` : '';
    process.stdout.write(`\n${s.name}: held-out (val) score ${pct(r.before)} -> ${pct(r.after)} in ${r.minutes.toFixed(1)} min of GRPO (+${r.warmupMinutes.toFixed(1)} min SFT warm-up)${test}\ncheckpoint: ${r.checkpoint}\nreport: ${r.report}\n`);
    process.exit(0);
  }, (e) => { process.stderr.write(`${s.name} learning failed: ${(e as Error).message}\n`); process.exit(1); });
}

if (/sql[\\/]learn\.[mc]?[tj]s$/.test(process.argv[1] ?? '')) learnMain(SQL_LEARNING);
