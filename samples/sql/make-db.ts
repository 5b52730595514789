/**
 * Makes the sql sample's data: the SQLite database (data/company.db) and the question / gold-query
 * splits (data/{train,val,test}.jsonl) plus SFT warm-up demonstrations (data/demos.jsonl, and the copy
 * drills data/demos-copy.jsonl) about other companies, disjoint from every split (warmup-demos.ts).
 * Deterministic: running it again writes the same files.
 *   npx tsx samples/sql/make-db.ts
 */
import { writeFileSync } from 'node:fs';
import { DATA_DIR, DEFAULT_DB_PATH, openCompanyDb, writeCompanyDb } from './db.js';
import { runQuery } from './execute.js';
import { makeSqlSplits, type SqlTask } from './task.js';
import { COPY_DRILLS, warmupDemonstrations } from './warmup-demos.js';

export function makeSqlData(dir = DATA_DIR): { train: number; val: number; test: number; demos: number; drills: number } {
  const rows = writeCompanyDb(`${dir}/company.db`);
  const splits = makeSqlSplits(rows);
  const db = openCompanyDb(`${dir}/company.db`);
  try {
    for (const [name, tasks] of Object.entries(splits) as [string, SqlTask[]][]) {
      for (const t of tasks) if (runQuery(db, t.gold).rows.length === 0) throw new Error(`gold query of ${t.id} returns no rows: ${t.gold}`);
      writeFileSync(`${dir}/${name}.jsonl`, tasks.map((t) => JSON.stringify(t)).join('\n') + '\n');
    }
    const held = [...splits.train, ...splits.val, ...splits.test];
    const demos = warmupDemonstrations(held);
    writeFileSync(`${dir}/demos.jsonl`, demos.map((d) => JSON.stringify(d)).join('\n') + '\n');
    const drills = warmupDemonstrations(held, COPY_DRILLS);
    writeFileSync(`${dir}/demos-copy.jsonl`, drills.map((d) => JSON.stringify(d)).join('\n') + '\n');
    return { train: splits.train.length, val: splits.val.length, test: splits.test.length, demos: demos.length, drills: drills.length };
  } finally {
    db.close();
  }
}

if (/make-db\.[cm]?[tj]s$/.test(process.argv[1] ?? '')) {
  const n = makeSqlData();
  console.log(`wrote ${DEFAULT_DB_PATH} and ${n.train}/${n.val}/${n.test} train/val/test tasks, ${n.demos} demonstrations, ${n.drills} copy drills`);
}
