/**
 * Writes the order desk's task files (data/train.jsonl, val.jsonl, test.jsonl) from world.ts, seeded, so the shipped
 * files are what this makes: every split holds every kind of question in turn (the val set can tell every rule apart).
 *   node --import tsx samples/apo/make-data.ts   (from the repository root)
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeTasks } from './world.js';

export const DATA_DIR = join('samples', 'apo', 'data');
export const SPLITS = { train: { seed: 11, n: 42 }, val: { seed: 22, n: 14 }, test: { seed: 33, n: 35 } } as const;

export function writeDeskData(dir = DATA_DIR): void {
  for (const [split, { seed, n }] of Object.entries(SPLITS)) {
    const tasks = makeTasks(seed, n, split);
    writeFileSync(join(dir, `${split}.jsonl`), tasks.map((t) => JSON.stringify(t)).join('\n') + '\n');
    process.stdout.write(`${split}: ${tasks.length} tasks\n`);
  }
}

if (process.argv[1] && /make-data\.ts$/.test(process.argv[1])) writeDeskData();
