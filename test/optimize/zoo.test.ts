/**
 * `agl optimize` with the model zoo's untidy optimizers (test/helpers/model-zoo.ts) on the order desk (the agent model
 * is the desk's scripted one; real daemon, store, runner and `openai` client): a renamed placeholder ({question} ->
 * {query}) is refused by the candidate checks (daemon/optimize/checks.ts) and never rolled out; a prompt that grows
 * every round is bounded by --max-prompt-chars, the longer ones refused with the cap named; commentary around the
 * fenced prompt, or the current prompt quoted in a block before the new one, never reaches a candidate; an optimizer that fixes one thing at a time still improves, one rule per
 * candidate.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { OptimizeOutcome } from '../../daemon/optimize/optimize-run.js';
import type { OptimizeFlags } from '../../protocol/optimize-options.js';
import { DESK_PROMPT } from '../../samples/apo/prompts.js';
import { statedRules } from '../../samples/apo/world.js';
import { type ModelZoo, startModelZoo } from '../helpers/model-zoo.js';
import { DESK_AGENT, deskFlags, type OptimizeStack, startOptimizeStack } from '../helpers/optimize-stack.js';

let stack: OptimizeStack;
let zoo: ModelZoo;
before(async () => {
  stack = await startOptimizeStack({ workers: 6, perProcess: 3 });
  zoo = await startModelZoo();
});
after(async () => {
  await stack.close();
  await zoo.close();
});

/** One optimization of the desk agent whose optimizer is the zoo's `model`. */
const optimizeWith = (model: string, flags: OptimizeFlags = {}) =>
  stack.optimize(DESK_AGENT, deskFlags(stack.llm, { 'optimizer-url': zoo.url, 'optimizer-model': model, budget: '200', ...flags }));
const candidates = async (o: OptimizeOutcome) => (await stack.conn.store.listPromptCandidates(o.runId)).filter((c) => c.ordinal > 0);
const rolledOut = async (o: OptimizeOutcome, candidate: string) =>
  (await stack.conn.store.queryRollouts({ runId: o.runId, candidate, limit: 1 })).items.length > 0;

describe('agl optimize on the zoo', () => {
  it('an optimizer that renames {question} to {query}: every such candidate refused by the checks, named, never rolled out', async () => {
    const o = await optimizeWith('optimizer+rename');
    const proposed = await candidates(o);
    assert.ok(proposed.length > 0);
    for (const c of proposed) {
      assert.ok(c.prompts.desk!.includes('{query}'), c.prompts.desk);
      assert.equal(c.status, 'refused');
      assert.equal(c.reason, 'prompt desk dropped the placeholder {question} of its seed');
      assert.equal(await rolledOut(o, c.id), false);
    }
    assert.equal(o.prompts.desk!.best, DESK_PROMPT, 'the seed stays the best');
  });

  it('a prompt that grows every round is bounded by --max-prompt-chars: the longer ones refused with the cap named, never rolled out', async () => {
    const cap = DESK_PROMPT.length + 600;
    const o = await optimizeWith('optimizer+grow', { 'max-prompt-chars': String(cap) });
    const proposed = await candidates(o);
    const over = proposed.filter((c) => c.prompts.desk!.length > cap);
    assert.ok(over.length > 0, `no candidate grew past ${cap}: ${proposed.map((c) => c.prompts.desk!.length).join(', ')}`);
    for (const c of over) {
      assert.equal(c.status, 'refused');
      assert.equal(c.reason, `prompt desk is ${c.prompts.desk!.length} characters, over the cap of ${cap} (--max-prompt-chars)`);
      assert.equal(await rolledOut(o, c.id), false);
    }
    assert.ok(
      proposed.some((c) => c.prompts.desk!.length <= cap && c.status !== 'refused'),
      'the shorter ones are scored',
    );
    assert.ok(o.prompts.desk!.best.length <= cap);
  });

  it('commentary around the fenced prompt, or the current prompt quoted in a block before the new one, never reaches a candidate; the run improves', async () => {
    for (const model of ['optimizer+commentary', 'optimizer+blocks']) {
      const o = await optimizeWith(model);
      for (const c of await candidates(o))
        assert.doesNotMatch(c.prompts.desk!, /Looking at the failures|Here is the revised prompt|This keeps every placeholder|The instructions were|```/);
      assert.ok(o.scores.best.val! > o.scores.seed.val!, `${model}: ${o.scores.seed.val} -> ${o.scores.best.val}`);
    }
  });

  it('an optimizer that fixes one thing at a time: each candidate states at most one rule more than its parent, and the run still improves', async () => {
    const o = await optimizeWith('optimizer+onefix');
    const all = await stack.conn.store.listPromptCandidates(o.runId);
    const byId = new Map(all.map((c) => [c.id, c]));
    const rulesOf = (text: string) => statedRules(text).length;
    let grew = 0;
    for (const c of all.filter((x) => x.origin !== 'merge' && x.parents.length === 1)) {
      const added = rulesOf(c.prompts.desk!) - rulesOf(byId.get(c.parents[0]!)!.prompts.desk!);
      assert.ok(added <= 1, `candidate ${c.ordinal} added ${added} rules at once`);
      if (added === 1) grew++;
    }
    assert.ok(grew >= 2, `only ${grew} candidates added a rule`);
    assert.ok(o.scores.best.val! > o.scores.seed.val!, `${o.scores.seed.val} -> ${o.scores.best.val}`);
  });
});
