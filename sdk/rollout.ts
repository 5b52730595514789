/**
 * `rollout()` marks a function as an agent that Agent Lightning can run and train:
 *   export const calcAgent = rollout(async (task: { question: string }, llm) => { ...; return reward; });
 * The runner finds the export by this mark (and the CodeLens by the `rollout(` call). The agent gets
 * the task and the `LLM` resource; returning a number records it as the final reward.
 */
import type { LLM } from './llm.js';

export const ROLLOUT_MARK = Symbol.for('agent-lightning.rollout');

export interface RolloutInfo {
  rolloutId: string;
  attemptId: string;
  mode: 'train' | 'val' | 'test';
}

export type AgentFunction<Task = unknown, Result = unknown> = (task: Task, llm: LLM, info: RolloutInfo) => Result | Promise<Result>;

export interface RolloutOptions {
  /** Agent name shown in the viewer and recorded on its spans; defaults to the export name. */
  name?: string;
}

export type RolloutAgent<Task = unknown, Result = unknown> = AgentFunction<Task, Result> & { readonly [ROLLOUT_MARK]: RolloutOptions };

export function rollout<Task = unknown, Result = unknown>(fn: AgentFunction<Task, Result>, opts: RolloutOptions = {}): RolloutAgent<Task, Result> {
  if (typeof fn !== 'function') throw new TypeError('rollout(fn): fn must be the agent function (task, llm) => reward');
  const agent = ((task: Task, llm: LLM, info: RolloutInfo) => fn(task, llm, info)) as RolloutAgent<Task, Result>;
  Object.defineProperty(agent, ROLLOUT_MARK, { value: { ...opts }, enumerable: false });
  Object.defineProperty(agent, 'name', { value: opts.name ?? fn.name ?? 'agent' });
  return agent;
}

export function isRolloutAgent(value: unknown): value is RolloutAgent {
  return typeof value === 'function' && ROLLOUT_MARK in value;
}
