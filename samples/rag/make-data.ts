/**
 * Makes the rag sample's data: the corpus (data/corpus.jsonl), the two-hop question splits
 * (data/{train,val,test}.jsonl) and SFT warm-up demonstrations (data/demos.jsonl) about another world,
 * disjoint from every split (warmup-demos.ts). Deterministic.
 *   npx tsx samples/rag/make-data.ts
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeCorpus, makeRagSplits, makeWorld } from './corpus.js';
import { DATA_DIR } from './data.js';
import { warmupDemonstrations } from './warmup-demos.js';

export function makeRagData(dir = DATA_DIR): { docs: number; train: number; val: number; test: number; demos: number } {
  mkdirSync(dir, { recursive: true });
  const world = makeWorld();
  const docs = makeCorpus(world);
  const splits = makeRagSplits(world);
  const jsonl = (xs: unknown[]) => xs.map((x) => JSON.stringify(x)).join('\n') + '\n';
  writeFileSync(join(dir, 'corpus.jsonl'), jsonl(docs));
  for (const [name, tasks] of Object.entries(splits)) writeFileSync(join(dir, `${name}.jsonl`), jsonl(tasks));
  const demos = warmupDemonstrations([...splits.train, ...splits.val, ...splits.test]);
  writeFileSync(join(dir, 'demos.jsonl'), jsonl(demos));
  return { docs: docs.length, train: splits.train.length, val: splits.val.length, test: splits.test.length, demos: demos.length };
}

if (/make-data\.[cm]?[tj]s$/.test(process.argv[1] ?? '')) {
  const n = makeRagData();
  console.log(`wrote ${n.docs} documents, ${n.train}/${n.val}/${n.test} train/val/test questions, ${n.demos} demonstrations to ${DATA_DIR}`);
}
