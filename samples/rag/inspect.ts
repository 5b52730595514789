/**
 * What rag checkpoints do on held-out questions, per hop: the sample's own agent (the Agents SDK query
 * writer twice, the search, the answerer) runs greedily against each checkpoint (served by `agl serve
 * --model`, samples/harness/serve-checkpoint.ts), and each episode is sorted by what each call did: hop 1 wrote the
 * expert query (the question's entity), hop 2 followed the bridge (the entity the first document names),
 * repeated hop 1, or wrote something else; whether the second document found is the one holding the
 * answer; the answer's token F1. Given two checkpoints (before and after training) it prints them side by
 * side, per question template: what RL changed.
 *   npx tsx samples/rag/inspect.ts samples/rag/warmup [<after-checkpoint>] [--data samples/rag/data/val.jsonl] [--temperature 1] [--examples K]
 * (--examples K: K episodes per second-hop outcome, with the queries and the answer written.)
 */
import { readFileSync } from 'node:fs';
import { OpenAIChatCompletionsModel } from '@openai/agents';
import OpenAI from 'openai';
import { parseArgs } from 'node:util';
import { serveCheckpoint } from '../harness/serve-checkpoint.js';
import { roleFetch } from '../../sdk/index.js';
import { answerQuestion } from './agent.js';
import type { RagTask } from './corpus.js';
import { queryFor } from './prompts.js';

/** The question templates (corpus.ts), by the words they start with. */
export const RAG_TEMPLATES: [string, RegExp][] = [
  ['town of the maker of a work', /^In which town was the maker of /],
  ['river of a birthplace', /^Which river flows through the birthplace of /],
  ['region of a birthplace', /^In which region was /],
  ['profession of a founder', /^What was the profession of the founder of /],
  ['river of a guild hall', /^On which river is the hall of /],
  ['guild of the maker of a work', /^Which guild does the maker of /],
];

export interface RagEpisode {
  template: number;
  hop1Expert: boolean;
  hop2: 'bridge' | 'repeat' | 'other';
  bridgeFound: boolean;
  f1: number;
  /** What the calls wrote: the two queries and the answer. */
  queries: string[];
  answer: string;
}

export async function inspectRag(checkpoint: string, tasks: RagTask[], temperature = 0, concurrency = 4): Promise<RagEpisode[]> {
  const served = await serveCheckpoint(checkpoint, { temperature });
  try {
    const model = new OpenAIChatCompletionsModel(
      new OpenAI({ baseURL: served.llm.baseUrl, apiKey: served.llm.apiKey, maxRetries: 0, fetch: roleFetch() }),
      served.llm.model,
    );
    const out: RagEpisode[] = new Array(tasks.length);
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let i = next++; i < tasks.length; i = next++) {
          const t = tasks[i];
          const o = await answerQuestion(t, model, { temperature, maxTokens: 32 });
          const [q1, q2] = o.queries;
          const bridge = queryFor({ title: t.hops[1] });
          out[i] = {
            template: RAG_TEMPLATES.findIndex(([, re]) => re.test(t.question)),
            hop1Expert: q1 === queryFor({ title: t.hops[0] }),
            hop2: q2 === bridge ? 'bridge' : q2 === q1 ? 'repeat' : 'other',
            bridgeFound: o.docs.some((d) => d.title === t.hops[1]),
            f1: o.reward,
            queries: o.queries,
            answer: o.answer,
          };
        }
      }),
    );
    return out;
  } finally {
    await served.stop();
  }
}

const pct = (x: number) => `${Math.round(x * 100)}%`.padStart(5);

export function ragTable(tasks: RagTask[], runs: { name: string; episodes: RagEpisode[] }[]): string {
  const cols = ['F1', 'hop1 ok', 'hop2 bridge', 'repeat', 'found', 'answer=gold'];
  const head = ['template'.padEnd(34), ...runs.map((r) => `${r.name}: ${cols.join(' ')}`)].join(' | ');
  const row = (label: string, keep: (i: number) => boolean) =>
    [
      label.padEnd(34),
      ...runs.map((r) => {
        const eps = r.episodes.filter((_, i) => keep(i));
        const share = (f: (e: RagEpisode) => boolean) => (eps.length ? eps.filter(f).length / eps.length : 0);
        const f1 = eps.length ? eps.reduce((a, e) => a + e.f1, 0) / eps.length : 0;
        const cells = [
          f1.toFixed(2),
          pct(share((e) => e.hop1Expert)),
          pct(share((e) => e.hop2 === 'bridge')),
          pct(share((e) => e.hop2 === 'repeat')),
          pct(share((e) => e.bridgeFound)),
          pct(share((e) => e.f1 === 1)),
        ];
        return `${' '.repeat(r.name.length + 2)}${cells.map((c, k) => c.padStart(cols[k].length)).join(' ')}`;
      }),
    ].join(' | ');
  const lines = [head, row(`all (${tasks.length})`, () => true)];
  RAG_TEMPLATES.forEach(([label], k) => {
    const n = runs[0].episodes.filter((e) => e.template === k).length;
    if (n) lines.push(row(`${label} (${n})`, (i) => runs[0].episodes[i].template === k));
  });
  return lines.join('\n');
}

/** Up to k episodes per second-hop outcome: the question, what each call wrote, and the expected entities and answer. */
export function ragExamples(tasks: RagTask[], run: { name: string; episodes: RagEpisode[] }, k: number): string {
  const out: string[] = [];
  for (const hop2 of ['bridge', 'repeat', 'other'] as const) {
    const eps = run.episodes
      .map((e, i) => ({ e, t: tasks[i] }))
      .filter(({ e }) => e.hop2 === hop2)
      .slice(0, k);
    if (!eps.length) continue;
    out.push(`${run.name}, hop 2 ${hop2}:`);
    for (const { e, t } of eps) {
      out.push(
        `  ${t.question}`,
        `    queries ${e.queries.map((q) => JSON.stringify(q)).join(' -> ')}  (expected ${JSON.stringify(queryFor({ title: t.hops[0] }))} -> ${JSON.stringify(queryFor({ title: t.hops[1] }))})`,
      );
      out.push(`    answer ${JSON.stringify(e.answer)}  (gold ${JSON.stringify(t.answer)}, F1 ${e.f1.toFixed(2)})`);
    }
  }
  return out.join('\n');
}

if (/rag[\\/]inspect\.[mc]?[tj]s$/.test(process.argv[1] ?? '')) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { data: { type: 'string' }, temperature: { type: 'string', default: '0' }, examples: { type: 'string', default: '0' } },
  });
  const tasks = readFileSync(values.data ?? 'samples/rag/data/val.jsonl', 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as RagTask);
  const checkpoints = positionals.length ? positionals : ['samples/rag/warmup'];
  void (async () => {
    const runs: { name: string; episodes: RagEpisode[] }[] = [];
    for (const [i, c] of checkpoints.entries())
      runs.push({
        name: checkpoints.length > 1 ? (i === 0 ? 'before' : 'after') : Number(values.temperature) > 0 ? `T=${values.temperature}` : 'greedy',
        episodes: await inspectRag(c, tasks, Number(values.temperature)),
      });
    process.stdout.write(
      `${checkpoints.map((c, i) => `${runs[i].name}: ${c}`).join('\n')}\nhop1 ok: the first query names the question's entity; hop2 bridge: the second names the entity the first document gave (repeat: hop 1's query again); found: the answer's document was retrieved\n\n${ragTable(tasks, runs)}\n`,
    );
    const k = Number(values.examples);
    if (k > 0) process.stdout.write(`\n${ragExamples(tasks, runs.at(-1)!, k)}\n`);
    process.exit(0);
  })().catch((e) => {
    process.stderr.write(`${(e as Error).message}\n`);
    process.exit(1);
  });
}
