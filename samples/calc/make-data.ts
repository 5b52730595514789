/**
 * Writes the calc datasets: data/train.jsonl, data/val.jsonl, data/test.jsonl (tasks) and
 * data/demos.jsonl (SFT warm-up demonstrations, for `agl sft`, made from problems of none of those
 * splits: see warmupDemonstrations in task.ts). Deterministic per seed.
 *   npx tsx samples/calc/make-data.ts [--seed 1] [--out samples/calc/data]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type CalcTask, makeSplits, warmupDemonstrations } from './task.js';

/** Relative to the repository root (npm scripts run there). */
export const DATA_DIR = join('samples', 'calc', 'data');

export function writeCalcData(outDir = DATA_DIR, seed = 1): Record<string, number> {
  const splits = makeSplits(seed);
  mkdirSync(outDir, { recursive: true });
  const lines = (xs: unknown[]) => xs.map((x) => JSON.stringify(x)).join('\n') + '\n';
  const counts: Record<string, number> = {};
  for (const [name, tasks] of Object.entries({ train: splits.train, val: splits.val, test: splits.test }) as [string, CalcTask[]][]) {
    writeFileSync(join(outDir, `${name}.jsonl`), lines(tasks));
    counts[name] = tasks.length;
  }
  const demos = warmupDemonstrations(splits.demo, seed);
  writeFileSync(join(outDir, 'demos.jsonl'), lines(demos));
  counts.demos = demos.length;
  return counts;
}

if (/make-data\.[mc]?[tj]s$/.test(process.argv[1] ?? '')) {
  const { values } = parseArgs({ options: { seed: { type: 'string', default: '1' }, out: { type: 'string' } } });
  const counts = writeCalcData(values.out ?? DATA_DIR, Number(values.seed));
  console.log(
    `calc data written (${Object.entries(counts)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')})`,
  );
}
