/**
 * The order desk: a small world with hidden rules, in which prompt optimization is measured honestly (issue #40
 * item 8). Tasks ask one question about an order record ("When was the order delivered?"); the right answer follows
 * house rules, each covering part of the tasks: which field answers an ambiguous question (plan rules) and how a value
 * is written (format rules). The scripted model (scripted-llm.ts) follows a rule only when the prompt it is given
 * states it, and otherwise answers as a model would by default; the grader's feedback names what was broken ("date
 * format: expected 2024-03-09, got March 9, 2024"), never a rule's wording. The scripted optimizer (also here) writes
 * a rule into a prompt only from what its request shows: feedback naming the broken aspect, or a rule written out in
 * a critique or in another candidate's text. So a search gains only from what it learns through feedback.
 * Pure: no I/O. The data files (data/*.jsonl) are made from it by make-data.ts.
 */
import { rng } from '../shared/rng.js';

export const FIELDS = ['order', 'customer', 'recipient', 'placed', 'shipped', 'total', 'items', 'paid'] as const;
export type Field = (typeof FIELDS)[number];
export type OrderRecord = Record<Field, string>;

/** What a task asks, and which field answers it. */
export const KINDS = ['order', 'placed', 'delivery', 'total', 'buyer', 'items', 'paid'] as const;
export type Kind = (typeof KINDS)[number];

export interface DeskTask {
  id: string;
  kind: Kind;
  record: OrderRecord;
  question: string;
  /** The answer under every house rule. */
  answer: string;
}

/**
 * A house rule: the job it does (which field to read, or how to write a value), its wordings (an optimizer words a
 * rule one way or another, as a real model rephrases), how a prompt is read for it, and the phrase that starts the
 * grader's feedback when an answer broke it (what the optimizer reads).
 */
export interface Rule {
  id: string;
  job: 'plan' | 'format';
  sentences: readonly string[];
  stated: RegExp;
  aspect: string;
}

export const RULES: readonly Rule[] = [
  {
    id: 'delivery',
    job: 'plan',
    sentences: [
      'A delivery date is the shipped date, not the placed date.',
      'For a delivery, read the shipped field, not the placed one.',
      'Deliveries are dated by when the order shipped.',
    ],
    stated: /deliver\w*[^.\n]*shipped/i,
    aspect: 'wrong date',
  },
  {
    id: 'buyer',
    job: 'plan',
    sentences: [
      'The buyer is the customer field, not the recipient.',
      'Asked who bought, the buyer is the customer, never the recipient.',
      'A buyer means the customer field.',
    ],
    stated: /buyer[^.\n]*customer/i,
    aspect: 'wrong person',
  },
  {
    id: 'date',
    job: 'format',
    sentences: ['Write dates as YYYY-MM-DD.', 'Dates must be in YYYY-MM-DD form.', 'Give every date as YYYY-MM-DD (ISO 8601).'],
    stated: /YYYY-MM-DD/,
    aspect: 'date format',
  },
  {
    id: 'amount',
    job: 'format',
    sentences: [
      'Write amounts with two decimals and no currency sign.',
      'Give money as a plain number with two decimals.',
      'Amounts: two decimals, no $ sign.',
    ],
    stated: /two decimals/i,
    aspect: 'amount format',
  },
  {
    id: 'name',
    job: 'format',
    sentences: ['Write names in Title Case.', 'Capitalize names in Title Case.', 'Names go in Title Case (Ann Lee).'],
    stated: /title case/i,
    aspect: 'name format',
  },
  {
    id: 'digits',
    job: 'format',
    sentences: ['Write counts as digits.', 'Give numbers as digits, not words.', 'Counts are written in digits (3, not three).'],
    stated: /\b(counts?|numbers?)\b[^.\n]*\bdigits\b/i,
    aspect: 'number format',
  },
  {
    id: 'yesno',
    job: 'format',
    sentences: ['Answer yes/no questions with yes or no.', 'Reply yes or no to a yes/no question.', 'Whether paid or not: say yes or no.'],
    stated: /\byes or no\b/i,
    aspect: 'yes/no answer',
  },
];
const rule = (id: string): Rule => RULES.find((r) => r.id === id)!;

const QUESTIONS: Record<Kind, readonly string[]> = {
  order: ['What is the order number?', 'Which order is this?'],
  placed: ['When was the order placed?', 'On what date was the order made?'],
  delivery: ['When was the order delivered?', 'What is the delivery date?'],
  total: ['What is the order total?', 'How much did the order cost?'],
  buyer: ['Who bought the order?', 'Who is the buyer?'],
  items: ['How many items are in the order?', 'How many items were ordered?'],
  paid: ['Has the order been paid?', 'Is the order paid?'],
};
const FIRST = ['ann', 'bo', 'cara', 'dev', 'eli', 'fay', 'gus', 'hana', 'ivo', 'jun'];
const LAST = ['lee', 'chen', 'okafor', 'silva', 'novak', 'berg', 'haddad', 'ito'];
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const WORDS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve'];

/** Tasks `prefix-0..n-1`, every kind in turn (so each split holds each kind), then shuffled; deterministic in the seed. */
export function makeTasks(seed: number, n: number, prefix: string): DeskTask[] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const tasks = Array.from({ length: n }, (_, i) => {
    const kind = KINDS[i % KINDS.length]!;
    const day = (k: number) => `2024-${String(1 + Math.floor(r() * 12)).padStart(2, '0')}-${String(k).padStart(2, '0')}`;
    const placedDay = 1 + Math.floor(r() * 20);
    const placed = day(placedDay);
    const record: OrderRecord = {
      order: `A-${1000 + Math.floor(r() * 9000)}`,
      customer: `${pick(FIRST)} ${pick(LAST)}`,
      recipient: `${pick(FIRST)} ${pick(LAST)}`,
      placed,
      shipped: `${placed.slice(0, 8)}${String(placedDay + 1 + Math.floor(r() * 7)).padStart(2, '0')}`,
      total: String(Math.round((5 + r() * 2000) * (r() < 0.5 ? 1 : 10)) / 10),
      items: String(1 + Math.floor(r() * 12)),
      paid: r() < 0.5 ? 'true' : 'false',
    };
    if (record.recipient === record.customer) record.recipient = `${pick(FIRST)} ${LAST[(LAST.indexOf(record.customer.split(' ')[1]!) + 1) % LAST.length]}`;
    const question = pick(QUESTIONS[kind]);
    return { kind, record, question, answer: answerWith(kind, record, RULES) };
  });
  const order = tasks.map((t, i) => ({ t, k: r(), i })).sort((a, b) => a.k - b.k || a.i - b.i);
  return order.map((x, i) => ({ id: `${prefix}-${i}`, ...x.t }));
}

/** The record as the agent shows it to the model. */
export const recordLine = (r: OrderRecord): string => FIELDS.map((f) => `${f}=${r[f]}`).join('; ');

/** The field a question asks for, under the rules given (no plan rule: the field a model reads by default). */
export function fieldFor(kind: Kind, rules: readonly Rule[]): Field {
  const has = (id: string) => rules.some((r) => r.id === id);
  switch (kind) {
    case 'delivery':
      return has('delivery') ? 'shipped' : 'placed';
    case 'buyer':
      return has('buyer') ? 'customer' : 'recipient';
    default:
      return kind;
  }
}

/** The kind of a question, as a reader of it tells (null: not a question about an order). */
export function kindOf(question: string): Kind | null {
  for (const kind of KINDS) if (QUESTIONS[kind].some((q) => q.toLowerCase() === question.trim().toLowerCase())) return kind;
  return null;
}

/** A field's value written under the rules given (no format rule: as a model writes it by default). */
export function formatValue(field: Field, value: string, rules: readonly Rule[]): string {
  const has = (id: string) => rules.some((r) => r.id === id);
  if (field === 'placed' || field === 'shipped') {
    if (has('date')) return value;
    const [y, m, d] = value.split('-').map(Number);
    return `${MONTHS[m! - 1]} ${d}, ${y}`;
  }
  if (field === 'total') return has('amount') ? Number(value).toFixed(2) : `$${value}`;
  if (field === 'customer' || field === 'recipient') return has('name') ? value.replace(/\b\w/g, (c) => c.toUpperCase()) : value;
  if (field === 'items') return has('digits') ? value : (WORDS[Number(value)] ?? value);
  if (field === 'paid') return has('yesno') ? (value === 'true' ? 'yes' : 'no') : value;
  return value;
}

export function answerWith(kind: Kind, record: OrderRecord, rules: readonly Rule[]): string {
  const field = fieldFor(kind, rules);
  return formatValue(field, record[field], rules);
}

/** The rules a text states. */
export const statedRules = (text: string): Rule[] => RULES.filter((r) => r.stated.test(text));

/** The format rule a field's value is written by (null: written as stored). */
const FORMAT_OF: Record<Field, string | null> = {
  order: null,
  placed: 'date',
  shipped: 'date',
  total: 'amount',
  customer: 'name',
  recipient: 'name',
  items: 'digits',
  paid: 'yesno',
};
/** What the grader says when an answer read the wrong field for a question of this kind. */
const WRONG_FIELD: Partial<Record<Kind, string>> = {
  delivery: `${rule('delivery').aspect}: a delivery date is when the order shipped, not when it was placed`,
  buyer: `${rule('buyer').aspect}: the buyer is the customer who ordered, not the recipient`,
};

/**
 * The grader: 1 for the answer the house rules give, else 0 with feedback naming each broken aspect (the field read,
 * how its value was written) and the expected answer, never a rule's wording.
 */
export function grade(task: DeskTask, answer: string): { reward: number; feedback: string } {
  const got = answer.trim();
  if (got === task.answer) return { reward: 1, feedback: 'correct' };
  const { record } = task;
  const read = FIELDS.find((f) => got === formatValue(f, record[f], RULES) || got === formatValue(f, record[f], []));
  if (!read) return { reward: 0, feedback: `expected ${task.answer}, got ${got || '(nothing)'}` };
  const broken: string[] = [];
  if (read !== fieldFor(task.kind, RULES)) broken.push(WRONG_FIELD[task.kind] ?? `wrong field: the answer is the ${fieldFor(task.kind, RULES)} field`);
  const format = FORMAT_OF[read];
  if (format && got !== formatValue(read, record[read], RULES)) broken.push(`${rule(format).aspect}: expected ${task.answer}, got ${got}`);
  return { reward: 0, feedback: broken.join('; ') };
}

// ---- The scripted optimizer: reads its request, writes rules it has evidence for. -------------------------------

/** The ``` blocks of a text, in order. */
export function fencedBlocks(text: string): string[] {
  return [...text.matchAll(/```[^\n`]*\n([\s\S]*?)\n```/g)].map((m) => m[1]!);
}

/** The jobs a prompt can do, told by what it is given: the question (it picks the field), the record or a value (it writes the answer). */
export function jobsOf(prompt: string): Set<Rule['job']> {
  const jobs = new Set<Rule['job']>();
  if (/\{\{?\s*question\s*\}?\}/.test(prompt)) jobs.add('plan');
  if (/\{\{?\s*(record|value)\s*\}?\}/.test(prompt)) jobs.add('format');
  return jobs;
}

/** The rules a request gives evidence for, outside the prompt being rewritten: feedback naming an aspect, or a rule written out. */
export function evidencedRules(request: string, prompt: string): Rule[] {
  const rest = request.split(prompt).join('');
  const feedback = rest
    .split('\n')
    .filter((l) => /^\s*Feedback:/.test(l))
    .join('\n');
  return RULES.filter((r) => feedback.includes(`${r.aspect}:`) || r.stated.test(rest));
}

/**
 * The prompt with the rules it does not state yet added at the end of its first paragraph (the instructions), the rest
 * (its data lines) kept; `wording` picks each rule's sentence (default its first).
 */
export function withRules(prompt: string, rules: readonly Rule[], wording: (r: Rule) => string = (r) => r.sentences[0]!): string {
  const missing = rules.filter((r) => !r.stated.test(prompt));
  if (!missing.length) return prompt;
  const cut = prompt.indexOf('\n\n');
  const head = cut < 0 ? prompt : prompt.slice(0, cut);
  const tail = cut < 0 ? '' : prompt.slice(cut);
  return `${head}\n${missing.map(wording).join('\n')}${tail}`;
}

/** Sentences that change nothing a grader checks: what an optimizer writes when it does not read the evidence. */
export const BLIND_SENTENCES = [
  'Be precise.',
  'Read the question carefully.',
  'Keep the answer short.',
  'Check the record twice.',
  'Answer in one line.',
  'Stay calm and focused.',
];
