/**
 * GEPA's merge (its proposer/merge.py, learned from, not copied): two members of the Pareto front that share an
 * ancestor become one child, each prompt taken from the parent that changed it. The triple is chosen by GEPA's filters:
 * neither parent descends from the other; the ancestor does no better on val (mean) than either parent; some prompt is
 * the ancestor's in one parent and changed in the other (else there is nothing to combine); the triple was not merged
 * before; and the parents' stored val scores differ somewhere (the tasks the child is judged on). A prompt both
 * parents changed is merged by the optimizer (meta/merge.md), where GEPA takes the better parent's. The child is
 * scored on up to MERGE_TASKS val tasks where the parents' stored scores differ, as many won by each side as there
 * are, against the better parent's stored scores there: no parent is rolled out again. Pairs are tried in ordinal
 * order, and of a pair's eligible ancestors the nearest is taken, so a resumed run merges the same triples.
 */
import type { PromptCandidate } from '../../protocol/prompts.js';
import type { Task } from '../algorithm/rollouts.js';
import { promptFromAnswer, renderMeta } from './meta.js';
import { promptVars, type SearchContext } from './search.js';
import { frontWeights, mean } from './selection.js';

/** Val tasks a merged child is judged on at most (GEPA's num_subsample_ids). */
export const MERGE_TASKS = 5;

/** What merges keep across a run: the triples tried, how many, each candidate's next prompt to reflect on. */
export type MergeState = { merges: number; tried: Set<string>; component: Map<string, number> };

/** A merged child to judge: the val tasks it is judged on, and the better parent's mean stored score there. */
export type MergeProposal = { child: PromptCandidate; tasks: Task[]; bar: number };

/** Proposes a merge: the child (maybe refused) with what to judge it on; `drop` when the optimizer's answer was dropped. */
export async function proposeMerge(ctx: SearchContext, state: MergeState): Promise<MergeProposal | { drop: string } | 'budget' | null> {
  const triple = mergeTriple(ctx, state.tried);
  if (!triple) return null;
  const [a, b, ancestor] = triple.map((id) => ctx.pool.get(id)) as [PromptCandidate, PromptCandidate, PromptCandidate];
  const tasks = judgedOn(ctx, a.id, b.id);
  // The most this costs: the child on those tasks, then on the rest of val if accepted.
  if (!ctx.budget.fits(ctx.val.length)) return 'budget';
  state.tried.add(tripleKey(a.id, b.id, ancestor.id));
  state.merges++;
  const prompts: Record<string, string> = {};
  const reflections: string[] = [];
  const lineage = { parents: [a.id, b.id], origin: 'merge' as const, minibatch: tasks.map((t) => t.id) };
  for (const name of ctx.components) {
    const [x, y, base] = [a.prompts[name]!, b.prompts[name]!, ancestor.prompts[name]!];
    if (x === y || y === base) prompts[name] = x;
    else if (x === base) prompts[name] = y;
    else {
      const vars = { ...promptVars(a, name), ancestor: base, prompt_a: x, prompt_b: y };
      const answer = await ctx.ask('merge', renderMeta(ctx.meta.merge, vars), promptFromAnswer);
      if ('dropped' in answer) {
        await ctx.pool.propose({ ...lineage, component: name, prompts: a.prompts, reflection: null }, `the optimizer's answer was dropped: ${answer.dropped}`);
        return { drop: answer.dropped };
      }
      prompts[name] = answer.text;
      reflections.push(answer.raw);
    }
  }
  const bothChanged = ctx.components.filter((n) => a.prompts[n] !== b.prompts[n] && ![a, b].some((p) => p.prompts[n] === ancestor.prompts[n]));
  const child = await ctx.pool.propose({
    ...lineage,
    prompts,
    component: bothChanged.length === 1 ? bothChanged[0]! : null,
    reflection: reflections.length ? reflections.join('\n\n') : null,
  });
  // The child reflects next on the later of its parents' next prompts (GEPA: the max of the parents' pointers).
  state.component.set(child.id, Math.max(...[a, b].map((p) => state.component.get(p.id) ?? 0)));
  const stored = (id: string) => mean(tasks.map((t) => ctx.pool.val.get(id)![ctx.val.indexOf(t)]!));
  return { child, tasks, bar: Math.max(stored(a.id), stored(b.id)) };
}

const tripleKey = (a: string, b: string, ancestor: string) => `${a} ${b} ${ancestor}`;

/**
 * The val tasks where the stored scores of `a` and `b` differ, at most MERGE_TASKS: those each wins taken in turn, in
 * val order, so both sides are heard.
 */
function judgedOn(ctx: SearchContext, a: string, b: string): Task[] {
  const [sa, sb] = [ctx.pool.val.get(a)!, ctx.pool.val.get(b)!];
  const aWins = ctx.val.filter((_, i) => sa[i]! > sb[i]!);
  const bWins = ctx.val.filter((_, i) => sb[i]! > sa[i]!);
  const out: Task[] = [];
  for (let i = 0; out.length < MERGE_TASKS && i < Math.max(aWins.length, bWins.length); i++)
    for (const t of [aWins[i], bWins[i]]) if (t && out.length < MERGE_TASKS) out.push(t);
  return out;
}

/** Two front members and an ancestor passing GEPA's filters (see the file's comment), or null. */
function mergeTriple(ctx: SearchContext, tried: Set<string>): [string, string, string] | null {
  const { pool } = ctx;
  const front = [...frontWeights(pool.val).keys()].sort((x, y) => pool.get(x).ordinal - pool.get(y).ordinal);
  const valMean = (id: string) => mean(pool.val.get(id)!);
  for (let i = 0; i < front.length; i++) {
    for (let j = i + 1; j < front.length; j++) {
      const [a, b] = [front[i]!, front[j]!];
      const lineA = pool.ancestors(a).slice(1);
      const lineB = pool.ancestors(b).slice(1);
      if (lineA.includes(b) || lineB.includes(a) || judgedOn(ctx, a, b).length === 0) continue;
      const eligible = lineA
        .filter((id) => lineB.includes(id) && pool.val.has(id) && !tried.has(tripleKey(a, b, id)))
        .filter((id) => valMean(id) <= valMean(a) && valMean(id) <= valMean(b))
        .filter((id) => combinable(ctx, pool.get(id), pool.get(a), pool.get(b)))
        .sort((x, y) => pool.get(y).ordinal - pool.get(x).ordinal);
      if (eligible.length) return [a, b, eligible[0]!];
    }
  }
  return null;
}

/** GEPA's "desirable predictors": a prompt that is the ancestor's in one parent and changed in the other. */
function combinable(ctx: SearchContext, ancestor: PromptCandidate, a: PromptCandidate, b: PromptCandidate): boolean {
  return ctx.components.some((n) => a.prompts[n] !== b.prompts[n] && (a.prompts[n] === ancestor.prompts[n] || b.prompts[n] === ancestor.prompts[n]));
}
