/**
 * GEPA on the order desk (samples/apo), end to end: real store, gateway, runner and `openai` client, the scripted
 * server as both models. The bar (#40 item 8): from a seed scoring <= 0.3, a best scoring >= 0.9 on the
 * held-out test set within 300 rollouts in at least 9 of 10 seeds, the budget never exceeded; a blind optimizer (one
 * that ignores the feedback) gains <= 0.1, so the gain comes from feedback, not from selection noise; every candidate
 * that drops a placeholder is refused and never rolled out; the same seed twice makes the same candidates.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { OptimizeOutcome } from '../../daemon/optimize/optimize-run.js';
import { BLIND_OPTIMIZER_MODEL } from '../../samples/apo/scripted-llm.js';
import { candidateShapes, DESK_AGENT, deskFlags, type OptimizeStack, startOptimizeStack } from '../helpers/optimize-stack.js';

let stack: OptimizeStack;
before(async () => {
  stack = await startOptimizeStack({ workers: 10, perProcess: 5 });
});
after(() => stack.close());

/** Runs `n` optimizations, `parallel` at a time (their rollouts share the runner pool). */
async function runs(n: number, parallel: number, one: (i: number) => Promise<OptimizeOutcome>): Promise<OptimizeOutcome[]> {
  const out: OptimizeOutcome[] = [];
  for (let i = 0; i < n; i += parallel) out.push(...(await Promise.all(Array.from({ length: Math.min(parallel, n - i) }, (_, k) => one(i + k)))));
  return out;
}

const candidates = (o: OptimizeOutcome) => stack.conn.store.listPromptCandidates(o.runId);
let first: OptimizeOutcome[] = [];

test('GEPA: seed <= 0.3 -> best >= 0.9 on held-out test within 300 rollouts in at least 9 of 10 seeds, the budget kept', async () => {
  first = await runs(10, 5, (seed) => stack.optimize(DESK_AGENT, deskFlags(stack.llm, { seed: String(seed) })));
  for (const o of first) {
    assert.ok(o.scores.seed.test! <= 0.3, `seed's test score ${o.scores.seed.test}`);
    const stored = await stack.conn.store.queryRollouts({ runId: o.runId, withTotal: true, limit: 1 });
    assert.equal(stored.total, o.rollouts, 'the run counts every rollout it stored');
    assert.ok(o.rollouts <= 300, `run ${o.runId} spent ${o.rollouts} of 300 rollouts`);
  }
  const tests = first.map((o) => o.scores.best.test!);
  assert.ok(tests.filter((t) => t >= 0.9).length >= 9, `best test scores: ${tests.join(', ')}`);
});

test('every candidate that drops a placeholder of the seed is refused, with why, and never rolled out', async () => {
  let dropped = 0;
  for (const o of first) {
    for (const c of await candidates(o)) {
      const lost = !c.prompts.desk!.includes('{record}') || !c.prompts.desk!.includes('{question}');
      if (lost) {
        dropped++;
        assert.equal(c.status, 'refused', `candidate ${c.id} lost a placeholder and was ${c.status}`);
        assert.match(c.reason!, /dropped the placeholder/);
      }
      if (c.status === 'refused') {
        assert.equal(c.resourcesId, null);
        assert.equal((await stack.conn.store.queryRollouts({ runId: o.runId, candidate: c.id, limit: 1 })).items.length, 0);
      }
    }
  }
  assert.ok(dropped > 0, 'the scripted optimizer dropped no placeholder in 10 runs: the check was not exercised');
});

test('the same seed twice makes the same candidates with the same scores', async () => {
  const again = await stack.optimize(DESK_AGENT, deskFlags(stack.llm, { seed: '3' }));
  assert.deepEqual(candidateShapes(await candidates(again)), candidateShapes(await candidates(first[3]!)));
  assert.deepEqual(again.scores, first[3]!.scores);
});

test('a blind optimizer (it never reads the feedback) gains <= 0.1 on held-out test', async () => {
  const blind = await runs(3, 3, (seed) => stack.optimize(DESK_AGENT, deskFlags(stack.llm, { seed: String(seed), 'optimizer-model': BLIND_OPTIMIZER_MODEL })));
  for (const o of blind) {
    const accepted = (await candidates(o)).filter((c) => c.status === 'accepted' || c.status === 'rejected').length;
    assert.ok(accepted > 1, 'the blind optimizer proposed candidates that were scored');
    assert.ok(o.scores.best.test! - o.scores.seed.test! <= 0.1, `blind run ${o.runId}: ${o.scores.seed.test} -> ${o.scores.best.test}`);
  }
});
