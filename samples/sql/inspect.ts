/**
 * What sql checkpoints do on held-out questions, per question template: the sample's own LangGraph.js
 * graph (writer, checker, rewriter) runs greedily against each checkpoint (served by `agl serve --model`,
 * samples/harness/serve-checkpoint.ts), and each episode is sorted by what the writer's first query did (the gold rows,
 * no filter, a pluralised table, a wrong value, another error) and whether the rewriter repaired it.
 * Given two checkpoints (before and after training) it prints them side by side: what RL changed.
 *   npx tsx samples/sql/inspect.ts samples/sql/warmup [<after-checkpoint>] [--data samples/sql/data/val.jsonl] [--temperature 1]
 * (--temperature 1 samples as training rollouts do: how often each behaviour shows up in a GRPO group.)
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { chatModelFor } from './agent.js';
import { openCompanyDb } from './db.js';
import { executionReward, runQuery } from './execute.js';
import { buildSqlGraph } from './graph.js';
import { serveCheckpoint } from '../harness/serve-checkpoint.js';
import { type SqlTask, TEMPLATES } from './task.js';

/** What the writer's first query did. */
export const WRITER_OUTCOMES = ['gold rows', 'no filter', 'plural table', 'wrong value', 'other error'] as const;
export type WriterOutcome = (typeof WRITER_OUTCOMES)[number];

export interface SqlEpisode {
  template: number;
  writer: WriterOutcome;
  rewrites: number;
  reward: number;
  question: string;
  query: string;
}

/** The template a question was made from (its text around the value), or -1. */
export function templateOf(question: string): number {
  return TEMPLATES.findIndex((t) => {
    const [pre, post] = t.make('\u0000').question.split('\u0000');
    return question.length > pre.length + post.length && question.startsWith(pre) && question.endsWith(post);
  });
}

export function writerOutcome(db: ReturnType<typeof openCompanyDb>, sql: string, gold: string): WriterOutcome {
  if (executionReward(db, sql, gold) === 1) return 'gold rows';
  const r = runQuery(db, sql);
  if (r.error !== null) return / FROM (emps|depts|projs)\b/.test(sql) ? 'plural table' : 'other error';
  return / WHERE /.test(gold) && !/ WHERE /.test(sql) ? 'no filter' : 'wrong value';
}

/** Runs the graph on every task against one checkpoint (a few at a time: the server batches them). */
export async function inspectSql(checkpoint: string, tasks: SqlTask[], temperature = 0, concurrency = 4): Promise<SqlEpisode[]> {
  const served = await serveCheckpoint(checkpoint, { temperature });
  const db = openCompanyDb();
  try {
    const graph = buildSqlGraph(chatModelFor(served.llm), db);
    const out: SqlEpisode[] = new Array(tasks.length);
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let i = next++; i < tasks.length; i = next++) {
          const t = tasks[i];
          const final = await graph.invoke(t.question);
          const query = final.history[0]?.sql ?? '';
          out[i] = {
            template: templateOf(t.question),
            writer: writerOutcome(db, query, t.gold),
            rewrites: final.history.length - 1,
            reward: executionReward(db, final.sql, t.gold),
            question: t.question,
            query,
          };
        }
      }),
    );
    return out;
  } finally {
    db.close();
    await served.stop();
  }
}

const pct = (x: number) => `${Math.round(x * 100)}%`.padStart(4);

/** One line per template (and all): accuracy and the writer's first-query outcomes, for each checkpoint. */
export function sqlTable(tasks: SqlTask[], runs: { name: string; episodes: SqlEpisode[] }[]): string {
  const head = [
    'template'.padEnd(44),
    ...runs.map((r) => `${r.name}: acc  ${WRITER_OUTCOMES.map((o) => o.split(' ')[0].slice(0, 6).padStart(6)).join(' ')} rewrites`),
  ].join(' | ');
  const row = (label: string, keep: (i: number) => boolean) => {
    const cells = runs.map((r) => {
      const eps = r.episodes.filter((_, i) => keep(i));
      const share = (f: (e: SqlEpisode) => boolean) => (eps.length ? eps.filter(f).length / eps.length : 0);
      return `${' '.repeat(r.name.length + 2)}${pct(share((e) => e.reward === 1))} ${WRITER_OUTCOMES.map((o) => pct(share((e) => e.writer === o)).padStart(6)).join(' ')} ${pct(share((e) => e.rewrites > 0)).padStart(8)}`;
    });
    return [label.padEnd(44), ...cells].join(' | ');
  };
  const lines = [head, row(`all (${tasks.length})`, () => true)];
  TEMPLATES.forEach((t, k) => {
    const n = tasks.filter((x) => templateOf(x.question) === k).length;
    if (n) lines.push(row(`${t.make('X').question} (${n})`, (i) => templateOf(tasks[i].question) === k));
  });
  return lines.join('\n');
}

if (/sql[\\/]inspect\.[mc]?[tj]s$/.test(process.argv[1] ?? '')) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { data: { type: 'string' }, temperature: { type: 'string', default: '0' }, examples: { type: 'string', default: '0' } },
  });
  const tasks = readFileSync(values.data ?? 'samples/sql/data/val.jsonl', 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as SqlTask);
  const checkpoints = positionals.length ? positionals : ['samples/sql/warmup'];
  void (async () => {
    const runs: { name: string; episodes: SqlEpisode[] }[] = [];
    for (const [i, c] of checkpoints.entries())
      runs.push({
        name: checkpoints.length > 1 ? (i === 0 ? 'before' : 'after') : Number(values.temperature) > 0 ? `T=${values.temperature}` : 'greedy',
        episodes: await inspectSql(c, tasks, Number(values.temperature)),
      });
    process.stdout.write(
      `${checkpoints.map((c, i) => `${runs[i].name}: ${c}`).join('\n')}\nwriter's first query: ${WRITER_OUTCOMES.join(', ')}; rewrites: episodes where the checker said no\n\n${sqlTable(tasks, runs)}\n`,
    );
    const k = Number(values.examples);
    // --examples K: K writer queries per outcome, per checkpoint (what "wrong value" or "other error" looks like)
    for (const r of k > 0 ? runs : []) {
      for (const o of WRITER_OUTCOMES) {
        const eps = r.episodes.filter((e) => e.writer === o).slice(0, k);
        if (eps.length) process.stdout.write(`\n${r.name}, ${o}:\n${eps.map((e) => `  ${e.question}\n    ${e.query}`).join('\n')}\n`);
      }
    }
    process.exit(0);
  })().catch((e) => {
    process.stderr.write(`${(e as Error).message}\n`);
    process.exit(1);
  });
}
