/**
 * GEPA (Agrawal et al. 2025, "GEPA: Reflective Prompt Evolution Can Outperform Reinforcement Learning"), the default
 * search of `agl optimize`. Each step: draw a parent from the per-val-task Pareto front (selection.ts); take the next
 * minibatch of an epoch-wise shuffle of train; score the parent on it (skip it when the parent is perfect there);
 * reflect on one of its prompts (round-robin per parent) with the minibatch's inputs, LLM calls, scores and feedback;
 * score the child on the same minibatch and accept it only when it does strictly better than its parent there; an
 * accepted child is scored on all of val and joins the front. With `merge`, after an accepted child, two front
 * members that share an ancestor and changed different prompts are merged (the optimizer merges a prompt both
 * changed) and kept when they do at least as well as the better of the two on a minibatch.
 */
import { makeRng } from '../model/sampling.js';
import { tasksForStep } from '../algorithm/schedule.js';
import type { PromptCandidate } from '../../protocol/prompts.js';
import { promptFromAnswer, renderMeta } from './meta.js';
import { acceptOnVal, examplesText, idleLimit, promptVars, type SearchContext, type SearchEnd, total, valPerfect } from './search.js';
import { frontWeights, mean, pickParent } from './selection.js';
import type { Task } from '../algorithm/rollouts.js';

/** Merges tried at most in a run (GEPA's max_merge_invocations). */
const MAX_MERGES = 5;

export interface GepaOptions {
  merge: boolean;
}

/** What one step did: spent rollouts or not (a search with nothing left to try ends), and accepted a child or not. */
export type Step = { spent: boolean; accepted: boolean; drop?: string };

export async function gepa(ctx: SearchContext, o: GepaOptions): Promise<SearchEnd> {
  const random = makeRng(ctx.seed ^ 0x6e7a);
  const state = { minibatch: 0, merges: 0, idle: 0, drops: [] as string[], component: new Map<string, number>(), tried: new Set<string>() };
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
    state.idle = step.spent ? 0 : state.idle + 1;
    if (step.drop) state.drops.push(step.drop);
    else if (step.spent) state.drops = [];
    if (state.idle >= idleLimit(ctx)) {
      const allDropped = state.drops.length >= state.idle;
      if (allDropped) return { reason: 'failed', error: `the optimizer's last ${state.drops.length} answers were dropped; the last: ${state.drops.at(-1)}` };
      ctx.log(`gepa: nothing new to try in the last ${state.idle} steps (every minibatch solved, or every proposal refused)`);
      return { reason: 'completed' };
    }
  }
}

/** Where a search is: the next minibatch of the train shuffle, merges tried, each parent's next prompt to reflect on. */
export type GepaState = { minibatch: number; merges: number; component: Map<string, number>; tried: Set<string> };

/** One reflection: parent on a minibatch, the optimizer's new text for one prompt, the child on the same minibatch. */
async function reflectStep(ctx: SearchContext, state: GepaState, parentId: string): Promise<Step | 'budget'> {
  const parent = ctx.pool.get(parentId);
  const tasks = tasksForStep([...ctx.train], ctx.minibatch, ctx.seed, state.minibatch);
  // The most this step can cost: the parent's scores not asked yet, the child's, and the child's val.
  if (!ctx.budget.fits(ctx.evaluator.unasked(parent, tasks, 'train') + tasks.length + ctx.val.length)) return 'budget';
  state.minibatch++;
  const before = await ctx.evaluator.score(parent, tasks, 'train');
  if (before.every((s) => s.score >= 1)) return { spent: false, accepted: false };
  const turn = state.component.get(parent.id) ?? 0;
  state.component.set(parent.id, turn + 1);
  const component = ctx.components[turn % ctx.components.length]!;
  const examples = examplesText(await ctx.evaluator.traces(parent, tasks, 'train'));
  const answer = await ctx.ask('reflect', renderMeta(ctx.meta.reflect, { ...promptVars(parent, component), examples }), promptFromAnswer);
  const lineage = { parents: [parent.id], origin: 'reflection' as const, component, minibatch: tasks.map((t) => t.id) };
  if ('dropped' in answer) {
    await ctx.pool.propose({ ...lineage, prompts: parent.prompts, reflection: null }, `the optimizer's answer was dropped: ${answer.dropped}`);
    return { spent: false, accepted: false, drop: answer.dropped };
  }
  const child = await ctx.pool.propose({ ...lineage, prompts: { ...parent.prompts, [component]: answer.text }, reflection: answer.raw });
  if (child.status === 'refused') {
    ctx.log(`gepa: candidate ${child.ordinal} refused: ${child.reason}`);
    return { spent: false, accepted: false };
  }
  return judge(ctx, child, tasks, total(before) / tasks.length, 'its parent');
}

/** Scores a child on the minibatch its parent(s) scored `bar` on (a mean): strictly better is accepted and scored on val. */
async function judge(ctx: SearchContext, child: PromptCandidate, tasks: Task[], bar: number, than: string, atLeast = false): Promise<Step> {
  const after = mean((await ctx.evaluator.score(child, tasks, 'train')).map((s) => s.score));
  const minibatch = { parent: bar, child: after };
  if (after > bar || (atLeast && after >= bar)) {
    const val = await acceptOnVal(ctx, child, { minibatch });
    ctx.log(
      `gepa: candidate ${child.ordinal} (${child.origin} of ${child.component ?? 'every prompt'}) accepted: minibatch ${fmt(bar)} -> ${fmt(after)}, val ${fmt(val)}`,
    );
    return { spent: true, accepted: true };
  }
  await ctx.pool.decide(
    child,
    'rejected',
    { minibatch },
    `${atLeast ? 'worse than' : 'not better than'} ${than} on its minibatch (${fmt(after)} vs ${fmt(bar)})`,
  );
  return { spent: true, accepted: false };
}

const fmt = (x: number) => x.toFixed(2);

/**
 * A merge (GEPA's merge, with the optimizer merging a prompt both changed): two front members sharing an ancestor,
 * neither descending from the other, the untried pair drawn first in ordinal order; each prompt taken from the one
 * that changed it. Null when no pair is left to merge.
 */
export async function mergeStep(ctx: SearchContext, state: GepaState): Promise<Step | 'budget' | null> {
  const pair = mergePair(ctx, state.tried);
  if (!pair) return null;
  const [a, b, ancestor] = pair.map((id) => ctx.pool.get(id)) as [PromptCandidate, PromptCandidate, PromptCandidate];
  const tasks = tasksForStep([...ctx.train], ctx.minibatch, ctx.seed, state.minibatch);
  const cost = ctx.evaluator.unasked(a, tasks, 'train') + ctx.evaluator.unasked(b, tasks, 'train') + tasks.length + ctx.val.length;
  if (!ctx.budget.fits(cost)) return 'budget';
  state.tried.add(`${a.id} ${b.id}`);
  state.merges++;
  state.minibatch++;
  const prompts: Record<string, string> = {};
  const reflections: string[] = [];
  for (const name of ctx.components) {
    const [x, y, base] = [a.prompts[name]!, b.prompts[name]!, ancestor.prompts[name]!];
    if (x === y || y === base) prompts[name] = x;
    else if (x === base) prompts[name] = y;
    else {
      const vars = { ...promptVars(a, name), ancestor: base, prompt_a: x, prompt_b: y };
      const answer = await ctx.ask('merge', renderMeta(ctx.meta.merge, vars), promptFromAnswer);
      const lineage = { parents: [a.id, b.id], origin: 'merge' as const, component: name, minibatch: tasks.map((t) => t.id) };
      if ('dropped' in answer) {
        await ctx.pool.propose({ ...lineage, prompts: a.prompts, reflection: null }, `the optimizer's answer was dropped: ${answer.dropped}`);
        return { spent: false, accepted: false, drop: answer.dropped };
      }
      prompts[name] = answer.text;
      reflections.push(answer.raw);
    }
  }
  const changed = ctx.components.filter((n) => a.prompts[n] !== b.prompts[n] && a.prompts[n] !== ancestor.prompts[n] && b.prompts[n] !== ancestor.prompts[n]);
  const child = await ctx.pool.propose({
    prompts,
    parents: [a.id, b.id],
    origin: 'merge',
    component: changed.length === 1 ? changed[0]! : null,
    reflection: reflections.length ? reflections.join('\n\n') : null,
    minibatch: tasks.map((t) => t.id),
  });
  if (child.status === 'refused') return { spent: false, accepted: false };
  const bar = Math.max(...(await Promise.all([a, b].map(async (p) => mean((await ctx.evaluator.score(p, tasks, 'train')).map((s) => s.score))))));
  return judge(ctx, child, tasks, bar, 'the better of its parents', true);
}

/** Two front members (and their nearest common ancestor) to merge: not tried yet, neither an ancestor of the other. */
function mergePair(ctx: SearchContext, tried: Set<string>): [string, string, string] | null {
  const front = [...frontWeights(ctx.pool.val).keys()].sort((x, y) => ctx.pool.get(x).ordinal - ctx.pool.get(y).ordinal);
  for (let i = 0; i < front.length; i++) {
    for (let j = i + 1; j < front.length; j++) {
      const [a, b] = [front[i]!, front[j]!];
      if (tried.has(`${a} ${b}`)) continue;
      const lineA = ctx.pool.ancestors(a),
        lineB = ctx.pool.ancestors(b);
      if (lineA.includes(b) || lineB.includes(a)) continue;
      const common = lineA.filter((id) => lineB.includes(id)).sort((x, y) => ctx.pool.get(y).ordinal - ctx.pool.get(x).ordinal);
      if (common.length) return [a, b, common[0]!];
    }
  }
  return null;
}
