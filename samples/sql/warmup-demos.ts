/**
 * The sql warm-up's demonstrations, from problems of their own (as calc's): the same question templates
 * asked about DEMO_COMPANIES invented companies (demoRoster: made-up names for departments, cities, people
 * and projects, new in every company; hiring years before 2015 and pay levels ending in 100-900, none of
 * which the sample's company has), so no demonstration question or gold query is one of train/val/test.
 * The names change from company to company so the warm-up cannot memorise them: it learns how each
 * template maps to SQL and to copy the value in the question into the query, never a held-out answer.
 * (With one fixed demo company, 300 SFT steps learned the templates but wrote that company's names:
 * 0 of 40 held-out questions right.)
 *
 * The demonstrator is imperfect on purpose, so RL has something to learn from the execution reward alone
 * (calc's demonstrator answered 70% of problems in its head; here the writer takes shortcuts):
 *   - the writer writes the gold query on WRITER_SHARES.gold of the problems; on `shortcut` ones it drops
 *     the filter (a query that runs and returns rows, but the wrong ones); on `typo` ones it pluralises
 *     the table name (`FROM emps`, an error);
 *   - the checker says yes to any query that runs and returns rows, no otherwise (it cannot tell a
 *     shortcut from the gold query, so a shortcut ends the episode with reward 0);
 *   - after a no, the rewriter writes the gold query and the checker accepts it.
 * A model imitating this drops the filter more often than it writes it (greedy, it mostly takes the
 * shortcut: a low start), while groups at temperature 1 hold both behaviours, so GRPO (writer and
 * rewriter trained) can learn that the filter pays.
 */
import Database from 'better-sqlite3';
import { rng } from '../shared/rng.js';
import { COMPANY, type Roster, companyRows, fillCompanyDb } from './db.js';
import { formatResult, runQuery } from './execute.js';
import { checkerMessages, type Msg, rewriterMessages, TEMPLATES, writerMessages, type SqlTask } from './task.js';

/** Syllables the demo companies' names are made of (none of the sample company's names can come out: see demoRoster). */
const ONSETS = ['b', 'd', 'f', 'g', 'h', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'z', 'br', 'dr', 'kl', 'st', 'tr'];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'ai', 'ea', 'io'];

/** Any lowercase letter: the copy drills' names (see COPY_DRILLS). */
const LETTERS = [...'abcdefghijklmnopqrstuvwxyz'];

/**
 * How a demo company's names are made: `syllables` (pronounceable, two or three consonant-vowel pairs) or
 * `letters` (three to seven letters drawn uniformly, e.g. `Qxevt`), which no language prior can guess.
 */
export type NameStyle = 'syllables' | 'letters';

/** How many demo companies the demonstrations ask about, and how big each is. */
export const DEMO_COMPANIES = 5;
const SIZES = { depts: 9, people: 56, projects: 20 };

/**
 * A demo company from a seed: invented names (two or three syllables) for its departments, cities, people
 * and projects, hiring years in a nine-year window before 2015 and pay levels ending in 100-900 (the
 * sample's company hires 2015-2024 and pays whole thousands). Names are new in every company, so the
 * warm-up cannot memorise them: it has to learn to copy the name in the question into the query.
 */
export function demoRoster(seed: number, style: NameStyle = 'syllables'): Roster {
  const r = rng(seed);
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)];
  const banned = new Set([...COMPANY.people, ...COMPANY.projects, ...COMPANY.depts.flatMap((d) => [d.name, d.city])].map((n) => n.toLowerCase()));
  const used = new Set<string>();
  const name = (): string => {
    for (;;) {
      const n =
        style === 'letters'
          ? Array.from({ length: 3 + Math.floor(r() * 5) }, () => pick(LETTERS)).join('')
          : Array.from({ length: r() < 0.6 ? 2 : 3 }, () => pick(ONSETS) + pick(VOWELS)).join('');
      const cap = n[0].toUpperCase() + n.slice(1);
      if (!banned.has(n) && !used.has(n)) {
        used.add(n);
        return cap;
      }
    }
  };
  const cities = Array.from({ length: 5 }, name);
  const depts = Array.from({ length: SIZES.depts }, () => ({ name: name(), city: pick(cities) }));
  const first = 1985 + Math.floor(r() * 21);
  return {
    depts,
    people: Array.from({ length: SIZES.people }, name),
    projects: Array.from({ length: SIZES.projects }, name),
    years: [first, first + 9],
    payOffset: 100 * (1 + Math.floor(r() * 9)),
  };
}

/** How the demonstrator's writer answers: shares of the problems (see the file comment). */
export const WRITER_SHARES = { gold: 0.35, shortcut: 0.45, typo: 0.2 };

/** The writer's shortcut: the gold query without its filter (ORDER BY / LIMIT kept). */
export function dropFilter(gold: string): string {
  return gold.replace(/ WHERE .*?(?= ORDER BY |$)/, '');
}
/** The writer's typo: the first table name pluralised (`FROM emp` -> `FROM emps`), which SQLite rejects. */
export function pluralTable(gold: string): string {
  return gold.replace(/ FROM (\w+)/, ' FROM $1s');
}

/** A demo problem with the company it is asked about (index into the demo companies). */
export interface DemoProblem extends SqlTask {
  company: number;
}

/** Which demo companies the demonstrations ask about, and how many of each company's questions. */
export interface DemoSet {
  seed: number;
  companies: number;
  style: NameStyle;
  /** Questions kept per company (a seeded sample), all when absent. */ perCompany?: number;
}

/** The warm-up's first demonstrations (data/demos.jsonl): five companies with pronounceable names, every question. */
export const DEMOS: DemoSet = { seed: 3, companies: DEMO_COMPANIES, style: 'syllables' };

/**
 * The copy drills (data/demos-copy.jsonl): the same templates and the same imperfect demonstrator, asked about
 * forty companies whose names are random letters, a sample of each company's questions. Measured reason: after
 * 2,700 steps on DEMOS the writer started a held-out name with the question's first letters, then went on in
 * the demo companies' syllable style (`Walt` -> `name='Habe'`): it had learned those names' look, not to
 * copy. Names no prior can predict leave copying as the only way to lower the loss.
 */
export const COPY_DRILLS: DemoSet = { seed: 11, companies: 40, style: 'letters', perCompany: 110 };

/** The rows of each company of a demo set (as its databases are filled). */
function demoCompanies(set: DemoSet) {
  return Array.from({ length: set.companies }, (_, c) => companyRows(set.seed + c, demoRoster(set.seed * 1000 + c, set.style)));
}

/** Every (template, value) question about each demo company (or a seeded sample of perCompany of them). */
export function demoProblems(set: DemoSet = DEMOS, companies = demoCompanies(set)): DemoProblem[] {
  const r = rng(set.seed ^ 0xc0de);
  return companies
    .flatMap((rows, c) => {
      const all = TEMPLATES.flatMap((t) => t.values(rows).map((v) => ({ ...t.make(v), company: c })));
      if (set.perCompany === undefined || all.length <= set.perCompany) return all;
      for (let i = all.length - 1; i > 0; i--) {
        const j = Math.floor(r() * (i + 1));
        [all[i], all[j]] = [all[j], all[i]];
      }
      return all.slice(0, set.perCompany);
    })
    .map((x, i) => ({ id: `demo-${i}`, ...x }));
}

/**
 * The demonstrations, in the exact chat form the agent sends, for every demo problem whose question and
 * gold query are in none of `heldApart` (train/val/test: never a shared question, even by coincidence).
 */
export function warmupDemonstrations(heldApart: SqlTask[], set: DemoSet = DEMOS): { messages: Msg[] }[] {
  const taken = new Set(heldApart.flatMap((t) => [t.question, t.gold]));
  const companies = demoCompanies(set);
  const dbs = companies.map((rows) => {
    const db = new Database(':memory:');
    fillCompanyDb(db, rows);
    return db;
  });
  try {
    const r = rng(set.seed ^ 0x5eed);
    const demos: { messages: Msg[] }[] = [];
    for (const p of demoProblems(set, companies)) {
      if (taken.has(p.question) || taken.has(p.gold)) continue;
      const run = (sql: string) => {
        const q = runQuery(dbs[p.company], sql);
        return { text: formatResult(q), accepted: q.error === null && q.rows.length > 0 };
      };
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
    for (const db of dbs) db.close();
  }
}
