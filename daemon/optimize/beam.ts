/**
 * The beam search of Agent Lightning's APO (after ProTeGi, Pryzant et al. 2023), `agl optimize --algorithm beam`.
 * Each round, every beam member (up to `width`) gets `branch` children; a beam with fewer members repeats them in turn
 * to `width` parents, so the first round makes width x branch children of the seed, as AGL's APO does. A child: the
 * member runs a batch of train tasks, the optimizer writes a critique of one of its prompts from the batch's results
 * and feedback (the "textual gradient"), then edits the prompt against that critique. The old beam and the children
 * are scored on a val batch drawn for the round; the best `width` form the next beam (children in it accepted, the
 * others rejected); the leader is scored on all of val, and the best candidate on all of val is kept whichever round
 * found it. Defaults are AGL's: width 4, branch 4, 3 rounds, batches of 4 train tasks, val batches of 16. */
import type { PromptCandidate } from '../../protocol/prompts.js';
import { makeRng } from '../model/sampling.js';
import { tasksForStep } from '../algorithm/schedule.js';
import type { Task } from '../algorithm/rollouts.js';
import { critiqueFromAnswer, promptFromAnswer, renderMeta } from './meta.js';
import { acceptOnVal, examplesText, promptVars, scoreOnVal, type SearchContext, type SearchEnd, valPerfect } from './search.js';
import { mean } from './selection.js';

export interface BeamOptions {
  width: number;
  branch: number;
  rounds: number;
  /** Val tasks each round ranks the beam on (all of val when it has fewer). */
  valBatch: number;
}

export async function beam(ctx: SearchContext, o: BeamOptions): Promise<SearchEnd> {
  const seed = ctx.pool.all[0]!;
  let members: PromptCandidate[] = [seed];
  const state = { batch: 0, turn: 0 };
  for (let round = 0; round < o.rounds; round++) {
    if (ctx.signal?.aborted) return { reason: 'cancelled' };
    if (valPerfect(ctx)) return { reason: 'completed' };
    const valTasks = valBatchFor(ctx, o.valBatch, round);
    // What the round's end costs at most: the beam's val batch scores not asked yet, and the leader on all of val.
    const end = members.reduce((n, m) => n + ctx.evaluator.unasked(m, valTasks, 'val'), 0) + ctx.val.length;
    const children: PromptCandidate[] = [];
    let spent = false;
    for (const parent of parentsFor(members, o.width)) {
      for (let b = 0; b < o.branch && !spent; b++) {
        if (ctx.signal?.aborted) return { reason: 'cancelled' };
        const tasks = tasksForStep([...ctx.train], ctx.minibatch, ctx.seed, state.batch);
        spent = !ctx.budget.fits(ctx.evaluator.unasked(parent, tasks, 'train') + (children.length + 1) * valTasks.length + end);
        if (spent) break;
        state.batch++;
        const child = await critiqueAndEdit(ctx, parent, tasks, state);
        if (child) children.push(child);
      }
    }
    if (children.length) members = await rank(ctx, [...members, ...children], valTasks, o.width, round);
    if (spent) return { reason: 'budget' };
  }
  return { reason: 'completed' };
}

/**
 * The round's parents: the beam, its members repeated in turn until there are `width` of them when it has fewer (as
 * AGL's APO does), so the first round makes width x branch children of the seed.
 */
function parentsFor(members: PromptCandidate[], width: number): PromptCandidate[] {
  return Array.from({ length: Math.max(width, members.length) }, (_, i) => members[i % members.length]!);
}

/** A val batch for the round: all of val when it is no larger, else a draw deterministic in (seed, round). */
function valBatchFor(ctx: SearchContext, size: number, round: number): Task[] {
  if (size >= ctx.val.length) return [...ctx.val];
  const random = makeRng((ctx.seed * 7919 + round) ^ 0xbea3);
  const order = ctx.val.map((t, i) => ({ t, k: random(), i })).sort((x, y) => x.k - y.k || x.i - y.i);
  return order.slice(0, size).map((x) => x.t);
}

/** One child: the parent's batch, a critique of one of its prompts (round-robin), the edit; null when nothing came of it. */
async function critiqueAndEdit(ctx: SearchContext, parent: PromptCandidate, tasks: Task[], state: { turn: number }): Promise<PromptCandidate | null> {
  const scores = await ctx.evaluator.score(parent, tasks, 'train');
  if (scores.every((s) => s.score >= 1)) return null;
  const component = ctx.components[state.turn++ % ctx.components.length]!;
  const vars = promptVars(parent, component);
  const examples = examplesText(await ctx.evaluator.traces(parent, tasks, 'train'));
  const lineage = { parents: [parent.id], origin: 'edit' as const, component, minibatch: tasks.map((t) => t.id) };
  const critique = await ctx.ask('critique', renderMeta(ctx.meta.critique, { ...vars, examples }), critiqueFromAnswer);
  if ('dropped' in critique) {
    await ctx.pool.propose({ ...lineage, prompts: parent.prompts, reflection: null }, `the optimizer's critique was dropped: ${critique.dropped}`);
    return null;
  }
  const edit = await ctx.ask('edit', renderMeta(ctx.meta.edit, { ...vars, critique: critique.text }), promptFromAnswer);
  if ('dropped' in edit) {
    await ctx.pool.propose({ ...lineage, prompts: parent.prompts, reflection: critique.text }, `the optimizer's edit was dropped: ${edit.dropped}`);
    return null;
  }
  const child = await ctx.pool.propose({ ...lineage, prompts: { ...parent.prompts, [component]: edit.text }, reflection: critique.text });
  if (child.status === 'refused') {
    ctx.log(`beam: candidate ${child.ordinal} refused: ${child.reason}`);
    return null;
  }
  return child;
}

/**
 * Ranks the old beam and the children on the round's val batch; the best `width` are the next beam (children in it
 * accepted, the others rejected); the leader is scored on all of val.
 */
async function rank(ctx: SearchContext, all: PromptCandidate[], valTasks: Task[], width: number, round: number): Promise<PromptCandidate[]> {
  const scored: { c: PromptCandidate; mean: number }[] = [];
  for (const c of all) scored.push({ c, mean: mean((await ctx.evaluator.score(c, valTasks, 'val')).map((s) => s.score)) });
  scored.sort((x, y) => y.mean - x.mean || x.c.ordinal - y.c.ordinal);
  const kept = scored.slice(0, width);
  const cutoff = kept.at(-1)!.mean;
  for (const { c, mean: m } of scored.slice(width))
    if (c.status === 'proposed')
      await ctx.pool.decide(
        c,
        'rejected',
        {},
        `out of the beam in round ${round + 1}: ${m.toFixed(2)} on a val batch of ${valTasks.length}, the beam's last ${cutoff.toFixed(2)}`,
      );
  const [leader, ...rest] = kept.map((k) => ctx.pool.get(k.c.id));
  if (leader!.status === 'proposed') await acceptOnVal(ctx, leader!, {});
  else if (!ctx.pool.val.has(leader!.id)) await scoreOnVal(ctx, leader!);
  for (const c of rest) if (c.status === 'proposed') await ctx.pool.decide(c, 'accepted', {});
  ctx.log(`beam: round ${round + 1}: beam ${kept.map((k) => `${k.c.ordinal} (${k.mean.toFixed(2)})`).join(', ')}`);
  return kept.map((k) => ctx.pool.get(k.c.id));
}
