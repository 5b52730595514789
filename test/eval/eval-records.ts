/**
 * Eval runs as `agl eval` records them, for the tests of what reads them (the compare view, its model): a task's
 * result graded by the number grader, a run's config on calc's dataset with a given model, and its summary.
 */
import type { EvalConfig, EvalSummary, EvalTaskResult } from '../../protocol/eval.js';

export const CALC_AGENT = 'samples/calc/agent.ts#calcAgent';

/** A task's result: `answer` against `expected` by the number grader, scored `mean`, its rollout `ro-<id>-<answer>`. */
export function taskResult(id: string, mean: number, answer: string, expected = '7'): EvalTaskResult {
  const passed = mean >= 0.5;
  return {
    id,
    scores: [mean],
    mean,
    passed,
    grader: 'number',
    answer,
    expected,
    reason: passed ? `${answer} is within 0.000001 of ${expected}` : `answered ${answer}, expected ${expected}`,
    rolloutIds: [`ro-${id}-${answer}`],
    errored: false,
  };
}

/** The config of an evaluation of calc's dataset against `model` (null: what the daemon serves). */
export function calcEvalConfig(model: string | null): EvalConfig {
  return {
    agent: CALC_AGENT,
    agentSpec: CALC_AGENT,
    data: { file: '/project/samples/calc/data/calc.eval.jsonl', digest: 'abc' },
    repeat: 1,
    pass: 0.5,
    grader: null,
    llm: { upstream: null, model },
    prompts: {},
  };
}

/** The summary of these results (no interval: the readers compared do not show it). */
export function evalSummary(tasks: EvalTaskResult[]): EvalSummary {
  const mean = tasks.reduce((a, t) => a + t.mean, 0) / tasks.length;
  return { tasks, mean, interval: null, passAtK: tasks.filter((t) => t.passed).length / tasks.length, repeat: 1, elapsedMs: 1200 };
}
