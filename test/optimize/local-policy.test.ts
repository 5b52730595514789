/**
 * `agl optimize --model`: the agent's model may be a local policy instead of an upstream server, served by the run's
 * own gateway as `agl serve --model` serves it (here a tiny built-in GPT saved to a folder; it answers nonsense, so
 * only the plumbing is checked: every rollout ran through the local policy, none failed, the calls are recorded).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createPolicy } from '../../daemon/model/policy.js';
import { runOptimization } from '../../daemon/optimize/optimize-run.js';
import { planFromFlags } from '../../daemon/optimize/run-plan.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { isLlmCallSpan } from '../../protocol/span-reading.js';
import { GENAI } from '../../protocol/spans.js';
import { OPTIMIZER_MODEL, startScriptedLlm } from '../../samples/apo/scripted-llm.js';
import { makeTasks } from '../../samples/apo/world.js';
import { DESK_AGENT } from '../helpers/optimize-stack.js';

test("a local policy (--model) serves the agent through the run's own gateway and runner", { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-apo-local-'));
  const llm = await startScriptedLlm();
  const store = new SqliteStore(join(dir, 'store.sqlite'));
  try {
    const policy = await createPolicy({ size: '0.8m', contextLength: 320, seed: 1, name: 'tiny' });
    await policy.save(join(dir, 'tiny'));
    policy.dispose();
    const write = (name: string, n: number) => {
      writeFileSync(
        join(dir, name),
        makeTasks(n, n, name)
          .map((t) => JSON.stringify(t))
          .join('\n'),
      );
      return join(dir, name);
    };
    const plan = planFromFlags(DESK_AGENT, {
      prompt: ['desk'],
      train: write('train', 3),
      val: write('val', 2),
      budget: '9',
      minibatch: '1',
      model: join(dir, 'tiny'),
      'optimizer-url': llm.url,
      'optimizer-model': OPTIMIZER_MODEL,
      workers: '2',
    });
    const o = await runOptimization(
      plan,
      { store, dataDir: dir, daemon: null },
      { signal: new AbortController().signal, report: { log: () => {} }, backoffMs: 5 },
    );
    assert.ok(o && o.rollouts >= 3 && o.rollouts <= 9, JSON.stringify(o));
    const rollouts = (await store.queryRollouts({ runId: o.runId, limit: 50 })).items;
    assert.deepEqual([...new Set(rollouts.map((r) => r.status))], ['succeeded']);
    const spans = await store.querySpans({ rolloutId: rollouts[0]!.id, attemptId: 'latest' });
    const call = spans.find(isLlmCallSpan)!;
    assert.equal(call.attributes[GENAI.system], 'agl', 'served by the local policy');
    assert.equal(llm.counts.agent, 0, 'no agent call went to the scripted server');
  } finally {
    await store.close();
    await llm.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
