/**
 * The graders without code (protocol/eval.ts GRADERS): each compares the answer a rollout recorded (the value the
 * agent returned, else the object it emitted as final: protocol/span-reading.ts episodeAnswer) with the row's
 * `expected`, and gives a verdict: a score in [0, 1] and its reason, in words a user (and prompt optimization, which
 * reads it as the reward's feedback) can act on. What can be checked before any rollout (the regex compiles, the JSON
 * Schema compiles, a number is a number) is checked when the dataset is read (prepareGrader), so a bad row is refused
 * with its line, never discovered half-way. The judge and the agent's own reward are graded by daemon/eval/grading.ts.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { canonicalJson } from '../../protocol/span-reading.js';
import { DEFAULT_TOLERANCE, type GraderName } from '../../protocol/eval.js';

export interface Verdict {
  score: number;
  reason: string;
}

/** A row's grader, ready: `grade(answer)` for the graders that compare; the judge and reward are graded elsewhere. */
export interface PreparedGrader {
  name: GraderName;
  grade?: (answer: unknown) => Verdict;
}

/** How much of an answer or an expectation a reason quotes. */
const QUOTE_CHARS = 200;
const quote = (v: unknown): string => {
  const text = typeof v === 'string' ? JSON.stringify(v) : canonicalJson(v);
  return text.length > QUOTE_CHARS ? `${text.slice(0, QUOTE_CHARS)}...` : text;
};
/** An answer as text: a string as it is, anything else as JSON. */
export const answerText = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : canonicalJson(v));

const ajv = new Ajv({ allErrors: true, strict: false });

/**
 * The grader `name` for a row's `expected`, checked: throws a message naming the field at fault (the caller adds the
 * row's line). `tolerance` is the number grader's.
 */
export function prepareGrader(name: GraderName, expected: unknown, tolerance: number | undefined): PreparedGrader {
  const needs = (what: string) => new Error(`field 'expected': the ${name} grader needs ${what}, got ${expected === undefined ? 'none' : quote(expected)}`);
  switch (name) {
    case 'reward':
    case 'judge':
      return { name };
    case 'exact':
      if (expected === undefined) throw needs('the expected answer');
      return { name, grade: (a) => exact(a, expected) };
    case 'contains': {
      const parts = Array.isArray(expected) ? expected : [expected];
      if (!parts.length || !parts.every((p) => typeof p === 'string' && p !== '')) throw needs('a non-empty string, or a list of them');
      return { name, grade: (a) => contains(a, parts as string[]) };
    }
    case 'regex': {
      if (typeof expected !== 'string' || !expected) throw needs("a regular expression's source, as a string");
      let re: RegExp;
      try {
        re = new RegExp(expected);
      } catch (e) {
        throw new Error(`field 'expected': not a regular expression (${(e as Error).message})`, { cause: e });
      }
      return { name, grade: (a) => regex(a, re) };
    }
    case 'number': {
      const want = toNumber(expected);
      if (want === null) throw needs('a number');
      const tol = tolerance ?? DEFAULT_TOLERANCE;
      return { name, grade: (a) => number(a, want, tol) };
    }
    case 'json-schema': {
      if (!expected || typeof expected !== 'object' || Array.isArray(expected)) throw needs('a JSON Schema (an object)');
      let validate: ValidateFunction;
      try {
        validate = ajv.compile(expected as object);
      } catch (e) {
        throw new Error(`field 'expected': not a valid JSON Schema (${(e as Error).message})`, { cause: e });
      }
      return { name, grade: (a) => jsonSchema(a, validate) };
    }
  }
}

function exact(answer: unknown, expected: unknown): Verdict {
  const same =
    typeof answer === 'string' || typeof expected === 'string'
      ? answerText(answer).trim() === answerText(expected).trim()
      : canonicalJson(answer) === canonicalJson(expected);
  return same
    ? { score: 1, reason: `the answer ${quote(answer)} is the expected one` }
    : { score: 0, reason: `answered ${quote(answer)}, expected ${quote(expected)}` };
}

function contains(answer: unknown, parts: string[]): Verdict {
  const text = answerText(answer);
  const missing = parts.filter((p) => !text.includes(p));
  if (!missing.length) return { score: 1, reason: `the answer contains ${parts.map(quote).join(', ')}` };
  return { score: 0, reason: `the answer ${quote(answer)} lacks ${missing.map(quote).join(', ')}` };
}

function regex(answer: unknown, re: RegExp): Verdict {
  const m = re.exec(answerText(answer));
  return m
    ? { score: 1, reason: `the answer matches /${re.source}/ at ${quote(m[0])}` }
    : { score: 0, reason: `the answer ${quote(answer)} does not match /${re.source}/` };
}

/**
 * A number as written in an answer: digits, with commas between groups of three as thousands separators ("1,234.5"),
 * an optional sign, decimals and exponent. A comma before other digits ("1,5") is no decimal point: it separates two
 * numbers. The grader's reasons name this rule.
 */
const WRITTEN_NUMBER = /-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+)?/gi;
const SEPARATORS_SAID = 'digits, with commas only between thousands: 1,234.5';
const writtenValue = (s: string): number => Number(s.replace(/,/g, ''));

/** A number, or a string holding one (thousands separators allowed); else null. */
function toNumber(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'string' && v.trim() !== '') {
    const t = v.trim();
    const n = new RegExp(`^(?:${WRITTEN_NUMBER.source})$`, 'i').test(t) ? writtenValue(t) : Number(t);
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

/** The answer's number: itself, a string that is one, else the last number written in its text. */
function numberIn(answer: unknown): number | null {
  const n = toNumber(answer);
  if (n !== null) return n;
  const found = answerText(answer).match(WRITTEN_NUMBER);
  return found ? writtenValue(found.at(-1)!) : null;
}

function number(answer: unknown, want: number, tolerance: number): Verdict {
  const got = numberIn(answer);
  if (got === null) return { score: 0, reason: `the answer ${quote(answer)} holds no number (${SEPARATORS_SAID}); expected ${want}` };
  const off = Math.abs(got - want);
  return off <= tolerance
    ? { score: 1, reason: `${got} is within ${tolerance} of ${want}` }
    : { score: 0, reason: `answered ${got}, expected ${want} (off by ${Number(off.toPrecision(6))}, tolerance ${tolerance})` };
}

function jsonSchema(answer: unknown, validate: ValidateFunction): Verdict {
  let value = answer;
  if (typeof answer === 'string') {
    try {
      value = JSON.parse(answer);
    } catch {
      return { score: 0, reason: `the answer ${quote(answer)} is not JSON` };
    }
  }
  if (validate(value)) return { score: 1, reason: 'the answer is valid against the schema' };
  const why = (validate.errors ?? []).map((e) => `${e.instancePath || '(the answer)'} ${e.message ?? 'is invalid'}`).join('; ');
  return { score: 0, reason: `the answer ${quote(answer)} is not valid against the schema: ${why}` };
}
