/**
 * Several prompts at once, and the beam search (#40 items 3 and 7). A two-prompt agent (a planner picking the field,
 * an executor writing the answer, each reading its own prompt) is optimized in one run: both prompts are edited, each
 * candidate says which prompt its reflection changed; a merge of two front members takes each prompt from the one that
 * changed it and has the optimizer merge a prompt both changed. The beam search (AGL's APO: critique then edit) gains
 * on the same tasks within its budget.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Task } from '../../daemon/algorithm/rollouts.js';
import { mergeStep, newGepaState } from '../../daemon/optimize/gepa.js';
import { acceptOnVal, scoreSeed } from '../../daemon/optimize/search.js';
import { frontWeights } from '../../daemon/optimize/selection.js';
import { DESK_PROMPT, EXECUTOR_PROMPT, PLANNER_PROMPT } from '../../samples/apo/prompts.js';
import { RULES, statedRules, withRules } from '../../samples/apo/world.js';
import { DESK_AGENT, deskFlags, type OptimizeStack, PLANNER_AGENT, startOptimizeStack } from '../helpers/optimize-stack.js';
import { searchContext } from '../helpers/search-context.js';

let stack: OptimizeStack;
before(async () => {
  stack = await startOptimizeStack({ workers: 8, perProcess: 4 });
});
after(() => stack.close());

test('a planner and an executor optimized together: both prompts edited, each with its own lineage', async () => {
  const o = await stack.optimize(PLANNER_AGENT, deskFlags(stack.llm, { prompt: ['planner', 'executor'], seed: '4', merge: true, budget: '400' }));
  assert.deepEqual(Object.keys(o.prompts), ['planner', 'executor']);
  assert.equal(o.prompts.planner!.seed, PLANNER_PROMPT);
  assert.equal(o.prompts.executor!.seed, EXECUTOR_PROMPT);
  assert.notEqual(o.prompts.planner!.best, PLANNER_PROMPT);
  assert.notEqual(o.prompts.executor!.best, EXECUTOR_PROMPT);
  assert.ok(o.scores.seed.test! <= 0.3 && o.scores.best.test! >= 0.8, `${o.scores.seed.test} -> ${o.scores.best.test}`);
  const cs = await stack.conn.store.listPromptCandidates(o.runId);
  const byId = new Map(cs.map((c) => [c.id, c]));
  for (const c of cs.filter((x) => x.origin === 'reflection' && x.status !== 'refused')) {
    const parent = byId.get(c.parents[0]!)!;
    const other = c.component === 'planner' ? 'executor' : 'planner';
    assert.equal(c.prompts[other], parent.prompts[other], `candidate ${c.ordinal} changed ${other}, not only its component ${c.component}`);
  }
  const accepted = cs.filter((c) => c.status === 'accepted' && c.origin === 'reflection');
  assert.deepEqual([...new Set(accepted.map((c) => c.component))].sort(), ['executor', 'planner']);
});

test('a task drawn twice in one batch (a minibatch across an epoch of the shuffle) is rolled out and counted once', async () => {
  const ctx = await searchContext(stack, DESK_AGENT, ['desk']);
  const seed = await ctx.pool.propose({ prompts: { desk: DESK_PROMPT }, parents: [], origin: 'seed', component: null, reflection: null, minibatch: null });
  const [a, b] = ctx.train as Task[];
  assert.equal(ctx.evaluator.unasked(seed, [a!, b!, a!], 'train'), 2);
  const scores = await ctx.evaluator.score(seed, [a!, b!, a!], 'train');
  assert.deepEqual(scores[2], scores[0]);
  assert.equal(ctx.budget.spent, 2);
  const runId = seed.runId;
  assert.equal((await stack.conn.store.queryRollouts({ runId, withTotal: true, limit: 1 })).total, 2);
});

test('a merge takes each prompt from the front member that changed it, and has the optimizer merge one both changed', async () => {
  const ctx = await searchContext(stack, PLANNER_AGENT, ['planner', 'executor']);
  const { pool } = ctx;
  const { store } = stack.conn;
  const rule = (id: string) => RULES.filter((r) => r.id === id);
  const seed = await scoreSeed(ctx, { planner: PLANNER_PROMPT, executor: EXECUTOR_PROMPT });
  const lineage = { parents: [seed.id], origin: 'user' as const, reflection: null, minibatch: null };
  // A: the planner reads deliveries from the shipped date, the executor writes dates; B: only amounts, in the executor.
  const a = await pool.propose({
    ...lineage,
    component: null,
    prompts: { planner: withRules(PLANNER_PROMPT, rule('delivery')), executor: withRules(EXECUTOR_PROMPT, rule('date')) },
  });
  const b = await pool.propose({
    ...lineage,
    component: 'executor',
    prompts: { planner: PLANNER_PROMPT, executor: withRules(EXECUTOR_PROMPT, rule('amount')) },
  });
  for (const c of [a, b]) await acceptOnVal(ctx, c, {});
  assert.deepEqual([...frontWeights(pool.val).keys()].sort(), [a.id, b.id].sort(), 'A and B each solve val tasks the other does not');
  const step = await mergeStep(ctx, newGepaState());
  assert.ok(step && step !== 'budget' && step.spent);
  const merged = pool.all.at(-1)!;
  assert.equal(merged.origin, 'merge');
  assert.deepEqual(merged.parents, [a.id, b.id]);
  assert.equal(merged.prompts.planner, a.prompts.planner, "the planner only A changed is A's");
  assert.equal(merged.component, 'executor', 'the executor both changed was merged by the optimizer');
  assert.deepEqual(
    statedRules(merged.prompts.executor!).map((r) => r.id),
    ['date', 'amount'],
  );
  assert.deepEqual(
    (await store.listOptimizerCalls(seed.runId)).map((c) => c.purpose),
    ['merge'],
  );
  assert.ok(merged.status === 'accepted' || merged.status === 'rejected');
});

test('beam search (critique then edit) gains on the same tasks within its budget', async () => {
  const o = await stack.optimize(DESK_AGENT, deskFlags(stack.llm, { algorithm: 'beam', seed: '0', budget: '700', 'beam-branch': '3', 'beam-rounds': '3' }));
  assert.ok(o.rollouts <= 700, `${o.rollouts} of 700`);
  assert.ok(o.scores.best.test! >= o.scores.seed.test! + 0.4, `${o.scores.seed.test} -> ${o.scores.best.test}`);
  const cs = await stack.conn.store.listPromptCandidates(o.runId);
  const edits = cs.filter((c) => c.origin === 'edit' && c.status !== 'refused');
  assert.ok(edits.length > 3 && edits.every((c) => c.reflection && c.component === 'desk'), 'each edit keeps the critique it followed');
  const calls = await stack.conn.store.listOptimizerCalls(o.runId);
  assert.deepEqual([...new Set(calls.map((c) => c.purpose))].sort(), ['critique', 'edit']);
});
