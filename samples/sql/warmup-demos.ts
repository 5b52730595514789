/**
 * The sql warm-up's demonstrations, from problems of their own (as calc's): the same question templates
 * asked about another company (DEMO_COMPANY: other departments, cities, people and projects, hiring
 * years 2003-2012 and pay levels ending in 500, none of which the sample's company has), so no
 * demonstration question or gold query is one of train/val/test. The warm-up learns the format and how
 * each template maps to SQL, copying names from the question, never a held-out answer.
 *
 * The demonstrator is imperfect on purpose, so RL has something to learn from the execution reward alone
 * (calc's demonstrator answered 70% of problems in its head; here the writer takes shortcuts):
 *   - the writer writes the gold query on WRITER_SHARES.gold of the problems; on `shortcut` ones it drops
 *     the filter (a query that runs and returns rows, but the wrong ones); on `typo` ones it pluralises
 *     the table name (`FROM emps`, an error);
 *   - the checker says yes to any query that runs and returns rows, no otherwise (it cannot tell a
 *     shortcut from the gold query, so a shortcut ends the episode with reward 0);
 *   - after a no, the rewriter writes the gold query and the checker accepts it.
 * A model imitating this writes the filter on about half of the questions of every template, so groups at
 * temperature 1 hold both behaviours and GRPO (writer and rewriter trained) can learn that the filter pays.
 */
import Database from 'better-sqlite3';
import { rng } from '../calc/task.js';
import { type Roster, companyRows, fillCompanyDb } from './db.js';
import { formatResult, runQuery } from './execute.js';
import { checkerMessages, type Msg, rewriterMessages, TEMPLATES, writerMessages, type SqlTask } from './task.js';

const DEMO_DEPARTMENTS = [
  { name: 'Audit', city: 'Bergen' }, { name: 'Quality', city: 'Ghent' }, { name: 'Travel', city: 'Bergen' },
  { name: 'Payroll', city: 'Malmo' }, { name: 'Training', city: 'Ghent' }, { name: 'Security', city: 'Split' },
  { name: 'Logistics', city: 'Malmo' }, { name: 'Events', city: 'Tartu' }, { name: 'Hiring', city: 'Split' },
  { name: 'Data', city: 'Bilbao' },
];
const DEMO_PEOPLE = [
  'Abel', 'Bea', 'Cyd', 'Dora', 'Emil', 'Flo', 'Gil', 'Hedy', 'Ines', 'Joel', 'Kurt', 'Lina', 'Mats', 'Noor',
  'Oda', 'Per', 'Rhea', 'Saul', 'Tove', 'Ulf', 'Vida', 'Wim', 'Xena', 'Yngve', 'Zara', 'Arvo', 'Bodil', 'Carl',
  'Dina', 'Egon', 'Frida', 'Gorm', 'Hilde', 'Isak', 'Juna', 'Knut', 'Liv', 'Mogens', 'Nadia', 'Oskar', 'Petra',
  'Ragna', 'Stig', 'Tilde', 'Uwe', 'Valo', 'Willa', 'Yusuf', 'Zelda', 'Aksel', 'Britt', 'Conny', 'Dirk', 'Elin',
  'Folke', 'Greta', 'Harald', 'Idun', 'Jorun', 'Kalle',
];
const DEMO_PROJECTS = [
  'Atlas', 'Borealis', 'Cinder', 'Dynamo', 'Echo', 'Fjord', 'Glacier', 'Helix', 'Icarus', 'Jasper', 'Krypton',
  'Lotus', 'Mistral', 'Nova', 'Onyx', 'Prism', 'Quasar', 'Riptide', 'Sirocco', 'Tempest', 'Umbra', 'Vortex',
];

/** The company the demonstrations ask about: nothing in it is the sample company's (see the file comment). */
export const DEMO_COMPANY: Roster = { depts: DEMO_DEPARTMENTS, people: DEMO_PEOPLE, projects: DEMO_PROJECTS, years: [2003, 2012], payOffset: 500 };

/** How the demonstrator's writer answers: shares of the problems (see the file comment). */
export const WRITER_SHARES = { gold: 0.5, shortcut: 0.3, typo: 0.2 };

/** The writer's shortcut: the gold query without its filter (ORDER BY / LIMIT kept). */
export function dropFilter(gold: string): string {
  return gold.replace(/ WHERE .*?(?= ORDER BY |$)/, '');
}
/** The writer's typo: the first table name pluralised (`FROM emp` -> `FROM emps`), which SQLite rejects. */
export function pluralTable(gold: string): string {
  return gold.replace(/ FROM (\w+)/, ' FROM $1s');
}

/** Every (template, value) question about the demo company. */
export function demoProblems(seed = 3): SqlTask[] {
  const rows = companyRows(seed, DEMO_COMPANY);
  return TEMPLATES.flatMap((t) => t.values(rows).map((v) => t.make(v))).map((x, i) => ({ id: `demo-${i}`, ...x }));
}

/**
 * The demonstrations, in the exact chat form the agent sends, for every demo problem whose question and
 * gold query are in none of `heldApart` (train/val/test: never a shared question, even by coincidence).
 */
export function warmupDemonstrations(heldApart: SqlTask[], seed = 3): { messages: Msg[] }[] {
  const taken = new Set(heldApart.flatMap((t) => [t.question, t.gold]));
  const db = new Database(':memory:');
  try {
    fillCompanyDb(db, companyRows(seed, DEMO_COMPANY));
    const run = (sql: string) => { const r = runQuery(db, sql); return { text: formatResult(r), accepted: r.error === null && r.rows.length > 0 }; };
    const r = rng(seed ^ 0x5eed);
    const demos: { messages: Msg[] }[] = [];
    for (const p of demoProblems(seed)) {
      if (taken.has(p.question) || taken.has(p.gold)) continue;
      const u = r();
      const first = u < WRITER_SHARES.gold ? p.gold : u < WRITER_SHARES.gold + WRITER_SHARES.shortcut ? dropFilter(p.gold) : pluralTable(p.gold);
      const seen = run(first);
      demos.push({ messages: [...writerMessages(p.question), { role: 'assistant', content: first }] });
      demos.push({ messages: [...checkerMessages(p.question, first, seen.text), { role: 'assistant', content: seen.accepted ? 'yes' : 'no' }] });
      if (!seen.accepted) {
        demos.push({ messages: [...rewriterMessages(p.question, first, seen.text), { role: 'assistant', content: p.gold }] });
        demos.push({ messages: [...checkerMessages(p.question, p.gold, run(p.gold).text), { role: 'assistant', content: 'yes' }] });
      }
    }
    return demos;
  } finally {
    db.close();
  }
}
