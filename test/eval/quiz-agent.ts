/**
 * The agent test/eval/cli.test.ts evaluates: it answers a quiz task without a model, right or off by one as its prompt
 * `mode` says (llm.prompt: its seed `right`, a promoted or pinned text otherwise), so two evaluations differ task by
 * task in a way the test knows; its own reward says whether it answered right. A task named `boom` throws (a failed
 * rollout: a JUnit error).
 */
import { emitReward, type LLM, rollout } from '../../sdk/index.js';

export interface QuizTask {
  q: string;
  answer: number;
}

export const quizAgent = rollout(
  async (task: QuizTask, llm: LLM) => {
    if (task.q === 'boom') throw new Error('the quiz agent was asked to fail');
    const right = llm.prompt('mode', 'right') === 'right';
    emitReward(right ? 1 : 0, { feedback: right ? 'answered as told' : 'answered off by one, as its prompt said' });
    return String(right ? task.answer : task.answer + 1);
  },
  { name: 'quiz' },
);
