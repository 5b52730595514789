/**
 * Retrieval over the rag corpus with MiniSearch (BM25-style full-text search): titles boosted, prefix
 * and light fuzzy matching so a slightly misspelled invented name still finds its document.
 */
import MiniSearch from 'minisearch';
import type { Doc } from './corpus.js';

export class CorpusSearch {
  private readonly index: MiniSearch<Doc>;
  private readonly byId: Map<string, Doc>;

  constructor(docs: Doc[]) {
    this.index = new MiniSearch<Doc>({ fields: ['title', 'text'], storeFields: ['id'], searchOptions: { boost: { title: 2 }, prefix: true, fuzzy: 0.2 } });
    this.index.addAll(docs);
    this.byId = new Map(docs.map((d) => [d.id, d]));
  }

  /** The best `k` documents for a query, leaving out those already found. */
  search(query: string, k = 1, exclude: Set<string> = new Set()): Doc[] {
    if (!query.trim()) return [];
    const out: Doc[] = [];
    for (const hit of this.index.search(query)) {
      if (exclude.has(hit.id as string)) continue;
      out.push(this.byId.get(hit.id as string)!);
      if (out.length >= k) break;
    }
    return out;
  }
}
