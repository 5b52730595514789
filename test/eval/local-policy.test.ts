/**
 * `agl eval --model`: a sample agent (calc) evaluated on its shipped dataset through the real runner and the run's own
 * gateway serving a local policy (a tiny built-in GPT saved to a folder: it answers nonsense, so the plumbing is what
 * is checked): every rollout ran through the local policy and was graded by the row's grader (number), its verdict the
 * final reward with its reason as feedback, --repeat 2 giving each task two samples, the run recorded with its summary.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { planEval } from '../../daemon/eval/eval-plan.js';
import { runEval } from '../../daemon/eval/eval-run.js';
import { createPolicy } from '../../daemon/model/policy.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { EVAL_REWARD_SOURCE, type EvalSummary } from '../../protocol/eval.js';
import { isLlmCallSpan, isRewardSpan, rolloutFeedback } from '../../protocol/span-reading.js';
import { AGL, GENAI } from '../../protocol/spans.js';
import { readRolloutMetadata } from '../../protocol/store.js';

test("a sample agent evaluated with a local policy (--model) through the run's own gateway and runner", { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-eval-local-'));
  const store = new SqliteStore(join(dir, 'store.sqlite'));
  try {
    const policy = await createPolicy({ size: '0.8m', contextLength: 320, seed: 1, name: 'tiny' });
    await policy.save(join(dir, 'tiny'));
    policy.dispose();
    const data = join(dir, 'calc.eval.jsonl');
    writeFileSync(data, readFileSync('samples/calc/data/calc.eval.jsonl', 'utf8').split('\n').slice(0, 3).join('\n'));
    const plan = await planEval('samples/calc/agent.ts#calcAgent', { data, model: join(dir, 'tiny'), repeat: '2', workers: '2' }, store);
    const { runId, summary } = await runEval(plan, { store, dataDir: dir, daemon: null }, { signal: new AbortController().signal, report: { log: () => {} } });
    assert.deepEqual(
      summary.tasks.map((t) => [t.id, t.scores.length, t.grader]),
      [
        ['val-0', 2, 'number'],
        ['val-1', 2, 'number'],
        ['val-2', 2, 'number'],
      ],
    );
    const rollouts = (await store.queryRollouts({ runId, limit: 50 })).items;
    assert.equal(rollouts.length, 6);
    assert.deepEqual([...new Set(rollouts.map((r) => r.status))], ['succeeded']);
    for (const r of rollouts) {
      const spans = await store.querySpans({ rolloutId: r.id, attemptId: 'latest' });
      assert.equal(spans.find(isLlmCallSpan)?.attributes[GENAI.system], 'agl', 'served by the local policy');
      const verdict = spans.filter(isRewardSpan).find((s) => s.attributes[AGL.rewardSource] === EVAL_REWARD_SOURCE);
      assert.ok(verdict, `rollout ${r.id} graded`);
      assert.equal(verdict.attributes[AGL.rewardName], 'number');
      const task = summary.tasks.find((t) => t.id === readRolloutMetadata(r.metadata).taskId)!;
      assert.ok(task.scores.includes(Number(verdict.attributes[AGL.rewardValue])));
      assert.match(rolloutFeedback(spans) ?? '', /expected \d+|within/);
    }
    const run = await store.getTrainingRun(runId);
    assert.equal(run?.kind, 'eval');
    assert.equal((run?.summary as unknown as EvalSummary).tasks.length, 3);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
