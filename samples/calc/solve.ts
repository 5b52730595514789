/**
 * The calc agent's logic, independent of how the LLM is reached: call 1 may ask for the calculator,
 * the tool runs, call 2 answers. `complete` is one text completion (the agent passes the OpenAI client;
 * quick offline checks pass the policy directly). Tool outcomes are reported through `onTool` so the
 * agent can record them as tool spans (which AIR rules can reward).
 */
import { answerPrompt, type CalcTask, calculate, firstPrompt, parseToolCall, reward } from './task.js';

export type Complete = (prompt: string) => Promise<string>;
export interface ToolEvent {
  expression: string;
  result: number | null;
}

export interface CalcOutcome {
  answer: string;
  reward: number;
  toolCall: string | null;
  toolResult: number | null;
}

/** `question`: call 1's prompt (the agent reads it with llm.prompt; by default firstPrompt, the same text). */
export async function solveCalc(task: CalcTask, complete: Complete, onTool?: (e: ToolEvent) => unknown, question = firstPrompt(task)): Promise<CalcOutcome> {
  const first = await complete(question);
  const expression = parseToolCall(first);
  let result: number | null = null;
  let answer: string;
  if (expression !== null) {
    result = calculate(expression);
    await onTool?.({ expression, result });
    answer = await complete(answerPrompt(question, expression, result));
  } else {
    answer = first; // answered without the tool
  }
  return { answer, reward: reward(task, answer), toolCall: expression, toolResult: result };
}
