/**
 * Several prompts at once, and the beam search (#40 items 3 and 7). A two-prompt agent (a planner picking the field,
 * an executor writing the answer, each reading its own prompt) is optimized in one run: both prompts are edited, each
 * candidate says which prompt its reflection changed, and merges join two lines that changed different prompts. The
 * beam search (AGL's APO: critique then edit) gains on the same tasks within its budget.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { EXECUTOR_PROMPT, PLANNER_PROMPT } from '../../samples/apo/prompts.js';
import { DESK_AGENT, deskFlags, type OptimizeStack, PLANNER_AGENT, startOptimizeStack } from '../helpers/optimize-stack.js';

let stack: OptimizeStack;
before(async () => {
  stack = await startOptimizeStack({ workers: 8, perProcess: 4 });
});
after(() => stack.close());

test('a planner and an executor optimized together: both prompts edited, each with its own lineage; merges join them', async () => {
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
  const merges = cs.filter((c) => c.origin === 'merge');
  assert.ok(merges.length >= 1, 'no merge was tried');
  for (const m of merges) assert.equal(m.parents.length, 2);
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
