/** Where the rag sample's data lives, and loading the corpus (made by make-data.ts) from it. */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Doc, makeCorpus, makeWorld } from './corpus.js';

/** This sample's folder, whether tsx loads it as CommonJS (the package has no "type": "module") or as ESM. */
function sampleDir(): string {
  if (typeof __dirname === 'string') return __dirname;
  return dirname(fileURLToPath(import.meta.url));
}

export const DATA_DIR = join(sampleDir(), 'data');

/** The corpus from data/corpus.jsonl (a user may edit it), or made from the seed when the file is missing. */
export function loadCorpus(path = join(DATA_DIR, 'corpus.jsonl')): Doc[] {
  if (!existsSync(path)) return makeCorpus(makeWorld());
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l, i) => {
      const d = JSON.parse(l) as Doc;
      if (typeof d.id !== 'string' || typeof d.title !== 'string' || typeof d.text !== 'string')
        throw new Error(`${path}:${i + 1}: expected {"id","title","text"} strings`);
      return d;
    });
}
