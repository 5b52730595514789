/**
 * The sql task (the paper's Spider text-to-SQL in miniature): questions about the company database with
 * a gold query each, made from templates filled with values from the rows so every gold result is
 * non-empty. Also the three agents' prompts (short enough for the built-in model's 256-byte context).
 * The warm-up's demonstrations are made from problems of their own: warmup-demos.ts. Pure: no I/O.
 */
import { rng } from '../shared/rng.js';
import { type CompanyRows, SCHEMA_LINE } from './db.js';

export interface SqlTask {
  id: string;
  question: string;
  gold: string;
}

/** A question template: the values it can be filled with (read from the rows) and the filled question. */
interface Template {
  values(rows: CompanyRows): (string | number)[];
  make(v: string | number): { question: string; gold: string };
}

const uniq = <T extends string | number>(xs: T[]) => [...new Set(xs)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
const depts = (r: CompanyRows) => r.depts.map((d) => d.name);
const cities = (r: CompanyRows) => uniq(r.depts.map((d) => d.city));
const people = (r: CompanyRows) => r.emps.map((e) => e.name);
/** Years with someone hired after them, so "after Y" is never empty. */
const years = (r: CompanyRows) => uniq(r.emps.map((e) => e.year)).slice(0, -1);
/** Pay levels below the top one, so "paid more than P" is never empty. */
const pays = (r: CompanyRows) => uniq(r.emps.map((e) => e.pay)).slice(0, -1);

/** Question templates, from one-table lookups to joins and aggregates. */
export const TEMPLATES: Template[] = [
  { values: depts, make: (d) => ({ question: `How many employees are in ${d}?`, gold: `SELECT COUNT(*) FROM emp WHERE dept='${d}'` }) },
  { values: years, make: (y) => ({ question: `Who was hired in ${y}?`, gold: `SELECT name FROM emp WHERE year=${y}` }) },
  { values: depts, make: (d) => ({ question: `What is the average pay in ${d}?`, gold: `SELECT AVG(pay) FROM emp WHERE dept='${d}'` }) },
  { values: depts, make: (d) => ({ question: `In which city is ${d}?`, gold: `SELECT city FROM dept WHERE name='${d}'` }) },
  { values: cities, make: (c) => ({ question: `Which departments are in ${c}?`, gold: `SELECT name FROM dept WHERE city='${c}'` }) },
  { values: people, make: (e) => ({ question: `What is the pay of ${e}?`, gold: `SELECT pay FROM emp WHERE name='${e}'` }) },
  { values: depts, make: (d) => ({ question: `Who is paid most in ${d}?`, gold: `SELECT name FROM emp WHERE dept='${d}' ORDER BY pay DESC LIMIT 1` }) },
  {
    values: cities,
    make: (c) => ({ question: `How many employees work in ${c}?`, gold: `SELECT COUNT(*) FROM emp JOIN dept ON emp.dept=dept.name WHERE city='${c}'` }),
  },
  { values: pays, make: (p) => ({ question: `Who is paid more than ${p}?`, gold: `SELECT name FROM emp WHERE pay>${p}` }) },
  { values: depts, make: (d) => ({ question: `List the projects of ${d}.`, gold: `SELECT name FROM proj WHERE dept='${d}'` }) },
  { values: depts, make: (d) => ({ question: `What do the projects of ${d} cost in total?`, gold: `SELECT SUM(cost) FROM proj WHERE dept='${d}'` }) },
  { values: people, make: (e) => ({ question: `Which department is ${e} in?`, gold: `SELECT dept FROM emp WHERE name='${e}'` }) },
  {
    values: people,
    make: (e) => ({ question: `In which city does ${e} work?`, gold: `SELECT city FROM dept JOIN emp ON emp.dept=dept.name WHERE emp.name='${e}'` }),
  },
  { values: years, make: (y) => ({ question: `How many were hired after ${y}?`, gold: `SELECT COUNT(*) FROM emp WHERE year>${y}` }) },
];

export interface SqlSplits {
  train: SqlTask[];
  val: SqlTask[];
  test: SqlTask[];
}

/**
 * Every (template, value) question, shuffled by the seed and cut into train / val / test, so no question
 * (and no gold query) is shared between splits. Spider splits by database; we have one.
 */
export function makeSqlSplits(rows: CompanyRows, seed = 11, sizes = { val: 40, test: 60 }): SqlSplits {
  const all = TEMPLATES.flatMap((t) => t.values(rows).map((v) => t.make(v)));
  const r = rng(seed);
  for (let i = all.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [all[i], all[j]] = [all[j], all[i]];
  }
  if (all.length < sizes.val + sizes.test + 20) throw new Error(`only ${all.length} questions: too few for val ${sizes.val} + test ${sizes.test}`);
  const tag = (prefix: string, xs: typeof all): SqlTask[] => xs.map((x, i) => ({ id: `${prefix}-${i}`, ...x }));
  return {
    test: tag('test', all.slice(0, sizes.test)),
    val: tag('val', all.slice(sizes.test, sizes.test + sizes.val)),
    train: tag('train', all.slice(sizes.test + sizes.val)),
  };
}

/** Chat messages as each agent sends them (LangChain builds the same list from its templates). */
export interface Msg {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** Longest query result shown to the checker and rewriter, in characters. */
export const RESULT_CHARS = 28;

export const WRITER_SYSTEM = SCHEMA_LINE;
export const CHECKER_SYSTEM = 'Reply yes or no.';
/** The rewriter's request: the review (reviewText), then what it is asked for. */
export const REWRITER_PROMPT = '{review}\nBetter SQL:';

/**
 * The texts the agents are given, as agent.ts reads them with `llm.prompt` (so `agl optimize` can rewrite them): the
 * writer's and the checker's system prompts and the rewriter's request. The defaults are the seeds filled in, the
 * texts the shipped warm-up was trained on (warmup-demos.ts builds its demonstrations with them).
 */
export interface SqlPrompts {
  writer: string;
  checker: string;
  rewriter(review: string): string;
}
export const SEED_PROMPTS: SqlPrompts = { writer: WRITER_SYSTEM, checker: CHECKER_SYSTEM, rewriter: (review) => `${review}\nBetter SQL:` };

export function writerMessages(question: string, prompts: SqlPrompts = SEED_PROMPTS): Msg[] {
  return [
    { role: 'system', content: prompts.writer },
    { role: 'user', content: question },
  ];
}

/**
 * Longest query shown to the checker and rewriter, in characters (gold queries have at most ~80): a sampled
 * writer that rambles must not push their prompts past the built-in model's context, which would fail the
 * rollout and drop the writer's call from training instead of scoring it 0.
 */
export const SQL_CHARS = 90;

const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** What the checker and rewriter see: the question, the query, and what running it gave. */
export function reviewText(question: string, sql: string, result: string): string {
  return `${question}\n${cut(sql, SQL_CHARS)}\n=${cut(result, RESULT_CHARS)}`;
}

export function checkerMessages(question: string, sql: string, result: string, prompts: SqlPrompts = SEED_PROMPTS): Msg[] {
  return [
    { role: 'system', content: prompts.checker },
    { role: 'user', content: `${reviewText(question, sql, result)}\nCorrect?` },
  ];
}

export function rewriterMessages(question: string, sql: string, result: string, prompts: SqlPrompts = SEED_PROMPTS): Msg[] {
  return [{ role: 'user', content: prompts.rewriter(reviewText(question, sql, result)) }];
}

/**
 * The SQL in a model's reply: inside a ```sql fence when there is one, else from the first SELECT/WITH,
 * up to the first semicolon. Real LLMs wrap queries in prose and fences; the tiny model writes bare SQL.
 */
export function extractSql(reply: string): string {
  const fenced = /```(?:sql|sqlite)?\s*([\s\S]*?)```/i.exec(reply);
  let text = fenced ? fenced[1] : reply;
  const start = text.search(/\b(SELECT|WITH)\b/i);
  if (start >= 0) text = text.slice(start);
  const semi = text.indexOf(';');
  if (semi >= 0) text = text.slice(0, semi);
  return text.replace(/\s+/g, ' ').trim();
}

/** The checker's verdict: a reply starting with yes (or saying correct) accepts the query. */
export function checkerAccepts(reply: string): boolean {
  const t = reply.trim().toLowerCase();
  return /^(yes|correct|ok)\b/.test(t) || (/\bcorrect\b/.test(t) && !/\b(not|in)correct\b/.test(t));
}
