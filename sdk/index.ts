/**
 * The Agent Lightning SDK for TypeScript/JavaScript agents: everything an agent imports, and nothing else (the
 * runner's side lives in sdk/runner/, the daemon's client in client/).
 *   import { rollout, emitReward, operation } from 'agent-lightning-vscode/sdk';
 *   export const calcAgent = rollout(async (task: { question: string }, llm) => {
 *     const openai = new OpenAI({ baseURL: llm.baseUrl, apiKey: llm.apiKey });
 *     ...
 *     const system = llm.prompt('system', { file: 'prompts/system.md' });   // a prompt agl optimize can improve
 *     return reward;           // or { reward, feedback }, or emitReward(reward, { feedback }) anywhere inside
 *   });
 * Run it with `agl rollout file.ts#calcAgent --task '{...}'`, train it with `agl train`.
 */
export { rollout, isRolloutAgent, ROLLOUT_MARK } from './rollout.js';
export type { AgentFunction, RolloutAgent, RolloutInfo, RolloutOptions } from './rollout.js';
export { emitReward, emitMessage, emitObject, emitException, operation } from './emit.js';
export type { OperationOptions, RewardOptions } from './emit.js';
export { LLM } from './llm.js';
export { roleFetch } from './role-fetch.js';
export type { LLMInit, PromptSeed } from './llm.js';
export type { GivenPrompt } from '../protocol/prompt-template.js';
export { currentRollout } from './context.js';
export type { RolloutContext } from './context.js';
