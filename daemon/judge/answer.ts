/**
 * Reading a judge's answer: it was asked for JSON (`{"scores": [{"trajectory": 1, "explanation": "...", "score": 0.8},
 * ...]}`, request.ts), but models think aloud first, draft, wrap the JSON in a fenced block, add words around it, name
 * fields their own way or forget one. Read leniently where it is safe: reasoning (`<think>...</think>`) dropped
 * (llm-calls/reasoning.ts); of the JSON in the rest (fenced or bare), the last that scores every trajectory shown; the
 * list under `scores` (or `results`, `trajectories`, `ratings`), or a bare list, or (one trajectory) a bare
 * `{score, explanation}` with no other fields; a trajectory named by `trajectory`, `id`, `index` or `trajectory_id`; an
 * explanation under `explanation`, `reason`, `reasoning` or `rationale`. Strict where it matters: a trajectory is an
 * integer (or text that is exactly one, "2" or "Trajectory 2"); a score a JSON number or a plain decimal in text, in
 * [0, 1] or on a scale the answer states (scale.ts); every trajectory shown scored exactly once. Anything else is
 * unusable with its reason (the call is tried again), never coerced, never a default 0.
 */
import type { ReadAnswer } from '../llm-calls/chat-caller.js';
import { withoutReasoning } from '../llm-calls/reasoning.js';
import { OUT_OF_KEYS, SCALE_KEYS, onUnitScale, scaleInProse, statedScale, writtenScore, type Scale } from './scale.js';

/** The judge's score of the trajectory it was shown at `trajectory` (1-based). */
export interface TrajectoryScore {
  trajectory: number;
  score: number;
  explanation: string | null;
}

/** Why an answer was unusable: a trajectory missing (partial), or anything else (malformed). */
export type UnusableKind = 'partial' | 'malformed';

const LIST_KEYS = ['scores', 'results', 'trajectories', 'ratings', 'evaluations'];
const ID_KEYS = ['trajectory', 'id', 'index', 'trajectory_id', 'trajectoryId'];
const WHY_KEYS = ['explanation', 'reason', 'reasoning', 'rationale', 'feedback'];

/** A JSON value found in an answer, and where its text starts and ends (exclusive). */
export interface JsonCandidate {
  value: unknown;
  start: number;
  end: number;
}

/** The JSON objects and arrays in the text (fenced or bare), outermost first, in the order they are written. */
export function jsonCandidates(text: string): JsonCandidate[] {
  const out: JsonCandidate[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c !== '{' && c !== '[') continue;
    const end = balancedEnd(text, i);
    if (end < i) continue;
    try {
      out.push({ value: JSON.parse(text.slice(i, end + 1)), start: i, end: end + 1 });
      i = end;
    } catch {
      // not JSON (prose in brackets): look inside it
    }
  }
  return out;
}

/** Where the bracket opened at `start` closes (strings skipped), or -1. */
function balancedEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i;
    }
  }
  return -1;
}

const pick = (o: Record<string, unknown>, keys: string[]): unknown => keys.map((k) => o[k]).find((v) => v !== undefined);
const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** The fields a bare one-trajectory answer may have: anything else (`"status": "ok"`) makes it some other JSON. */
const BARE_KEYS = new Set(['score', ...ID_KEYS, ...WHY_KEYS, ...SCALE_KEYS, ...OUT_OF_KEYS]);

/** The entries of a parsed answer (and the scale the answer states for all of them), or null when it has no list of scores. */
function entriesOf(v: unknown, shown: number): Record<string, unknown>[] | null {
  if (Array.isArray(v)) return v.every(isObject) ? v : null;
  if (!isObject(v)) return null;
  const list = pick(v, LIST_KEYS);
  if (list !== undefined) return entriesOf(list, shown);
  // One trajectory shown: a bare {score, explanation} is its answer.
  return shown === 1 && 'score' in v && Object.keys(v).every((k) => BARE_KEYS.has(k)) ? [{ trajectory: 1, ...v }] : null;
}

const ID_TEXT = /^\s*(?:<?\s*trajectory\s*#?\s*)?(\d+)\s*>?\s*$/i;

/** A trajectory's number: a JSON integer, or text that is exactly one ("2", "Trajectory 2"); never "1.2" or "2b". */
function idOf(e: Record<string, unknown>, shown: number): number | null {
  const raw = pick(e, ID_KEYS);
  if (raw === undefined) return shown === 1 ? 1 : null;
  if (typeof raw === 'number') return Number.isInteger(raw) ? raw : null;
  const m = typeof raw === 'string' ? ID_TEXT.exec(raw) : null;
  return m ? Number(m[1]) : null;
}

type Read = ReadAnswer<TrajectoryScore[]> & { kind?: UnusableKind };
const malformed = (unusable: string): Read => ({ unusable, kind: 'malformed' });

/** The scores of one parsed answer (`scale`: the one the answer states for all its entries), or why they are unusable. */
function scoresOf(entries: Record<string, unknown>[], shown: number, scale: Scale | null): Read {
  const byId = new Map<number, TrajectoryScore>();
  for (const [i, e] of entries.entries()) {
    const id = idOf(e, shown);
    if (id === null) return malformed(`entry ${i + 1} names no trajectory by its number (give "trajectory": 1..${shown})`);
    if (id < 1 || id > shown) return malformed(`trajectory ${id} was not shown (there are ${shown})`);
    if (byId.has(id)) return malformed(`trajectory ${id} is scored twice`);
    const own = statedScale(e);
    if (own && 'unreadable' in own) return malformed(`trajectory ${id}: ${own.unreadable}`);
    const written = writtenScore(e.score);
    if (written === null)
      return malformed(`trajectory ${id} has no numeric score${e.score === undefined ? '' : ` (${JSON.stringify(e.score)} is not a plain decimal number)`}`);
    const mapped = onUnitScale(written.value, written.scale ?? own ?? scale);
    if ('outside' in mapped) return malformed(`trajectory ${id}'s score ${written.value} ${mapped.outside}`);
    const why = pick(e, WHY_KEYS);
    byId.set(id, { trajectory: id, score: mapped.score, explanation: typeof why === 'string' && why.trim() ? why.trim() : null });
  }
  const missing = Array.from({ length: shown }, (_, i) => i + 1).filter((k) => !byId.has(k));
  if (missing.length)
    return {
      unusable: `trajector${missing.length === 1 ? 'y' : 'ies'} ${missing.join(', ')} missing from the answer (it scored ${[...byId.keys()].sort((a, b) => a - b).join(', ') || 'none'})`,
      kind: 'partial',
    };
  return { value: [...byId.values()].sort((a, b) => a.trajectory - b.trajectory) };
}

/** Whether the answer says its scale anywhere a score is read from (the object, an entry, a score's own text). */
function statesScale(candidate: unknown, entries: Record<string, unknown>[]): boolean {
  const objects = isObject(candidate) ? [candidate, ...entries] : entries;
  return objects.some((o) => statedScale(o) !== undefined) || entries.some((e) => writtenScore(e.score)?.scale);
}

/**
 * The scores in a judge's answer for the `shown` trajectories it was shown, or why the answer is unusable (with its
 * kind: `partial` when a trajectory is missing, else `malformed`). Reasoning (`<think>...</think>`) is dropped first;
 * then the JSON values are tried from the last: the last one that scores every trajectory shown is the answer (a
 * draft before it, a quoted tool result, a fragment are not). When none does, the last one with a list of scores says
 * why.
 */
export function readScores(answer: string, shown: number): Read {
  const text = withoutReasoning(answer);
  let problem: Read | null = null;
  for (const c of jsonCandidates(text).reverse()) {
    const entries = entriesOf(c.value, shown);
    if (!entries) continue;
    const scale = isObject(c.value) ? statedScale(c.value) : undefined;
    if (scale && 'unreadable' in scale) {
      problem ??= malformed(`the answer's scale: ${scale.unreadable}`);
      continue;
    }
    const got = scoresOf(entries, shown, scale ?? null);
    const prose = 'value' in got && !statesScale(c.value, entries) ? scaleInProse(text.slice(0, c.start) + text.slice(c.end)) : null;
    if (prose) problem ??= malformed(`the answer speaks of a ${prose} scale but its JSON states none: score from 0 to 1, or say "scale": "${prose}"`);
    else if ('value' in got) return got;
    else problem ??= got;
  }
  return problem ?? malformed('no JSON with a score per trajectory in the answer');
}
