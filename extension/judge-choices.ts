/**
 * Train This Agent's LLM judge, without VS Code (test/extension/judge-choices.test.ts): whether to offer one (the agent
 * emits no reward: its rollouts carry none, or its code never names one; or it trained with a judge before), the rubric
 * file written next to the agent from the shipped template (extension/templates/rubric.md), and the `agl train` judge
 * flags a choice becomes (protocol/judge-settings.ts declares them). The judge's endpoint is the settings'
 * agentLightning.judge.* (asked and saved when empty, like Optimize This Prompt's optimizer).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { TrainFlags } from '../protocol/train-options.js';
import type { AgentStats } from '../protocol/lsp.js';

/** A judge as Train This Agent runs it: its OpenAI-compatible endpoint and the rubric file (absolute). */
export interface JudgeChoice {
  url: string;
  model: string;
  /** The variable holding its API key (setting agentLightning.judge.keyEnv). */
  keyEnv: string;
  rubric: string;
}

/** The rubric file Train This Agent writes next to the agent (and reuses when it is there). */
export const RUBRIC_FILE = 'rubric.md';

/**
 * Why Train This Agent offers an LLM judge for the agent, in words for its pick, or null when the agent has a reward
 * of its own: it was trained with a judge last time here or in its newest run; none of its recent rollouts has a
 * reward; or its code (`source`: the agent's file) never names a reward (emitReward, emit_reward, a returned
 * { reward }: any "reward" at all) and returns no number literal. The code test is a hint (an agent may return a
 * computed number): the pick says why,
 * and training on its own reward stays one choice away.
 */
export function judgeOfferReason(input: { stats: AgentStats | undefined; source: string | null; lastJudge: JudgeChoice | undefined }): string | null {
  const kind = input.stats?.reward?.source.kind;
  if (input.lastJudge) return 'you trained it with a judge last time';
  if (kind === 'judge' || kind === 'both') return `its last training run (${input.stats!.reward!.runId}) had a judge`;
  if (kind === 'none') return 'none of its recent rollouts has a reward';
  if (input.source !== null && !MAY_SCORE.test(input.source)) return 'its code never emits or returns a reward';
  return null;
}

/**
 * Code that may score its rollouts: it names a reward, or returns a number literal (`return 1`, `=> 0`, a ternary of
 * two numbers such as `ok ? 1 : 0`: a bare-number reward, which the word test alone missed).
 */
const MAY_SCORE = /reward|\?\s*-?\d+(\.\d+)?\s*:\s*-?\d+(\.\d+)?|\breturn\s+-?\d+(\.\d+)?\s*;|=>\s*-?\d+(\.\d+)?\s*[,;)]/i;

/** Where the rubric template is: beside the bundle (dist/templates, esbuild.mjs copies it), else in the sources. */
export function rubricTemplatePath(extensionPath: string): string {
  const bundled = join(extensionPath, 'dist', 'templates', RUBRIC_FILE);
  return existsSync(bundled) ? bundled : join(extensionPath, 'extension', 'templates', RUBRIC_FILE);
}

/** The rubric template with the agent's name filled in (`{{agent}}`). */
export function renderRubric(template: string, agentName: string): string {
  return template.replace(/\{\{agent\}\}/g, agentName);
}

/** The rubric file of an agent: RUBRIC_FILE in its folder. */
export function rubricFileOf(agentFile: string): string {
  return join(dirname(agentFile), RUBRIC_FILE);
}

/** The template's text for an agent (read from the extension), for a rubric file that does not exist yet. */
export function rubricText(extensionPath: string, agentName: string): string {
  return renderRubric(readFileSync(rubricTemplatePath(extensionPath), 'utf8'), agentName);
}

const LOCAL = /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])[:/]/;

/**
 * `agl train`'s judge flags for a choice: url, model, rubric, and the key's variable when the run can read it (set in
 * the environment VS Code gives `agl train`) or the server is remote (where agl train's error then names the variable
 * to set); a local server without the variable set gets no key, as local servers need none.
 */
export function judgeTrainFlags(judge: JudgeChoice, env: NodeJS.ProcessEnv): TrainFlags {
  const key = env[judge.keyEnv] || !LOCAL.test(judge.url) ? { 'judge-key-env': judge.keyEnv } : {};
  return { 'judge-url': judge.url, 'judge-model': judge.model, 'judge-rubric': judge.rubric, ...key };
}
