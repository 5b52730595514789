/**
 * What "Optimize This Prompt" offers and the `agl optimize` command line a choice becomes, without VS Code
 * (test/extension/optimize-choices.test.ts): the prompts of the agent (the one clicked first, the others it reads
 * offered beside it: GEPA optimizes several at once), budgets in rollouts (every rollout counts: minibatches, val,
 * test) with the least the chosen task files need, the agent's model (an OpenAI-compatible server through the gateway,
 * or what the daemon serves) and the optimizer's endpoint (the settings agentLightning.optimizer.*); the task files an
 * earlier optimization of the agent used; and a finished run's result in words.
 */
import { commandLine } from '../protocol/cli-options.js';
import type { PromptInfo } from '../protocol/lsp.js';
import { OPTIMIZE_COMMAND, type OptimizeFlags } from '../protocol/optimize-options.js';
import type { OptimizationSummary } from '../protocol/prompts.js';
import type { TrainingRun } from '../protocol/store.js';
import type { TaskFiles } from './train-choices.js';

/** A budget: rollouts in all. */
export interface OptimizeBudget {
  id: string;
  label: string;
  detail: string;
  rollouts: number;
}
export const OPTIMIZE_BUDGETS: OptimizeBudget[] = [
  { id: 'quick', label: 'Quick', rollouts: 60, detail: 'the seed and a few candidates: checks that everything runs' },
  { id: 'standard', label: 'Standard', rollouts: 150, detail: 'a dozen candidates or more on a small val set' },
  { id: 'thorough', label: 'Thorough', rollouts: 300, detail: 'what GEPA needs to find several rules on a larger val set' },
];

/** GEPA's train tasks per reflection (agl optimize's default). */
export const MINIBATCH = 3;

/**
 * The fewest rollouts with which a run gets past its seed, as `agl optimize` counts them (daemon/optimize/run-plan.ts):
 * one probe reading the seed's texts, the seed on val, the test set twice (seed and best) kept in reserve, then room
 * for one proposal (two minibatches, the child on val).
 */
export function leastBudget(valTasks: number, testTasks: number): number {
  return 1 + valTasks + 2 * testTasks + 2 * MINIBATCH + valTasks;
}

/** The agent's model: an OpenAI-compatible server the gateway forwards to (recorded), or the model the daemon serves. */
export type AgentModel = { kind: 'upstream'; url: string; model: string; keyEnv: string } | { kind: 'served' };

/** The optimizer model's OpenAI-compatible endpoint (settings agentLightning.optimizer.url, .model, .keyEnv). */
export interface OptimizerEndpoint {
  url: string;
  model: string;
  keyEnv: string;
}

/** One "Optimize This Prompt" as remembered per agent (workspaceState) and run. */
export interface OptimizeChoice {
  prompts: string[];
  train: string;
  val: string;
  test: string | null;
  budget: number;
  agentModel: AgentModel;
  optimizer: OptimizerEndpoint;
}

/** The names of the prompts `agent` reads (by the language server), `first` first, each once. */
export function agentPromptNames(prompts: readonly PromptInfo[], agent: string, first: string): string[] {
  const names = prompts.filter((p) => p.agent === agent).map((p) => p.name);
  return [...new Set([first, ...names])];
}

/**
 * The `agl optimize` arguments of a choice. It runs against the daemon the extension uses (agl-process.ts names it in
 * AGL_URL and AGL_TOKEN), so its rollouts, candidates and progress reach the views through the daemon's events;
 * `--json`: its one stdout line is the result. The command line comes from agl optimize's one option table
 * (protocol/optimize-options.ts): a flag it lacks does not compile.
 */
export function optimizeArgs(agent: string, choice: OptimizeChoice): string[] {
  const flags: OptimizeFlags = {
    prompt: choice.prompts,
    train: choice.train,
    val: choice.val,
    budget: String(choice.budget),
    'optimizer-url': choice.optimizer.url,
    'optimizer-model': choice.optimizer.model,
    'optimizer-key-env': choice.optimizer.keyEnv,
    json: true,
  };
  if (choice.test) flags.test = choice.test;
  const m = choice.agentModel;
  // 'served': no flag, so the agent's calls go to what the daemon's gateway serves (agl serve --model or --upstream).
  if (m.kind === 'upstream') Object.assign(flags, { upstream: m.url, 'upstream-model': m.model, 'upstream-key-env': m.keyEnv });
  return commandLine(OPTIMIZE_COMMAND, flags, [agent]);
}

/** The task files of the agent's newest optimization (its config's `data`, as `agl optimize` records it). */
export function lastOptimizeTaskFiles(runs: readonly TrainingRun[]): TaskFiles {
  for (const run of [...runs].sort((a, b) => b.createdAt - a.createdAt)) {
    const data = (run.config as { data?: { train?: unknown; val?: unknown; test?: unknown } }).data;
    if (data && typeof data.train === 'string' && typeof data.val === 'string') {
      return { train: data.train, val: data.val, ...(typeof data.test === 'string' ? { test: data.test } : {}) };
    }
  }
  return {};
}

/** A URL an OpenAI client can take as its base (http(s), ending in /v1 or any path the server serves); else why not. */
export function endpointProblem(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `"${url}" is not a URL: give the server's base URL, e.g. https://api.openai.com/v1 or http://localhost:11434/v1`;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return `"${url}" is not an http(s) URL`;
  return null;
}

const score = (v: number | null | undefined) => (typeof v === 'number' ? v.toFixed(2) : '—');

/** "val 0.33 → 0.92, test 0.25 → 0.90 (held out); 118 of 120 rollouts, 14 candidates, 9 optimizer calls" from a run's summary. */
export function describeOptimization(run: TrainingRun): string {
  const s = run.summary as OptimizationSummary;
  const parts: string[] = [];
  // Before the seed is scored (a run stopped early) there is no score to say: "val — → —" would only look broken.
  if (s.scores && (typeof s.scores.seed.val === 'number' || typeof s.scores.best.val === 'number')) {
    parts.push(`val ${score(s.scores.seed.val)} → ${score(s.scores.best.val)}`);
    if (s.scores.seed.test !== null || s.scores.best.test !== null) parts.push(`test ${score(s.scores.seed.test)} → ${score(s.scores.best.test)} (held out)`);
  }
  const spent = [`${s.rollouts ?? run.step} of ${s.budget ?? run.totalSteps} rollouts`];
  if (s.candidates !== undefined) spent.push(`${s.candidates} candidates`);
  if (s.optimizerCalls !== undefined) spent.push(`${s.optimizerCalls} optimizer calls`);
  if (s.judgeCalls !== undefined) spent.push(`${s.judgeCalls} judge calls`);
  return [parts.join(', '), spent.join(', ')].filter(Boolean).join('; ');
}

/** Whether the run found a better candidate than its seed (its summary names a best that is not the seed). */
export function improved(run: TrainingRun): boolean {
  const s = run.summary as OptimizationSummary;
  return s.bestCandidate !== undefined && s.bestCandidate !== s.seedCandidate;
}
