/**
 * GEPA (Agrawal et al. 2025, "GEPA: Reflective Prompt Evolution Can Outperform Reinforcement Learning"), the default
 * search of `agl optimize`. Each step: draw a parent from the per-val-task Pareto front (selection.ts); take the next
 * minibatch of an epoch-wise shuffle of train; score the parent on it (skip it when the parent is perfect there);
 * reflect on one of its prompts, round-robin along the lineage (a child starts at the prompt after the one its parent
 * was last reflected on, as GEPA's RoundRobinReflectionComponentSelector does), with the minibatch's inputs, LLM calls,
 * scores and feedback; score the child on the same minibatch and accept it only when it does strictly better than its
 * parent there; an accepted child is scored on all of val and joins the front. With `merge`, after an accepted child,
 * two front members that share an ancestor are merged by GEPA's filters (merge.ts) and judged on the val tasks where
 * their stored scores differ. A run goes on until its budget is spent or a candidate solves every val task; it ends
 * sooner only when nothing is left to learn from: every front member solves every train task, or the optimizer's
 * last proposals were all refused or dropped (a run of them as long as two epochs of minibatches, at least 12).
 */
import { makeRng } from '../model/sampling.js';
import { tasksForStep } from '../algorithm/schedule.js';
import type { PromptCandidate } from '../../protocol/prompts.js';
import { promptFromAnswer, renderMeta } from './meta.js';
import { type MergeState, proposeMerge } from './merge.js';
import { acceptOnVal, examplesText, idleLimit, promptVars, type SearchContext, type SearchEnd, total, valPerfect } from './search.js';
import { frontWeights, mean, pickParent } from './selection.js';
import type { Split } from './evaluator.js';
import type { Task } from '../algorithm/rollouts.js';

/** Merges tried at most in a run (GEPA's max_merge_invocations). */
const MAX_MERGES = 5;

export interface GepaOptions {
  merge: boolean;
}

/**
 * What one step did: asked the optimizer for a proposal that came to nothing (refused by the checks, or its answer
 * dropped: `drop` says why), spent rollouts on a child, accepted it. A step that skipped a solved minibatch did none.
 */
export type Step = { proposed: boolean; spent: boolean; accepted: boolean; drop?: string };

/**
 * Where a search is: the next minibatch of the train shuffle, merges tried (and the (parents, ancestor) triples tried),
 * each candidate's next prompt to reflect on (a child inherits its parent's), and the train tasks each parent was
 * seen to solve (so a search knows when no front member has anything left to learn from on train).
 */
export type GepaState = MergeState & { minibatch: number; solved: Map<string, Set<string>> };

export const newGepaState = (): GepaState => ({ minibatch: 0, merges: 0, component: new Map(), tried: new Set(), solved: new Map() });

export async function gepa(ctx: SearchContext, o: GepaOptions): Promise<SearchEnd> {
  const random = makeRng(ctx.seed ^ 0x6e7a);
  const state = newGepaState();
  // The proposals in a row that came to nothing (refused or dropped), and the drops among them.
  let fruitless = 0;
  let drops: string[] = [];
  let mergeDue = false;
  for (;;) {
    if (ctx.signal?.aborted) return { reason: 'cancelled' };
    if (valPerfect(ctx)) return { reason: 'completed' };
    let step: Step | 'budget' | null = null;
    if (o.merge && mergeDue && state.merges < MAX_MERGES) {
      mergeDue = false;
      step = await mergeStep(ctx, state);
    }
    step ??= await reflectStep(ctx, state, pickParent(ctx.pool.val, random));
    if (step === 'budget') return { reason: 'budget' };
    mergeDue ||= step.accepted;
    if (step.spent) [fruitless, drops] = [0, []];
    else if (step.proposed) fruitless++;
    if (step.drop) drops.push(step.drop);
    if (fruitless >= idleLimit(ctx)) {
      if (drops.length >= fruitless) return { reason: 'failed', error: `the optimizer's last ${drops.length} answers were dropped; the last: ${drops.at(-1)}` };
      ctx.log(`gepa: the optimizer's last ${fruitless} proposals were refused or dropped: nothing new to try, ${ctx.budget.left} rollouts left`);
      return { reason: 'completed' };
    }
    if (!step.proposed && frontSolvesTrain(ctx, state)) {
      ctx.log(`gepa: every candidate on the front solves every train task: nothing left to reflect on, ${ctx.budget.left} rollouts left`);
      return { reason: 'completed' };
    }
  }
}

/** Whether every front member was seen solving every train task (no minibatch is left to reflect on). */
function frontSolvesTrain(ctx: SearchContext, state: GepaState): boolean {
  return [...frontWeights(ctx.pool.val).keys()].every((id) => ctx.train.every((t) => state.solved.get(id)?.has(t.id)));
}

/** The prompt to reflect on for `parent` (round-robin), its next one kept for it and handed down to its children. */
function nextComponent(ctx: SearchContext, state: GepaState, parent: PromptCandidate): { component: string; next: number } {
  const turn = state.component.get(parent.id) ?? 0;
  state.component.set(parent.id, turn + 1);
  return { component: ctx.components[turn % ctx.components.length]!, next: turn + 1 };
}

/** One reflection: parent on a minibatch, the optimizer's new text for one prompt, the child on the same minibatch. */
export async function reflectStep(ctx: SearchContext, state: GepaState, parentId: string): Promise<Step | 'budget'> {
  const parent = ctx.pool.get(parentId);
  const tasks = tasksForStep([...ctx.train], ctx.minibatch, ctx.seed, state.minibatch);
  // The most this step can cost: the parent's scores not asked yet, the child's, and the child's val.
  if (!ctx.budget.fits(ctx.evaluator.unasked(parent, tasks, 'train') + tasks.length + ctx.val.length)) return 'budget';
  state.minibatch++;
  const before = await ctx.evaluator.score(parent, tasks, 'train');
  const solved = state.solved.get(parent.id) ?? new Set<string>();
  for (const s of before) if (s.score >= 1) solved.add(s.taskId);
  state.solved.set(parent.id, solved);
  if (before.every((s) => s.score >= 1)) return { proposed: false, spent: false, accepted: false };
  const { component, next } = nextComponent(ctx, state, parent);
  const examples = examplesText(await ctx.evaluator.traces(parent, tasks, 'train'));
  const answer = await ctx.ask('reflect', renderMeta(ctx.meta.reflect, { ...promptVars(parent, component), examples }), promptFromAnswer);
  const lineage = { parents: [parent.id], origin: 'reflection' as const, component, minibatch: tasks.map((t) => t.id) };
  if ('dropped' in answer) {
    await ctx.pool.propose({ ...lineage, prompts: parent.prompts, reflection: null }, `the optimizer's answer was dropped: ${answer.dropped}`);
    return { proposed: true, spent: false, accepted: false, drop: answer.dropped };
  }
  const child = await ctx.pool.propose({ ...lineage, prompts: { ...parent.prompts, [component]: answer.text }, reflection: answer.raw });
  if (child.status === 'refused') {
    ctx.log(`gepa: candidate ${child.ordinal} refused: ${child.reason}`);
    return { proposed: true, spent: false, accepted: false };
  }
  state.component.set(child.id, next);
  return judge(ctx, child, tasks, 'train', total(before) / tasks.length, 'its parent');
}

/**
 * Scores a child on the tasks its parent(s) scored `bar` on (a mean): strictly better (at least as good, for a merge)
 * is accepted and scored on val.
 */
async function judge(ctx: SearchContext, child: PromptCandidate, tasks: Task[], split: Split, bar: number, than: string, atLeast = false): Promise<Step> {
  const after = mean((await ctx.evaluator.score(child, tasks, split)).map((s) => s.score));
  const minibatch = { parent: bar, child: after };
  if (after > bar || (atLeast && after >= bar)) {
    const val = await acceptOnVal(ctx, child, { minibatch });
    ctx.log(
      `gepa: candidate ${child.ordinal} (${child.origin} of ${child.component ?? 'every prompt'}) accepted: minibatch ${fmt(bar)} -> ${fmt(after)}, val ${fmt(val)}`,
    );
    return { proposed: true, spent: true, accepted: true };
  }
  await ctx.pool.decide(
    child,
    'rejected',
    { minibatch },
    `${atLeast ? 'worse than' : 'not better than'} ${than} on its ${split === 'val' ? 'val tasks' : 'minibatch'} (${fmt(after)} vs ${fmt(bar)})`,
  );
  return { proposed: true, spent: true, accepted: false };
}

const fmt = (x: number) => x.toFixed(2);

/**
 * A merge (merge.ts): two front members and an ancestor by GEPA's filters, the merged child judged on the val tasks
 * where the parents' stored scores differ, against the better parent's stored scores there. Null when no triple is
 * left to merge.
 */
export async function mergeStep(ctx: SearchContext, state: GepaState): Promise<Step | 'budget' | null> {
  const merged = await proposeMerge(ctx, state);
  if (merged === null || merged === 'budget') return merged;
  if ('drop' in merged) return { proposed: true, spent: false, accepted: false, drop: merged.drop };
  if (merged.child.status === 'refused') return { proposed: true, spent: false, accepted: false };
  return judge(ctx, merged.child, merged.tasks, 'val', merged.bar, 'the better of its parents', true);
}
