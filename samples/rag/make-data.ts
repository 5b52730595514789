/**
 * Makes the rag sample's data: the corpus (data/corpus.jsonl), the two-hop question splits
 * (data/{train,val,test}.jsonl) and SFT warm-up demonstrations (data/demos.jsonl, and the copy drills
 * data/demos-copy.jsonl, the document drills data/demos-doc.jsonl) about other worlds, disjoint from every split (warmup-demos.ts). Deterministic.
 *   npx tsx samples/rag/make-data.ts
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeCorpus, makeRagSplits, makeWorld } from './corpus.js';
import { DATA_DIR } from './data.js';
import { COPY_DRILLS, DEMOS, DOC_DRILLS, warmupDemonstrations } from './warmup-demos.js';

export function makeRagData(dir = DATA_DIR): { docs: number; train: number; val: number; test: number; demos: number; drills: number; docDrills: number } {
  mkdirSync(dir, { recursive: true });
  const world = makeWorld();
  const docs = makeCorpus(world);
  const splits = makeRagSplits(world);
  const jsonl = (xs: unknown[]) => xs.map((x) => JSON.stringify(x)).join('\n') + '\n';
  writeFileSync(join(dir, 'corpus.jsonl'), jsonl(docs));
  for (const [name, tasks] of Object.entries(splits)) writeFileSync(join(dir, `${name}.jsonl`), jsonl(tasks));
  const held = [...splits.train, ...splits.val, ...splits.test];
  const demos = warmupDemonstrations(held, DEMOS);
  writeFileSync(join(dir, 'demos.jsonl'), jsonl(demos));
  const drills = warmupDemonstrations(held, COPY_DRILLS);
  writeFileSync(join(dir, 'demos-copy.jsonl'), jsonl(drills));
  const docDrills = warmupDemonstrations(held, DOC_DRILLS);
  writeFileSync(join(dir, 'demos-doc.jsonl'), jsonl(docDrills));
  return {
    docs: docs.length,
    train: splits.train.length,
    val: splits.val.length,
    test: splits.test.length,
    demos: demos.length,
    drills: drills.length,
    docDrills: docDrills.length,
  };
}

if (/make-data\.[cm]?[tj]s$/.test(process.argv[1] ?? '')) {
  const n = makeRagData();
  console.log(
    `wrote ${n.docs} documents, ${n.train}/${n.val}/${n.test} train/val/test questions, ${n.demos} demonstrations, ${n.drills} copy drills, ${n.docDrills} document drills to ${DATA_DIR}`,
  );
}
