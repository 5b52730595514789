/**
 * Reading a judge's answer: it was asked for JSON (`{"scores": [{"trajectory": 1, "explanation": "...", "score": 0.8},
 * ...]}`, request.ts), but models wrap it in a fenced block, add words around it, name fields their own way or forget
 * one. Read leniently: the first fenced block that holds JSON, else the first JSON object or array in the text; the
 * list under `scores` (or `results`, `trajectories`, `ratings`), or a bare list, or (one trajectory) a bare
 * `{score, explanation}`; a trajectory named by `trajectory`, `id`, `index` or `trajectory_id` (a number, or text such
 * as "Trajectory 2"); an explanation under `explanation`, `reason`, `reasoning` or `rationale`. Strict where it
 * matters: every score a number in [0, 1], every trajectory shown scored exactly once. Anything else is unusable with
 * its reason (the call is tried again), never a default 0.
 */
import type { ReadAnswer } from '../llm-calls/chat-caller.js';

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

/** The JSON values in the text, in the order they are worth trying: fenced blocks first, then bare objects and arrays. */
export function jsonCandidates(text: string): unknown[] {
  const out: unknown[] = [];
  const tryParse = (s: string) => {
    try {
      out.push(JSON.parse(s));
      return true;
    } catch {
      return false;
    }
  };
  for (const m of text.matchAll(/```[a-zA-Z]*[ \t]*\n?([\s\S]*?)```/g)) tryParse(m[1]!.trim());
  tryParse(text.trim());
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c !== '{' && c !== '[') continue;
    const end = balancedEnd(text, i);
    if (end > i && tryParse(text.slice(i, end + 1))) i = end;
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

/** The entries of a parsed answer, or null when it has no list of scores. */
function entriesOf(v: unknown, shown: number): Record<string, unknown>[] | null {
  if (Array.isArray(v)) return v.every((e) => e && typeof e === 'object' && !Array.isArray(e)) ? (v as Record<string, unknown>[]) : null;
  if (!v || typeof v !== 'object') return null;
  const o = v as Record<string, unknown>;
  const list = pick(o, LIST_KEYS);
  if (list !== undefined) return entriesOf(list, shown);
  // One trajectory shown: a bare {score, explanation} is its answer.
  return shown === 1 && 'score' in o ? [{ trajectory: 1, ...o }] : null;
}

function idOf(e: Record<string, unknown>, i: number, shown: number): number | null {
  const raw = pick(e, ID_KEYS);
  if (raw === undefined) return shown === 1 ? 1 : null;
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' ? Number(/(\d+)\s*$/.exec(raw)?.[1] ?? NaN) : NaN;
  return Number.isInteger(n) ? n : null;
}

/** A score as a number: a number, or text that is one ("0.8"). */
function scoreOf(raw: unknown): number | null {
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : NaN;
  return Number.isFinite(n) ? n : null;
}

/** The scores of one parsed answer, or why they are unusable. */
function scoresOf(entries: Record<string, unknown>[], shown: number): ReadAnswer<TrajectoryScore[]> & { kind?: UnusableKind } {
  const byId = new Map<number, TrajectoryScore>();
  for (const [i, e] of entries.entries()) {
    const id = idOf(e, i, shown);
    if (id === null) return { unusable: `entry ${i + 1} names no trajectory (give "trajectory": 1..${shown})`, kind: 'malformed' };
    if (id < 1 || id > shown) return { unusable: `trajectory ${id} was not shown (there are ${shown})`, kind: 'malformed' };
    if (byId.has(id)) return { unusable: `trajectory ${id} is scored twice`, kind: 'malformed' };
    const score = scoreOf(e.score);
    if (score === null) return { unusable: `trajectory ${id} has no numeric score`, kind: 'malformed' };
    if (score < 0 || score > 1) return { unusable: `trajectory ${id}'s score ${score} is outside [0, 1]`, kind: 'malformed' };
    const why = pick(e, WHY_KEYS);
    byId.set(id, { trajectory: id, score, explanation: typeof why === 'string' && why.trim() ? why.trim() : null });
  }
  const missing = Array.from({ length: shown }, (_, i) => i + 1).filter((k) => !byId.has(k));
  if (missing.length)
    return {
      unusable: `trajector${missing.length === 1 ? 'y' : 'ies'} ${missing.join(', ')} missing from the answer (it scored ${[...byId.keys()].sort((a, b) => a - b).join(', ') || 'none'})`,
      kind: 'partial',
    };
  return { value: [...byId.values()].sort((a, b) => a.trajectory - b.trajectory) };
}

/**
 * The scores in a judge's answer for the `shown` trajectories it was shown, or why the answer is unusable (with its
 * kind: `partial` when a trajectory is missing, else `malformed`). The first JSON in the text that holds a list of
 * scores decides.
 */
export function readScores(answer: string, shown: number): ReadAnswer<TrajectoryScore[]> & { kind?: UnusableKind } {
  for (const candidate of jsonCandidates(answer)) {
    const entries = entriesOf(candidate, shown);
    if (entries) return scoresOf(entries, shown);
  }
  return { unusable: 'no JSON with a score per trajectory in the answer', kind: 'malformed' };
}
