/**
 * What a judge is asked: a system message (its job, the mode's scale, the rubric, the JSON to answer with: scores as
 * plain numbers from 0 to 1, the last JSON block read, as answer.ts reads it) and a user message (the task, then
 * each trajectory as protocol/episode-text.ts renders it, between `<trajectory k>` tags, in the order this call shows
 * them). Group mode (ART's RULER): the trajectories are attempts at one task, scored
 * relative to each other in [0, 1]; single mode: one trajectory scored on the rubric's absolute scale. The order is a
 * seeded shuffle per call (position bias: a judge favours what it reads first or last), recorded on the judge spans.
 */
import { createHash } from 'node:crypto';
import type { JudgeMode } from '../../protocol/judge-reading.js';
import type { ChatMessage } from '../llm-calls/chat-caller.js';

const ANSWER_FORMAT = (n: number) =>
  [
    'Answer with JSON only, in a ```json fenced block, one entry per trajectory' + (n > 1 ? ` (1 to ${n})` : '') + ':',
    '```json',
    `{"scores": [{"trajectory": 1, "explanation": "<what it did well or badly, in a sentence or two>", "score": <a number from 0 to 1>}${n > 1 ? ', ...' : ''}]}`,
    '```',
    'Each score is a plain number from 0 (worst) to 1 (best): not 1-5, not 1-10, not a percentage. Think first if you',
    'need to; the last JSON block of your answer is the one read.',
  ].join('\n');

function systemMessage(mode: JudgeMode, rubric: string, n: number): string {
  const job =
    mode === 'group'
      ? [
          `You judge the work of an AI agent. You are shown ${n} trajectories: separate attempts by the agent at the same task.`,
          'Score each one relative to the others, from 0 to 1, following the rubric: the best attempt scores highest and the worst lowest;',
          'attempts that are equally good get the same score. Judge what each attempt did, not the order you read them in.',
        ]
      : [
          'You judge the work of an AI agent. You are shown one trajectory: an attempt by the agent at a task.',
          'Score it from 0 to 1 on the absolute scale the rubric gives.',
        ];
  return [...job, '', 'Rubric:', rubric.trim(), '', ANSWER_FORMAT(n)].join('\n');
}

/** The messages of one judge call: the task and the trajectories' texts in the order shown. */
export function judgeMessages(o: { mode: JudgeMode; rubric: string; task: string; trajectories: string[] }): ChatMessage[] {
  const n = o.trajectories.length;
  const user = [
    'Task:',
    o.task,
    '',
    ...o.trajectories.flatMap((t, i) => [`<trajectory ${i + 1}>`, t, `</trajectory ${i + 1}>`, '']),
    n > 1 ? `Score all ${n} trajectories.` : 'Score the trajectory.',
  ].join('\n');
  return [
    { role: 'system', content: systemMessage(o.mode, o.rubric, n) },
    { role: 'user', content: user },
  ];
}

/** A permutation of 0..n-1 fixed by the seed and a salt (the call's identity): Fisher-Yates over a hash stream. */
export function seededOrder(n: number, seed: number, salt: string): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  let block = Buffer.alloc(0);
  let used = 0;
  let counter = 0;
  const next = (): number => {
    if (used + 4 > block.length) {
      block = createHash('sha256').update(`${seed}\u0000${salt}\u0000${counter++}`).digest();
      used = 0;
    }
    const x = block.readUInt32BE(used) / 2 ** 32;
    used += 4;
    return x;
  };
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

/** The first 12 hex digits of a text's sha256 (the rubric's version on each judge span). */
export function shortSha(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}
