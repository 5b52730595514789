/**
 * `npm run bench:learning -- --credit-sweep [--sample rag|sql] [--seeds 2] [--minutes M | --max-steps N]`
 * (issue #12 item 4): credit assignment compared where it matters. One sample (rag's three calls by default,
 * or sql's multi-agent loop) is trained from the same warm-up under every credit strategy (identical, last,
 * discounted, combined) with AIR on and off, each with >= 2 seeds and the same budget; for sql also with
 * every agent trained (`agents: all`) against writer+rewriter only (the sample's `agentMatch`). Prints a table
 * of the held-out (val, greedy) score after training, mean and spread over seeds, and writes it to
 * bench/results/credit.json (or --out). Each run is `agl train` with the sample's train.yaml plus the row's
 * settings (a temporary config file), starting from the shipped warm-up (`samples/<name>/warmup/`) when there
 * is one, else from one SFT made first and shared by every run (--sft-steps to shorten it).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, totalmem, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { stringify } from 'yaml';
import { deepMerge, readConfigFile } from '../daemon/algorithm/config.js';
import { trainAgent } from '../daemon/commands/train.js';
import { RAG_LEARNING } from '../samples/rag/learn.js';
import { makeWarmup, warmupCommands, type SampleLearning } from '../samples/harness/learning.js';
import { SQL_LEARNING } from '../samples/sql/learn.js';
import { SFT_COMMAND } from '../protocol/cli-commands.js';
import { commandLine } from '../protocol/cli-options.js';

export const STRATEGIES = ['identical', 'last', 'discounted', 'combined'] as const;
/** AIR when on: a call whose tool failed (sql: SQLite rejected the query; rag: the search found nothing) gets -0.2. */
export const AIR_RULES = [{ when: 'tool_failed', reward: -0.2 }];
const SAMPLES: Record<string, SampleLearning> = { rag: RAG_LEARNING, sql: SQL_LEARNING };

export interface SweepRow {
  strategy: string;
  air: boolean;
  agents: 'match' | 'all';
  scores: number[];
  mean: number;
  spread: number;
  minutes: number[];
}
export interface SweepOptions {
  sample: string;
  seeds: number;
  minutes?: number;
  maxSteps?: number;
  sftSteps?: number;
  out: string;
  workers?: number;
  /** Smaller than train.yaml's for a smoke run only: a sweep's table must use the sample's own. */
  valSize?: number;
  batchSize?: number;
  groupSize?: number;
}

/** The settings of each row: every strategy x AIR on/off; for sql also all three agents trained. */
export function sweepRows(sample: string): Omit<SweepRow, 'scores' | 'mean' | 'spread' | 'minutes'>[] {
  const rows: RowSettings[] = [];
  for (const strategy of STRATEGIES) for (const air of [true, false]) rows.push({ strategy, air, agents: 'match' });
  if (sample === 'sql') for (const air of [true, false]) rows.push({ strategy: 'identical', air, agents: 'all' });
  return rows;
}

const mean = (xs: number[]) => xs.reduce((a, x) => a + x, 0) / Math.max(1, xs.length);
/** Spread over seeds: the sample standard deviation (0 for one seed). */
const spread = (xs: number[]) => (xs.length < 2 ? 0 : Math.sqrt(xs.reduce((a, x) => a + (x - mean(xs)) ** 2, 0) / (xs.length - 1)));

type RowSettings = Omit<SweepRow, 'scores' | 'mean' | 'spread' | 'minutes'>;

/** One run's train.yaml: the sample's, with the row's credit settings, the seed, and the sweep's budget. */
function runConfig(base: Record<string, unknown>, row: RowSettings, seed: number, o: SweepOptions, dir: string): Record<string, unknown> {
  return deepMerge(base, {
    training: {
      seed,
      air: row.air,
      credit: { strategy: row.strategy, air: AIR_RULES },
      ...(row.agents === 'all' ? { agentMatch: null } : {}),
      ...(o.maxSteps !== undefined ? { maxSteps: o.maxSteps } : {}),
      ...(o.minutes !== undefined ? { maxMinutes: o.minutes } : {}),
      ...(o.valSize !== undefined ? { valSize: o.valSize } : {}),
      ...(o.batchSize !== undefined ? { batchSize: o.batchSize } : {}),
      ...(o.groupSize !== undefined ? { groupSize: o.groupSize } : {}),
    },
    runtime: { checkpointDir: join(dir, 'checkpoint'), ...(o.workers ? { workers: o.workers } : {}) },
  });
}

/** The sweep's results file: the budget, how the warm-up was made, and the rows. */
function writeSweep(o: SweepOptions, s: SampleLearning, warmup: { warmup: string; shipped: boolean }, rows: SweepRow[]): void {
  mkdirSync(dirname(o.out), { recursive: true });
  const machine = `${cpus().length}x ${cpus()[0]?.model.trim() ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}`;
  const budget = {
    minutes: o.minutes ?? null,
    maxSteps: o.maxSteps ?? null,
    valSize: o.valSize ?? null,
    batchSize: o.batchSize ?? null,
    groupSize: o.groupSize ?? null,
  };
  const made = warmup.shipped
    ? warmup.warmup
    : o.sftSteps !== undefined
      ? `agl ${commandLine(SFT_COMMAND, { ...s.sftFlags, steps: String(o.sftSteps) }).join(' ')}`
      : warmupCommands(s).join(' && ');
  const score = 'held-out (val split, greedy) score after training';
  const record = { date: new Date().toISOString(), machine, sample: o.sample, seeds: o.seeds, budget, warmup: made, airRules: AIR_RULES, score, rows };
  writeFileSync(o.out, `${JSON.stringify(record, null, 2)}\n`);
}

export async function creditSweep(o: SweepOptions): Promise<SweepRow[]> {
  const s = SAMPLES[o.sample];
  if (!s) throw new Error(`--credit-sweep --sample ${o.sample}: one of ${Object.keys(SAMPLES).join(', ')}`);
  if (!(o.seeds >= 1)) throw new Error('--seeds must be at least 1 (the issue asks for 2 or more)');
  const work = mkdtempSync(join(tmpdir(), `agl-credit-${o.sample}-`));
  // Checkpoints and stores of every run (~100 MB each sweep) are scratch: only the table is kept.
  try {
    const made = await makeWarmup(s, work, o.sftSteps);
    const base = readConfigFile(s.config) as Record<string, unknown>;
    const rows: SweepRow[] = [];
    let k = 0;
    for (const row of sweepRows(o.sample)) {
      const scores: number[] = [],
        minutes: number[] = [];
      for (let seed = 1; seed <= o.seeds; seed++) {
        const dir = join(work, `run-${++k}`);
        mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, 'train.yaml'), stringify(runConfig(base, row, seed, o, dir)));
        process.stderr.write(`credit sweep: ${o.sample} ${row.strategy} air ${row.air ? 'on' : 'off'} agents ${row.agents} seed ${seed}\n`);
        const config = join(dir, 'train.yaml');
        const r = await trainAgent({ agent: s.agent, train: s.train, val: s.val, model: made.warmup, config, 'data-dir': dir, quiet: true });
        if (!r) throw new Error('training was interrupted');
        scores.push(r.after ?? 0);
        minutes.push(r.minutes);
      }
      rows.push({ ...row, scores, mean: mean(scores), spread: spread(scores), minutes });
    }
    writeSweep(o, s, made, rows);
    return rows;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

export function formatSweep(rows: SweepRow[]): string {
  const head = 'strategy    AIR  agents  mean   spread  scores';
  return [
    head,
    ...rows.map(
      (r) =>
        `${r.strategy.padEnd(11)} ${(r.air ? 'on' : 'off').padEnd(4)} ${r.agents.padEnd(7)} ${r.mean.toFixed(3)}  ${r.spread.toFixed(3)}   ${r.scores.map((x) => x.toFixed(3)).join(' ')}`,
    ),
  ].join('\n');
}
