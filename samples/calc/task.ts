/**
 * The calc task (the paper's Calc-X in miniature): short arithmetic word problems whose numbers are
 * too big for a tiny model to compute itself, so it must call the calculator tool.
 * The text protocol is built for a character-level model: short prompts and a one-line tool call.
 *
 *   call 1  prompt  "Q:Ann has 23 pens, gets 15 more. How many?\n"          completion "calc 23+15"
 *   tool    calc("23+15") -> "38"
 *   call 2  prompt  "Q:Ann has 23 pens, gets 15 more. How many?\ncalc 23+15=38\nA:"   completion "38"
 *
 * A first completion that is not a tool call is taken as a direct answer (no tool line in call 2).
 * Reward: 1 when the final answer is exactly the expected integer, else 0.
 * This file is pure (no I/O): the dataset generator, the tool, the prompts and the reward.
 */

import { rng } from '../shared/rng.js';

export { rng };

export interface CalcTask {
  id: string;
  question: string;
  answer: number;
}

const NAMES = ['Ann', 'Bob', 'Eva', 'Tom', 'Mia', 'Sam'];
const ITEMS = ['pens', 'cards', 'eggs', 'coins', 'books'];

type Op = '+' | '-' | '*' | '/';
/** One phrasing per operation: the keyword tells the operation, the numbers are copied in order. */
const TEMPLATES: Record<Op, (n: string, it: string, a: number, b: number) => string> = {
  '+': (n, it, a, b) => `${n} has ${a} ${it}, gets ${b} more. How many?`,
  '-': (n, it, a, b) => `${n} has ${a} ${it}, loses ${b}. How many?`,
  '*': (n, it, a, b) => `${n} has ${a} boxes of ${b} ${it}. How many?`,
  '/': (n, it, a, b) => `${n} splits ${a} ${it} into ${b} piles. How many each?`,
};

function int(r: () => number, lo: number, hi: number): number {
  return lo + Math.floor(r() * (hi - lo + 1));
}

export function makeTask(r: () => number, id: string): CalcTask {
  const op = (['+', '-', '*', '/'] as const)[int(r, 0, 3)];
  const name = NAMES[int(r, 0, NAMES.length - 1)],
    item = ITEMS[int(r, 0, ITEMS.length - 1)];
  let a: number, b: number;
  switch (op) {
    case '+':
      a = int(r, 10, 99);
      b = int(r, 10, 99);
      break;
    case '-':
      a = int(r, 30, 99);
      b = int(r, 10, a - 5);
      break;
    case '*':
      a = int(r, 3, 19);
      b = int(r, 6, 49);
      break;
    case '/':
      b = int(r, 2, 9);
      a = b * int(r, 6, 19);
      break;
  }
  return { id, question: TEMPLATES[op](name, item, a, b), answer: calculate(`${a}${op}${b}`) as number };
}

export interface CalcSplits {
  train: CalcTask[];
  val: CalcTask[];
  test: CalcTask[];
  demo: CalcTask[];
}

/**
 * Train / val / test splits plus the problems the SFT demonstrations are made from (`demo`), with no
 * question shared between any two of them (so the warm-up cannot have memorised a training answer).
 */
export function makeSplits(seed: number, sizesIn: Partial<Record<keyof CalcSplits, number>> = {}): CalcSplits {
  const sizes = { train: 2000, val: 100, test: 200, demo: 2000, ...sizesIn };
  const r = rng(seed);
  const seen = new Set<string>();
  const take = (prefix: string, n: number): CalcTask[] => {
    const out: CalcTask[] = [];
    while (out.length < n) {
      const t = makeTask(r, `${prefix}-${out.length}`);
      if (seen.has(t.question)) continue;
      seen.add(t.question);
      out.push(t);
    }
    return out;
  };
  const train = take('train', sizes.train),
    val = take('val', sizes.val),
    test = take('test', sizes.test);
  return { train, val, test, demo: take('demo', sizes.demo) };
}

/** The calculator tool: integer `a op b`; null for anything else (bad syntax, non-integer result). */
export function calculate(expression: string): number | null {
  const m = /^\s*(-?\d{1,6})\s*([-+*/])\s*(-?\d{1,6})\s*$/.exec(expression);
  if (!m) return null;
  const a = Number(m[1]),
    b = Number(m[3]);
  const v = m[2] === '+' ? a + b : m[2] === '-' ? a - b : m[2] === '*' ? a * b : b === 0 ? NaN : a / b;
  return Number.isInteger(v) ? v : null;
}

export const TOOL_PREFIX = 'calc ';

/**
 * The question's prompt as the agent reads it (`llm.prompt('question', QUESTION_PROMPT, { question })`, so
 * `agl optimize` can rewrite it): filled in, it is exactly firstPrompt, the text the shipped warm-up was trained on.
 */
export const QUESTION_PROMPT = 'Q:{question}\n';

export function firstPrompt(task: Pick<CalcTask, 'question'>): string {
  return `Q:${task.question}\n`;
}

/** The tool call in a first completion, or null when the model answered directly. */
export function parseToolCall(completion: string): string | null {
  const line = completion.trim().split('\n')[0];
  return line.startsWith(TOOL_PREFIX.trim()) ? line.slice(TOOL_PREFIX.trim().length).trim() : null;
}

export function secondPrompt(task: Pick<CalcTask, 'question'>, expression: string | null, result: number | null): string {
  return answerPrompt(firstPrompt(task), expression, result);
}

/** Call 2's prompt after call 1's (`first`): the tool line, then `A:`. */
export function answerPrompt(first: string, expression: string | null, result: number | null): string {
  const toolLine = expression === null ? '' : `calc ${expression}=${result === null ? 'error' : result}\n`;
  return `${first}${toolLine}A:`;
}

/** Exact-answer reward: the first integer of the answer must equal the expected one. */
export function reward(task: Pick<CalcTask, 'answer'>, answer: string): number {
  const m = /^\s*(-?\d+)\s*$/.exec(answer.split('\n')[0] ?? '');
  return m && Number(m[1]) === task.answer ? 1 : 0;
}

/** The two calls an expert agent makes on a task: the right calculator call, then the result copied. */
export function demonstrations(task: CalcTask): { prompt: string; completion: string }[] {
  const m = /(\d+)\D+?(\d+)/.exec(task.question)!;
  const op = task.question.includes('gets') ? '+' : task.question.includes('loses') ? '-' : task.question.includes('boxes') ? '*' : '/';
  const expr = `${m[1]}${op}${m[2]}`;
  return [
    { prompt: firstPrompt(task), completion: `${TOOL_PREFIX}${expr}` },
    { prompt: secondPrompt(task, expr, calculate(expr)), completion: String(task.answer) },
  ];
}

/** Share of the warm-up's demonstrations in which the demonstrator uses the calculator. */
export const WARMUP_TOOL_SHARE = 0.3;

/**
 * The SFT warm-up's demonstrations. The demonstrator knows the format and how to use the calculator,
 * but reaches for it only on a share of the problems (`toolShare`) and answers the others straight
 * away with the right number, as a stronger model doing mental arithmetic would. A 0.8M-parameter
 * model cannot do that arithmetic, so imitating the direct answers fails on new problems: what RL
 * has to discover from the reward is that calling the calculator pays (the paper's Calc-X lesson).
 */
export function warmupDemonstrations(tasks: CalcTask[], seed: number, toolShare = WARMUP_TOOL_SHARE): { prompt: string; completion: string }[] {
  const r = rng(seed ^ 0x5eed);
  return tasks.flatMap((t) => (r() < toolShare ? demonstrations(t) : [{ prompt: firstPrompt(t), completion: String(t.answer) }]));
}
