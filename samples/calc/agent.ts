/**
 * The calc agent: an ordinary OpenAI-client agent marked with rollout(). It asks the model (text
 * completions, a short format a tiny model can learn: see task.ts), runs the calculator when the model
 * asks for it (recorded as a tool span, so AIR rules can reward tool use), asks again for the answer,
 * emits its answer (`calc.final`) and returns the exact-answer reward.
 *   agl rollout samples/calc/agent.ts#calcAgent --task '{"id":"x","question":"Ann has 23 pens, gets 15 more. How many?","answer":38}'
 *   agl train samples/calc/agent.ts#calcAgent --train samples/calc/data/train.jsonl --val samples/calc/data/val.jsonl
 */
import OpenAI from 'openai';
import { LLM, emitObject, operation, rollout } from '../../sdk/index.js';
import { solveCalc } from './solve.js';
import { type CalcTask, QUESTION_PROMPT } from './task.js';

export const calcAgent = rollout(
  async (task: CalcTask, llm: LLM) => {
    const openai = new OpenAI({ baseURL: llm.baseUrl, apiKey: llm.apiKey, maxRetries: 1 });
    const complete = async (prompt: string) => {
      const res = await openai.completions.create({ model: llm.model, prompt, max_tokens: 16, ...llm.openaiParams });
      return res.choices[0]?.text ?? '';
    };
    // The question's prompt through llm.prompt (its seed fills in to the warm-up's text): `agl optimize` can rewrite it.
    const question = llm.prompt('question', QUESTION_PROMPT, { question: task.question });
    const outcome = await solveCalc(
      task,
      complete,
      (e) =>
        operation(
          'calc',
          () => {
            if (e.result === null) throw new Error(`calc could not evaluate '${e.expression}'`);
            return e.result;
          },
          { tool: true, input: e.expression, attributes: { 'calc.expression': e.expression } },
        ).catch(() => undefined),
      question,
    );
    // The episode's answer, as the reward reads it (the first line), for the viewer's group view.
    emitObject({ answer: outcome.answer.split('\n')[0]!.trim() }, { 'agl.object.kind': 'calc.final' });
    return outcome.reward;
  },
  { name: 'calc' },
);
