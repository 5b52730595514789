/**
 * The scale a judge's answer states, when it scores on another one than the 0 to 1 it was asked for: a `"scale"` field
 * ("1-5", "0 to 10", "out of 10", "percent", "%"), an `"out_of"` field (10), or a score written with its scale ("4/5",
 * "8 out of 10", "80%"). A stated scale is read by itself (1 on "1-5" is 0, not a perfect score); a score outside
 * [0, 1] with no stated scale is refused with that reason, never taken at face value, nor guessed: 1 on an unstated
 * 1-5 scale and 1 on the asked 0-1 scale are the same answer. Prose that speaks of a scale the JSON does not state
 * ("on a scale of 1 to 5") makes the answer unusable too: which one the numbers are on is not said where it is read.
 */

/** The lowest and highest score of a scale. */
export type Scale = { lo: number; hi: number; said: string };

export const UNIT_SCALE: Scale = { lo: 0, hi: 1, said: '0-1' };

const NUM = String.raw`\d+(?:\.\d+)?`;
const RANGE = new RegExp(String.raw`^(${NUM})\s*(?:-|–|—|to|\.\.)\s*(${NUM})\s*%?$`, 'i');
const OUT_OF = new RegExp(String.raw`^(?:out\s+of|/)\s*(${NUM})$`, 'i');
const PERCENT = /^(?:%|percent|percentage)$/i;

export const SCALE_KEYS = ['scale', 'score_scale', 'scoring_scale', 'range'];
export const OUT_OF_KEYS = ['out_of', 'outOf', 'max_score', 'maxScore'];

/** A stated scale's text read; null when it is not one this reads. */
export function scaleFromText(text: string): Scale | null {
  const t = text.trim();
  const range = RANGE.exec(t);
  if (range) {
    const [lo, hi] = [Number(range[1]), Number(range[2])];
    return hi > lo ? { lo, hi, said: `${lo}-${hi}` } : null;
  }
  const outOf = OUT_OF.exec(t);
  if (outOf) return Number(outOf[1]) > 0 ? { lo: 0, hi: Number(outOf[1]), said: `out of ${Number(outOf[1])}` } : null;
  return PERCENT.test(t) ? { lo: 0, hi: 100, said: 'percent' } : null;
}

/** The scale an object (the answer, or one entry of it) states in its fields: a scale, none (undefined), or why it cannot be read. */
export function statedScale(o: Record<string, unknown>): Scale | undefined | { unreadable: string } {
  const key = SCALE_KEYS.find((k) => o[k] !== undefined);
  if (key !== undefined) {
    const raw = o[key];
    const scale = typeof raw === 'string' ? scaleFromText(raw) : null;
    return scale ?? { unreadable: `its "${key}" ${JSON.stringify(raw)} is not a scale this reads (give "0-1", "1-5", "out of 10" or "percent")` };
  }
  const outOfKey = OUT_OF_KEYS.find((k) => o[k] !== undefined);
  if (outOfKey === undefined) return undefined;
  const n = o[outOfKey];
  return typeof n === 'number' && n > 0
    ? { lo: 0, hi: n, said: `out of ${n}` }
    : { unreadable: `its "${outOfKey}" ${JSON.stringify(n)} is not a positive number` };
}

const PLAIN_DECIMAL = new RegExp(String.raw`^[+-]?${NUM}$`);
const SCORE_WITH_SCALE = new RegExp(String.raw`^([+-]?${NUM})\s*(%|/\s*${NUM}|out\s+of\s+${NUM})$`, 'i');

/** A score as written: a JSON number, or text that is a plain decimal ("0.8", never "0x1", "1e0" or "high"), possibly with its scale ("4/5", "80%"). */
export function writtenScore(raw: unknown): { value: number; scale: Scale | null } | null {
  if (typeof raw === 'number') return Number.isFinite(raw) ? { value: raw, scale: null } : null;
  if (typeof raw !== 'string') return null;
  const t = raw.trim();
  if (PLAIN_DECIMAL.test(t)) return { value: Number(t), scale: null };
  const withScale = SCORE_WITH_SCALE.exec(t);
  const scale = withScale ? scaleFromText(withScale[2]!.replace(/\s+/g, ' ')) : null;
  return withScale && scale ? { value: Number(withScale[1]), scale } : null;
}

const PROSE_SCALE = new RegExp(
  String.raw`\bscale\s+(?:of|from)\s+(${NUM})\s*(?:-|–|to)\s*(${NUM})\b|\b(${NUM})\s*(?:-|–|to)\s*(${NUM})\s*(?:point\s+)?scale\b`,
  'i',
);

/** A scale the words of an answer speak of ("on a scale of 1 to 5", "a 1-10 scale"), other than 0-1; null when none. */
export function scaleInProse(text: string): string | null {
  const m = PROSE_SCALE.exec(text);
  if (!m) return null;
  const [lo, hi] = m[1] !== undefined ? [m[1], m[2]!] : [m[3]!, m[4]!];
  return Number(lo) === 0 && Number(hi) === 1 ? null : `${Number(lo)}-${Number(hi)}`;
}

/** A score read on its scale, mapped onto [0, 1]; or why not (outside the scale it states, or outside [0, 1] with none stated). */
export function onUnitScale(value: number, scale: Scale | null): { score: number } | { outside: string } {
  if (!scale) {
    if (value >= 0 && value <= 1) return { score: value };
    return { outside: `is outside [0, 1] (another scale? score from 0 to 1, or state the scale, e.g. "scale": "1-5")` };
  }
  if (value < scale.lo || value > scale.hi) return { outside: `is outside the scale it states (${scale.said})` };
  return { score: (value - scale.lo) / (scale.hi - scale.lo) };
}
