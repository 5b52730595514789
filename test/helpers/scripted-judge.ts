/**
 * A scripted LLM judge for tests and benchmarks (an outside service, so scripting it is allowed): the model zoo's
 * server (model-zoo.ts: real HTTP, OpenAI's chat completions protocol, JSON and SSE with usage tokens, reached through
 * the real `openai` client) playing a plain judge under any model name. It reads what it is sent as a judge model would: the rubric in the system message, the task
 * and each `<trajectory k>` in the user message (daemon/judge/request.ts), each trajectory's LLM calls and final answer
 * (protocol/episode-text.ts); a scoring policy turns that into a score and an explanation per trajectory. `faults`
 * makes chosen requests go wrong the ways real judges do: malformed JSON, a trajectory missing from the answer, 500,
 * 429 with retry-after, an answer held past the client's timeout, a refused key.
 */
import { createHash } from 'node:crypto';
import { rng } from '../../samples/shared/rng.js';
import { startModelZoo } from './model-zoo.js';

/** One trajectory as the judge read it: its place in this request (1-based), its text, and what the text says. */
export interface ReadTrajectory {
  index: number;
  text: string;
  /** The text after "Final answer: " (null when the agent recorded none). */
  finalAnswer: string | null;
  /** The assistant's replies, in order (the `[assistant] ...` lines). */
  replies: string[];
}

export interface JudgeRequest {
  rubric: string;
  task: string;
  trajectories: ReadTrajectory[];
  model: string;
}

export interface ScoreLine {
  trajectory: number;
  score: number;
  explanation: string;
}

export type Fault = 'malformed' | 'partial' | 'server-error' | 'rate-limit' | 'timeout' | 'unauthorized' | 'out-of-range';

export interface ScriptedJudgeOptions {
  /** How the judge scores what it read. */
  score: (request: JudgeRequest) => ScoreLine[];
  /** The fault of request `n` (0, 1, ... in arrival order, retries included), if any. */
  faults?: (n: number, request: JudgeRequest) => Fault | null;
  /** How the JSON is wrapped: in a ```json fence after a sentence (default), bare, or inside prose without a fence. */
  style?: 'fenced' | 'bare' | 'prose';
  /** How long a `timeout` fault holds its answer (default 5 s). */
  timeoutHoldMs?: number;
}

export interface ScriptedJudge {
  /** The base URL (ends in /v1). */
  url: string;
  /** Every request it read, in arrival order. */
  requests: JudgeRequest[];
  close(): Promise<void>;
}

type Message = { role: string; content: unknown };
const textOf = (c: unknown): string =>
  typeof c === 'string' ? c : Array.isArray(c) ? c.map((p: { text?: unknown }) => (typeof p?.text === 'string' ? p.text : '')).join('') : '';

/** What a judge request says: the rubric, the task, the trajectories. */
export function readJudgeRequest(messages: Message[], model: string): JudgeRequest {
  const system = textOf(messages.find((m) => m.role === 'system')?.content);
  const user = textOf(messages.filter((m) => m.role === 'user').at(-1)?.content);
  const rubric = /Rubric:\n([\s\S]*?)\n\nAnswer with JSON/.exec(system)?.[1] ?? '';
  const task = /^Task:\n([\s\S]*?)\n\n<trajectory 1>/.exec(user)?.[1] ?? '';
  const trajectories: ReadTrajectory[] = [];
  for (const m of user.matchAll(/<trajectory (\d+)>\n([\s\S]*?)\n<\/trajectory \1>/g)) {
    const text = m[2]!;
    const final = /^Final answer: (.*)$/m.exec(text)?.[1] ?? null;
    trajectories.push({ index: Number(m[1]), text, finalAnswer: final === '(the agent recorded none)' ? null : final, replies: repliesOf(text) });
  }
  return { rubric, task, trajectories, model };
}

/** The assistant's messages of a trajectory's text: from `[assistant] ` to the next message or step line. */
function repliesOf(text: string): string[] {
  const out: string[] = [];
  let current: string[] | null = null;
  for (const line of text.split('\n')) {
    const start = /^ {2}\[(\w+)[^\]]*\] ?(.*)$/.exec(line);
    if (start || !line.startsWith('  ') || line.startsWith('    → tool call')) {
      if (current) out.push(current.join('\n'));
      current = start?.[1] === 'assistant' ? [start[2]!] : null;
    } else current?.push(line.slice(4));
  }
  if (current) out.push(current.join('\n'));
  return out;
}

/** A number in [0, 1) fixed by a seed and a text. */
export function draw(seed: number, text: string): number {
  return createHash('sha256').update(`${seed}\u0000${text}`).digest().readUInt32BE(0) / 2 ** 32;
}

/**
 * A judge that scores at random: every score of every call is the next draw of a seeded sequence, whatever it reads,
 * so the same trajectory shown twice (or judged again) gets another score. It teaches nothing, and it disagrees with
 * itself as much as it disagrees with anything (judge.retest reads its reliability as ~0).
 */
export function randomJudge(seed: number): (r: JudgeRequest) => ScoreLine[] {
  const next = rng(seed);
  return (r) => r.trajectories.map((t) => ({ trajectory: t.index, score: Math.round(next() * 100) / 100, explanation: 'a coin decided' }));
}

/**
 * A judge that scores by an arbitrary fixed function of the text (a hash of it, seeded): not random, since the same
 * text always gets the same score, but unrelated to how good the trajectory is. A retest cannot see it (it agrees with
 * itself perfectly); only agreement with a trusted reward (`agl judge check`) can.
 */
export function arbitraryJudge(seed: number): (r: JudgeRequest) => ScoreLine[] {
  return (r) => r.trajectories.map((t) => ({ trajectory: t.index, score: Math.round(draw(seed, t.text) * 100) / 100, explanation: 'a hash decided' }));
}

/**
 * A judge that goes by the answers its rubric lists, as `- <words of the task> => <answer>` lines: a trajectory scores 1
 * when its final answer's first line is the answer listed for the task it was sent, else 0 (and says why).
 */
export function answerKeyJudge(): (r: JudgeRequest) => ScoreLine[] {
  return (r) => {
    const key = [...r.rubric.matchAll(/^- (.+?) => (.+)$/gm)].find((m) => r.task.includes(m[1]!.trim()));
    const expected = key?.[2]!.trim() ?? null;
    return r.trajectories.map((t) => {
      const given = answerOf(t.finalAnswer);
      const right = expected !== null && given === expected;
      const explanation =
        expected === null
          ? 'the rubric lists no answer for this task'
          : right
            ? `the answer ${given} is the expected ${expected}`
            : `the answer ${given ?? '(none)'} is not ${expected}`;
      return { trajectory: t.index, score: right ? 1 : 0, explanation };
    });
  };
}

/**
 * A judge that is usually right: the answer key's 0/1 score (answerKeyJudge), flipped with probability 1 - `accuracy`,
 * a fresh seeded draw for every score of every call, as a model sampled at temperature > 0 is (the same trajectory
 * shown twice, or judged again, may get the other score). At accuracy 0.8 its expected score is 0.2 + 0.6 x truth: it
 * still carries 60% of the signal.
 */
export function noisyJudge(accuracy: number, seed: number): (r: JudgeRequest) => ScoreLine[] {
  const next = rng(seed);
  const key = answerKeyJudge();
  return (r) => key(r).map((l) => (next() < accuracy ? l : { ...l, score: 1 - l.score, explanation: `${l.explanation} (misread)` }));
}

/**
 * A judge that scores only the place a trajectory is shown at (the first shown 1, the last 0, the others in between),
 * whatever it says: the extreme of position bias. Shown alone (single mode), every trajectory scores 1.
 */
export function positionJudge(): (r: JudgeRequest) => ScoreLine[] {
  return (r) =>
    r.trajectories.map((t) => ({
      trajectory: t.index,
      score: r.trajectories.length < 2 ? 1 : Math.round((1 - (t.index - 1) / (r.trajectories.length - 1)) * 100) / 100,
      explanation: t.index === 1 ? 'the first answer reads best' : 'an earlier answer was better',
    }));
}

/**
 * A judge swayed by position: the `base` judge's score plus `bonus` for the first trajectory shown and minus it for the
 * others (kept in [0, 1]). Two trajectories it scores alike trade places with the order they are shown in; shown
 * alone (single mode), a trajectory gets the bonus.
 */
export function firstShownJudge(base: (r: JudgeRequest) => ScoreLine[], bonus: number): (r: JudgeRequest) => ScoreLine[] {
  const clamp = (x: number) => Math.round(Math.min(1, Math.max(0, x)) * 100) / 100;
  return (r) => base(r).map((l) => ({ ...l, score: clamp(l.score + (l.trajectory === 1 ? bonus : -bonus)) }));
}

/** An answer's first line, the value of a one-field object (`{"answer": "38"}`) unwrapped. */
function answerOf(final: string | null): string | null {
  if (final === null) return null;
  try {
    const v: unknown = JSON.parse(final);
    if (v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 1) return String(Object.values(v)[0]).split('\n')[0]!.trim();
    return String(v).split('\n')[0]!.trim();
  } catch {
    return final.split('\n')[0]!.trim();
  }
}

/**
 * A judge's answer in the one answer format: the scores as JSON (as `style` wraps it, with the `scale` it scores on
 * when that is not 0-1), or the fault's wrong answer.
 */
export function answerText(lines: ScoreLine[], fault: Fault | null, style: ScriptedJudgeOptions['style'], scale?: string): string {
  if (fault === 'malformed') return 'Trajectory 1 is the best. {"scores": [{"trajectory": 1, "score": 0.9,, }';
  const shown = fault === 'partial' ? lines.slice(0, -1) : lines;
  const scored = fault === 'out-of-range' ? shown.map((l) => ({ ...l, score: l.score * 10 })) : shown;
  const json = JSON.stringify(
    { ...(scale ? { scale } : {}), scores: scored.map((l) => ({ trajectory: l.trajectory, explanation: l.explanation, score: l.score })) },
    null,
    1,
  );
  if (style === 'bare') return json;
  if (style === 'prose') return `Having read every trajectory, here are my scores: ${json.replace(/\n/g, ' ')} I hope this helps.`;
  return `I compared the trajectories against the rubric.\n\n\`\`\`json\n${json}\n\`\`\`\n`;
}

/** A scripted judge: the model zoo (model-zoo.ts) playing every model name as a plain judge with these scores and faults. */
export async function startScriptedJudge(o: ScriptedJudgeOptions): Promise<ScriptedJudge> {
  const zoo = await startModelZoo({ score: o.score, faults: o.faults, style: o.style, timeoutHoldMs: o.timeoutHoldMs, anyModelAs: 'judge' });
  return { url: zoo.url, requests: zoo.judgeRequests, close: () => zoo.close() };
}
