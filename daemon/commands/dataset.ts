/**
 * `agl dataset from-rollouts --out F [--run RUN] [--status S] [--reward-min X] [--reward-max X] [--candidate C] ...`:
 * writes an eval dataset (JSONL rows: the task input, the recorded answer as `expected`) from the rollouts the filter
 * selects (daemon/eval/from-rollouts.ts). Parses and checks the flags, writes the file, says what it wrote.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { DATASET_FROM_ROLLOUTS_COMMAND, type DatasetFlags } from '../../protocol/cli-commands.js';
import { commandHelp } from '../../protocol/cli-options.js';
import { GraderName } from '../../protocol/eval.js';
import type { RolloutQuery } from '../../protocol/lightning-store.js';
import { ROLLOUT_MODES, ROLLOUT_STATUSES, type RolloutMode, type RolloutStatus } from '../../protocol/store.js';
import { readDataset } from '../eval/dataset.js';
import { writeRowsFromRollouts } from '../eval/from-rollouts.js';
import { parseCommand } from './flags.js';
import { connect } from './optimize.js';

const HELP = commandHelp(DATASET_FROM_ROLLOUTS_COMMAND);

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (!sub || sub === '--help' || sub === '-h') {
    process.stdout.write(HELP);
    return sub ? 0 : 2;
  }
  if (sub !== 'from-rollouts') {
    process.stderr.write(`agl dataset: unknown subcommand '${sub}' (from-rollouts)\n\n${HELP}`);
    return 2;
  }
  const a = parseCommand(DATASET_FROM_ROLLOUTS_COMMAND, rest, HELP);
  if ('exit' in a) return a.exit;
  const f = a.values;
  let query: Omit<RolloutQuery, 'limit' | 'cursor'>;
  let out: string;
  try {
    query = queryOf(f);
    if (!f.out) throw new Error('--out FILE is required: the dataset to write (e.g. failures.eval.jsonl)');
    out = resolve(f.out);
    if (existsSync(out) && !f.append) throw new Error(`--out ${f.out} exists: give another file, or --append to add to it`);
    // A file to add to must be a good dataset first (every bad row named).
    if (f.append && existsSync(out)) readDataset(out, { grader: null });
  } catch (e) {
    process.stderr.write(`agl dataset from-rollouts: ${(e as Error).message}\n`);
    return 2;
  }
  const limit = Number(f.limit);
  const grader = (f.grader as GraderName | undefined) ?? null;
  const conn = await connect(f);
  try {
    const got = await writeRowsFromRollouts(conn.store, query, { out, append: Boolean(f.append), limit, grader });
    if (f.json) process.stdout.write(`${JSON.stringify({ out, rows: got.rows, noAnswer: got.noAnswer, duplicates: got.duplicates })}\n`);
    else
      process.stderr.write(
        `agl dataset from-rollouts: ${got.rows} rows written to ${f.out}` +
          `${got.duplicates ? `; ${got.duplicates} left out: their task is in the dataset already` : ''}` +
          `${got.noAnswer.length ? `; ${got.noAnswer.length} rollouts recorded no answer and gave no row` : ''}\n`,
      );
    return got.rows ? 0 : 1;
  } finally {
    await conn.store.close();
  }
}

/** The store's rollout query of the flags; throws naming the flag at fault. */
function queryOf(f: DatasetFlags): Omit<RolloutQuery, 'limit' | 'cursor'> {
  const status = f.status?.split(',').filter(Boolean);
  const bad = status?.find((s) => !(ROLLOUT_STATUSES as readonly string[]).includes(s));
  if (bad) throw new Error(`--status ${bad}: one of ${ROLLOUT_STATUSES.join(', ')}`);
  if (f.mode && !(ROLLOUT_MODES as readonly string[]).includes(f.mode)) throw new Error(`--mode ${f.mode}: one of ${ROLLOUT_MODES.join(', ')}`);
  if (f.grader !== undefined && !GraderName.safeParse(f.grader).success) throw new Error(`--grader ${f.grader}: one of ${GraderName.options.join(', ')}`);
  const limit = Number(f.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new Error(`--limit ${f.limit}: give a whole number of at least 1`);
  const reward = (flag: 'reward-min' | 'reward-max') => {
    const v = f[flag];
    if (v === undefined) return undefined;
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n)) throw new Error(`--${flag} ${v}: give a number`);
    return n;
  };
  const rewardMin = reward('reward-min'),
    rewardMax = reward('reward-max');
  return {
    ...(status ? { status: status as RolloutStatus[] } : {}),
    ...(f.mode ? { mode: f.mode as RolloutMode } : {}),
    ...(f.agent ? { agent: f.agent } : {}),
    ...(f.run ? { runId: f.run } : {}),
    ...(f.candidate ? { candidate: f.candidate } : {}),
    ...(f.search ? { search: f.search } : {}),
    ...(rewardMin !== undefined ? { rewardMin } : {}),
    ...(rewardMax !== undefined ? { rewardMax } : {}),
  };
}
