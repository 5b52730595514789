/**
 * What both searches (gepa.ts, beam.ts) work with: the run's candidates, an Evaluator, the optimizer's model (a
 * Proposer), the meta-prompts, the budget and the tasks; and the steps they share: scoring the seed on all of val,
 * accepting a candidate with its val scores, asking the optimizer about a prompt with the examples it learns from.
 * A search is a deterministic function of its settings, its seed, the scores and the optimizer's answers: a resumed
 * run replays it and reaches the same candidates.
 */
import type { PromptCandidate } from '../../protocol/prompts.js';
import type { Task } from '../algorithm/rollouts.js';
import type { Budget } from './budget.js';
import type { CandidatePool } from './candidates.js';
import { placeholders } from './checks.js';
import type { Evaluator, TaskScore, TaskTrace } from './evaluator.js';
import type { MetaPrompts, MetaVars, ReadAnswer } from './meta.js';
import type { Answer, OptimizerPurpose } from './proposer.js';
import { bestByMean, mean } from './selection.js';

/** Why a search ended: its budget spent, nothing left to learn (val perfect, or no proposal left to try), stopped, failed. */
export type SearchEnd = { reason: 'budget' | 'completed' | 'cancelled' } | { reason: 'failed'; error: string };

export interface SearchContext {
  pool: CandidatePool;
  evaluator: Evaluator;
  ask(purpose: OptimizerPurpose, content: string, read: (answer: string) => ReadAnswer): Promise<Answer>;
  meta: MetaPrompts;
  budget: Budget;
  train: readonly Task[];
  val: readonly Task[];
  /** The prompt names optimized, in the order the search takes them. */
  components: readonly string[];
  seed: number;
  /** Train tasks per minibatch (GEPA) or critique batch (beam). */
  minibatch: number;
  signal?: AbortSignal;
  log(line: string): void;
  /** Told when a candidate is scored on all of val (the best so far with it). */
  onVal?(candidate: PromptCandidate, val: number, best: number): Promise<void> | void;
}

/**
 * Proposals in a row that came to nothing (refused by the checks, or the optimizer's answer dropped) after which GEPA
 * has nothing new to try: two epochs of minibatches, at least 12. A skipped minibatch (the parent solved it) is free
 * and does not count.
 */
export function idleLimit(ctx: SearchContext): number {
  return Math.max(12, 2 * Math.ceil(ctx.train.length / Math.max(1, ctx.minibatch)));
}

/** The seed as candidate 0, scored on all of val and accepted. */
export async function scoreSeed(ctx: SearchContext, prompts: Record<string, string>): Promise<PromptCandidate> {
  const seed = await ctx.pool.propose({ prompts, parents: [], origin: 'seed', component: null, reflection: null, minibatch: null });
  await acceptOnVal(ctx, seed, {});
  return ctx.pool.get(seed.id);
}

/** Scores a candidate on all of val (kept for parent selection and the best); its mean. */
export async function scoreOnVal(ctx: SearchContext, c: PromptCandidate): Promise<number> {
  const values = (await ctx.evaluator.score(c, ctx.val, 'val')).map((s) => s.score);
  ctx.pool.setVal(c.id, values);
  await ctx.onVal?.(c, mean(values), mean(ctx.pool.val.get(bestByMean(ctx.pool.val))!));
  return mean(values);
}

/** Scores a candidate on all of val and accepts it with those scores (and the minibatch scores it was accepted on). */
export async function acceptOnVal(ctx: SearchContext, c: PromptCandidate, scores: { minibatch?: { parent: number; child: number } | null }): Promise<number> {
  const val = await scoreOnVal(ctx, c);
  await ctx.pool.decide(c, 'accepted', { ...scores, val });
  return val;
}

/** Whether the best candidate is perfect on every val task (no later candidate can be told better). */
export function valPerfect(ctx: SearchContext): boolean {
  return [...ctx.pool.val.values()].some((s) => s.every((x) => x >= 1));
}

/** What the optimizer is told about a prompt, besides the examples: its name, text and placeholders. */
export function promptVars(c: PromptCandidate, component: string): MetaVars {
  const text = c.prompts[component]!;
  const names = placeholders(text);
  return {
    prompt_name: component,
    prompt: text,
    placeholders: names.length ? names.map((n) => `{${n}}`).join(', ') : 'none here',
  };
}

/** The examples a reflection or critique learns from: each task's input, the LLM calls, the score and the feedback. */
export function examplesText(traces: readonly TaskTrace[]): string {
  return traces
    .map((t, i) => {
      const calls = t.calls.map((c, k) =>
        [`LLM call ${k + 1}:`, ...c.messages.map((m) => `  [${m.role}] ${indent(m.content)}`), `  [answer] ${indent(c.answer)}`].join('\n'),
      );
      return [
        `### Example ${i + 1} (score ${round(t.score)})`,
        `Input: ${JSON.stringify(t.input)}`,
        ...(calls.length ? calls : ['(the agent made no LLM call)']),
        `Feedback: ${t.feedback || '(none)'}`,
      ].join('\n');
    })
    .join('\n\n');
}

const indent = (s: string) => s.replace(/\n/g, '\n    ');
const round = (x: number) => String(Math.round(x * 1000) / 1000);

/** The sum of a minibatch's scores (GEPA compares sums on the same tasks). */
export const total = (scores: readonly TaskScore[]): number => scores.reduce((a, s) => a + s.score, 0);
