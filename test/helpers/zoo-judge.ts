/**
 * How the model zoo's judges (model-zoo.ts) answer: the scoring policy's scores (scripted-judge.ts) bent by the
 * biases the model name asks for (position, length, self-preference, temperature noise), written on another scale
 * when asked (stated in the JSON's "scale" and in a sentence before it), and wrapped the untidy ways real judges wrap them (reasoning in <think> before the answer, a draft then
 * a correction). The JSON itself is written by scripted-judge.ts's answerText, so both speak the one answer format.
 */
import { answerText, type Fault, type JudgeRequest, type ScoreLine, type ScriptedJudgeOptions } from './scripted-judge.js';

/** What the zoo's own models write, so a self-preferring judge can know its family's outputs. */
export const ZOO_SIGNATURE = 'As a zoo model';

type Behaviours = ReadonlyMap<string, number | null>;

/** The other scales a judge may answer on, and how it says so. */
const SCALES = [
  { name: 'scale5', of: (s: number) => Math.round(1 + 4 * s), stated: '1-5', said: 'I scored each trajectory on a 1-5 scale.' },
  { name: 'scale10', of: (s: number) => Math.round(1 + 9 * s), stated: '1-10', said: 'I scored each trajectory on a 1-10 scale.' },
  { name: 'percent', of: (s: number) => Math.round(100 * s), stated: 'percent', said: 'Scores are percentages.' },
];

/** The policy's scores bent by the biases asked for: the favoured trajectory scores 1; then noise flips some. */
function biased(read: JudgeRequest, lines: ScoreLine[], b: Behaviours, noise: (() => number) | null): ScoreLine[] {
  const lengthOf = new Map(read.trajectories.map((t) => [t.index, (t.finalAnswer ?? '').length]));
  const longest = Math.max(0, ...lengthOf.values());
  const signed = new Set(read.trajectories.filter((t) => t.text.includes(ZOO_SIGNATURE)).map((t) => t.index));
  const favoured = (l: ScoreLine): string | null => {
    if (b.has('position') && l.trajectory === 1) return 'it reads best, coming first';
    if (b.has('length') && lengthOf.get(l.trajectory) === longest) return 'the most thorough answer';
    if (b.has('self') && signed.has(l.trajectory)) return 'written the way I would write it';
    return null;
  };
  // Length and self-preference also mark the others down (at most 0.5): the favoured one wins outright.
  const cap = b.has('length') || (b.has('self') && signed.size > 0) ? 0.5 : 1;
  const flipOdds = b.get('noise') ?? 0;
  return lines.map((l) => {
    const why = favoured(l);
    const bent = why ? { ...l, score: 1, explanation: why } : { ...l, score: Math.min(l.score, cap) };
    return noise && noise() < flipOdds ? { ...bent, score: 1 - bent.score, explanation: `${bent.explanation} (misread)` } : bent;
  });
}

const flipped = (lines: ScoreLine[]) => lines.map((l) => ({ ...l, score: 1 - l.score, explanation: `first reading: ${l.explanation}` }));

/** A zoo judge's answer to `read`, its policy having scored `lines`. */
export function judgeAnswer(
  read: JudgeRequest,
  lines: ScoreLine[],
  o: { behaviours: Behaviours; noise: (() => number) | null; fault: Fault | null; style: ScriptedJudgeOptions['style'] },
): string {
  const scores = biased(read, lines, o.behaviours, o.noise);
  const scale = SCALES.find((s) => o.behaviours.has(s.name));
  const onScale = (ls: ScoreLine[]) => (scale ? ls.map((l) => ({ ...l, score: scale.of(l.score) })) : ls);
  let text = answerText(onScale(scores), o.fault, o.style, scale?.stated);
  if (scale) text = `${scale.said}\n\n${text}`;
  if (o.behaviours.has('draft'))
    text = `A first draft:\n\n${answerText(onScale(flipped(scores)), null, o.style, scale?.stated)}\nWait, I misread the rubric. The corrected scores:\n\n${text}`;
  if (o.behaviours.has('think')) {
    const guess = JSON.stringify({ scores: flipped(scores).map((l) => ({ trajectory: l.trajectory, score: l.score })) });
    text = `<think>\nA first guess before checking the rubric: ${guess}. Let me check each trajectory against it again.\n</think>\n${text}`;
  }
  return text;
}
