/**
 * GEPA and the beam search as their references do it (#50 item 4), on the order desk's scripted server: a child
 * reflects on the prompt after its parent's (round-robin along a lineage); a duplicate on the Pareto front does not
 * double its candidate's chance; a merge picks its parents and ancestor by GEPA's filters and is judged on the val
 * tasks where the parents' stored scores differ, with no parent rolled out again; a run goes on while it has budget
 * and a val task is unsolved; the beam's first round makes width x branch children of the seed (AGL's APO).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { gepa, mergeStep, newGepaState, reflectStep } from '../../daemon/optimize/gepa.js';
import { MERGE_TASKS } from '../../daemon/optimize/merge.js';
import { acceptOnVal, scoreSeed, type SearchContext } from '../../daemon/optimize/search.js';
import { frontWeights, pickParent } from '../../daemon/optimize/selection.js';
import type { PromptCandidate } from '../../protocol/prompts.js';
import { DESK_PROMPT, EXECUTOR_PROMPT, PLANNER_PROMPT } from '../../samples/apo/prompts.js';
import { RULES, withRules } from '../../samples/apo/world.js';
import { DESK_AGENT, deskFlags, type OptimizeStack, PLANNER_AGENT, startOptimizeStack } from '../helpers/optimize-stack.js';
import { searchContext } from '../helpers/search-context.js';

let stack: OptimizeStack;
before(async () => {
  stack = await startOptimizeStack({ workers: 8, perProcess: 4 });
});
after(() => stack.close());

const rules = (...ids: string[]) => RULES.filter((r) => ids.includes(r.id));
const rollouts = async (c: PromptCandidate) => (await stack.conn.store.queryRollouts({ runId: c.runId, candidate: c.id, limit: 500 })).items;

test('a front member whose every winning task another covers is dropped, so a duplicate is drawn at its true weight', () => {
  const scores = new Map([
    ['seed', [0, 0, 0, 1]],
    ['a', [1, 1, 0, 1]],
    ['b', [0, 0, 1, 1]],
    ['a-again', [1, 1, 0, 1]],
  ]);
  assert.deepEqual(
    [...frontWeights(scores)],
    [
      ['a', 3],
      ['b', 2],
    ],
  );
  // Five evenly spread draws: 3 of a, 2 of b (with its copy counted, a's lineage would get 6 of 8).
  assert.deepEqual(
    [0.1, 0.3, 0.5, 0.7, 0.9].map((u) => pickParent(scores, () => u)),
    ['a', 'a', 'a', 'b', 'b'],
  );
  // Not dominated by either, but each task it wins the other two win too: it goes (of equal means, the later first).
  const covered = new Map([
    ['y', [1, 1, 0, 0]],
    ['z', [0, 0, 1, 1]],
    ['x', [1, 0, 1, 0]],
  ]);
  assert.deepEqual(
    [...frontWeights(covered)],
    [
      ['y', 2],
      ['z', 2],
    ],
  );
});

test("a child reflects on the prompt after its parent's: with 3 prompts the 3rd proposal of a lineage is on the 3rd prompt", async () => {
  const ctx = await searchContext(stack, PLANNER_AGENT, ['planner', 'executor', 'notes']);
  const seed = await scoreSeed(ctx, { planner: PLANNER_PROMPT, executor: EXECUTOR_PROMPT, notes: 'Notes for the desk: none yet.' });
  const state = newGepaState();
  const lineage: PromptCandidate[] = [];
  let parent = seed;
  while (lineage.length < 3) {
    const step = await reflectStep(ctx, state, parent.id);
    assert.ok(step !== 'budget');
    if (!step.proposed) continue; // the parent solved this minibatch: the next one
    parent = ctx.pool.all.at(-1)!;
    lineage.push(parent);
    if (lineage.length < 3) assert.notEqual(parent.status, 'refused', `candidate ${parent.ordinal} was refused: ${parent.reason}`);
  }
  assert.deepEqual(
    lineage.map((c) => c.component),
    ['planner', 'executor', 'notes'],
  );
  assert.deepEqual(
    lineage.map((c) => c.parents[0]),
    [seed.id, lineage[0]!.id, lineage[1]!.id],
  );
});

/** Candidates of the seed as a user would add them, each scored on all of val (front members). */
async function members(ctx: SearchContext, seed: PromptCandidate, texts: Record<string, string>[]): Promise<PromptCandidate[]> {
  const out: PromptCandidate[] = [];
  for (const prompts of texts) {
    const c = await ctx.pool.propose({ prompts, parents: [seed.id], origin: 'user', component: null, reflection: null, minibatch: null });
    await acceptOnVal(ctx, c, {});
    out.push(ctx.pool.get(c.id));
  }
  return out;
}

test('a merge takes parents with a prompt to combine, and is judged where their stored val scores differ, no parent rolled out again', async () => {
  const ctx = await searchContext(stack, PLANNER_AGENT, ['planner', 'executor']);
  const seed = await scoreSeed(ctx, { planner: PLANNER_PROMPT, executor: EXECUTOR_PROMPT });
  // X and B changed only the executor (nothing to combine: GEPA's "desirable predictors" filter); A changed both.
  const [x, b, a] = await members(ctx, seed, [
    { planner: PLANNER_PROMPT, executor: withRules(EXECUTOR_PROMPT, rules('name', 'digits')) },
    { planner: PLANNER_PROMPT, executor: withRules(EXECUTOR_PROMPT, rules('amount')) },
    { planner: withRules(PLANNER_PROMPT, rules('delivery')), executor: withRules(EXECUTOR_PROMPT, rules('date')) },
  ]);
  assert.deepEqual([...frontWeights(ctx.pool.val).keys()].sort(), [x!.id, b!.id, a!.id].sort(), 'each wins val tasks the others do not');
  const before = await Promise.all([x!, b!, a!].map(async (c) => (await rollouts(c)).length));
  const spent = ctx.budget.spent;
  const step = await mergeStep(ctx, newGepaState());
  assert.ok(step && step !== 'budget' && step.spent);
  const merged = ctx.pool.all.at(-1)!;
  assert.deepEqual(merged.parents, [x!.id, a!.id], 'X and B have no prompt to combine: X and A do');
  assert.equal(merged.prompts.planner, a!.prompts.planner);
  const [sx, sa] = [ctx.pool.val.get(x!.id)!, ctx.pool.val.get(a!.id)!];
  const differ = ctx.val.filter((_, i) => sx[i] !== sa[i]).map((t) => t.id);
  assert.ok(merged.minibatch!.length > 0 && merged.minibatch!.length <= MERGE_TASKS);
  assert.ok(
    merged.minibatch!.every((id) => differ.includes(id)),
    `judged on ${merged.minibatch!.join(', ')}, the parents differ on ${differ.join(', ')}`,
  );
  const judged = ctx.val.filter((t) => merged.minibatch!.includes(t.id)).map((t) => ctx.val.indexOf(t));
  const storedMean = (s: number[]) => judged.reduce((n, i) => n + s[i]!, 0) / judged.length;
  assert.equal(merged.scores.minibatch!.parent, Math.max(storedMean(sx), storedMean(sa)), "the bar is the better parent's stored scores there");
  assert.deepEqual(await Promise.all([x!, b!, a!].map(async (c) => (await rollouts(c)).length)), before, 'no parent was rolled out again');
  const its = await rollouts(merged);
  assert.ok(its.length > 0);
  assert.equal(ctx.budget.spent - spent, its.length, 'the merge spent only on the merged candidate');
  const onlyJudged = merged.status === 'rejected' ? merged.minibatch!.length : ctx.val.length;
  assert.equal(its.length, onlyJudged, `${merged.status}: scored on the judged val tasks${merged.status === 'accepted' ? ', then the rest of val' : ''}`);
});

test('two front members that changed only the same prompt are not merged', async () => {
  const ctx = await searchContext(stack, DESK_AGENT, ['desk']);
  const seed = await scoreSeed(ctx, { desk: DESK_PROMPT });
  const [d, m] = await members(ctx, seed, [{ desk: withRules(DESK_PROMPT, rules('date')) }, { desk: withRules(DESK_PROMPT, rules('amount')) }]);
  assert.deepEqual([...frontWeights(ctx.pool.val).keys()].sort(), [d!.id, m!.id].sort());
  const candidates = ctx.pool.all.length;
  assert.equal(await mergeStep(ctx, newGepaState()), null);
  assert.equal(ctx.pool.all.length, candidates, 'no merged candidate');
  assert.deepEqual(await stack.conn.store.listOptimizerCalls(seed.runId), [], 'the optimizer was not asked to merge');
});

test('a run with budget left and an unsolved val task goes on past 12 free steps: the budget ends it, or a candidate solving all of val', async () => {
  const ctx = await searchContext(stack, DESK_AGENT, ['desk'], 300);
  const seed = await scoreSeed(ctx, { desk: DESK_PROMPT });
  // P (in 3 wordings) knows every rule but amounts and solves the train tasks kept: a minibatch it is drawn on is
  // skipped, free (the search ended "completed" after 12 such steps in a row: with seed 0 it did, 51 rollouts left).
  // Q knows only amounts, and wins the val tasks P gets wrong: a minibatch it is drawn on teaches it a rule.
  const allButAmount = RULES.filter((r) => r.id !== 'amount');
  const [p] = await members(
    ctx,
    seed,
    [0, 1, 2].map((k) => ({ desk: withRules(DESK_PROMPT, allButAmount, (r) => r.sentences[k]!) })),
  );
  const solvedByP = (await ctx.evaluator.score(p!, ctx.train, 'train')).filter((s) => s.score >= 1).map((s) => s.taskId);
  const [q] = await members(ctx, seed, [
    {
      desk: withRules(
        DESK_PROMPT,
        RULES.filter((r) => r.id === 'amount'),
      ),
    },
  ]);
  assert.ok(frontWeights(ctx.pool.val).has(q!.id) && frontWeights(ctx.pool.val).has(p!.id), 'P and Q both on the front');
  const lines: string[] = [];
  const train = ctx.train.filter((t) => solvedByP.includes(t.id));
  const end = await gepa({ ...ctx, train, seed: 0, log: (l) => lines.push(l) }, { merge: false });
  const perfect = [...ctx.pool.val.values()].some((s) => s.every((x) => x >= 1));
  const story = `ended ${JSON.stringify(end)} with ${ctx.budget.left} rollouts left:\n${lines.join('\n')}`;
  assert.ok(end.reason === 'budget' || (end.reason === 'completed' && perfect), story);
});

test("the beam's first round makes width x branch children of the seed (AGL's APO)", async () => {
  const o = await stack.optimize(DESK_AGENT, deskFlags(stack.llm, { algorithm: 'beam', seed: '1', budget: '600', 'beam-rounds': '1' }));
  const cs = await stack.conn.store.listPromptCandidates(o.runId);
  const ofSeed = cs.filter((c) => c.origin === 'edit' && c.parents[0] === cs[0]!.id);
  assert.equal(ofSeed.length, 16, `children of the seed: ${ofSeed.length} (width 4 x branch 4)`);
});
