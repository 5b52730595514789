/**
 * `agl train` on an agent whose every rollout fails stops and says why (the agent's own error), instead of
 * "training" on nothing for the whole budget: at once when the validation before training fails entirely,
 * and after MAX_FAILED_STEPS steps in a row in which every rollout failed (validation off). The run record
 * keeps the reason and the error for the dashboard.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAX_FAILED_STEPS } from '../../daemon/algorithm/diagnosis.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import type { TrainingRunSummary } from '../../protocol/metrics.js';
import { runAgl, saveTinyPolicy, writeToyTasks } from './cli-helpers.js';

const AGENT = 'test/algorithm/fixtures/toy-agent.ts#brokenAgent';

test('agl train stops on an agent whose rollouts all fail, naming its error', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-broken-'));
  try {
    const model = await saveTinyPolicy(dir);
    const tasks = writeToyTasks(join(dir, 'tasks.jsonl'), 4);
    const config = (valEvery: number) => {
      const f = join(dir, `train-${valEvery}.yaml`);
      writeFileSync(
        f,
        `model:\n  maxTokens: 4\ntraining:\n  batchSize: 2\n  groupSize: 2\n  maxSteps: 10\n  epochs: 5\n  valEvery: ${valEvery}\n  valSize: 2\nruntime:\n  workers: 2\n  backend: cpu\n`,
      );
      return f;
    };
    const base = [AGENT, '--train', tasks, '--val', tasks, '--model', model, '--quiet'];

    // Validation before training: every rollout fails -> stop at once with the agent's error.
    const first = await runAgl(['train', ...base, '--config', config(5)], join(dir, 'data1'));
    assert.equal(first.code, 1, first.out);
    assert.match(first.out, /every validation rollout failed before training/);
    assert.match(first.out, /toy agent bug: undefined is not a function/);
    const store = new SqliteStore(join(dir, 'data1', 'store.sqlite'));
    try {
      const [run] = await store.listTrainingRuns();
      assert.equal(run.status, 'failed');
      const summary = run.summary as TrainingRunSummary;
      assert.equal(summary.stopReason, 'failed');
      assert.match(summary.error ?? '', /toy agent bug: undefined is not a function/);
    } finally {
      await store.close();
    }

    // Validation passes, then every training rollout fails: stop after MAX_FAILED_STEPS such steps.
    const marked = writeToyTasks(join(dir, 'marked.jsonl'), 4, 'm', { breaks: true });
    const midRun = await runAgl(
      [
        'train',
        'test/algorithm/fixtures/toy-agent.ts#breaksOnMarkedTasks',
        '--train',
        marked,
        '--val',
        tasks,
        '--model',
        model,
        '--quiet',
        '--config',
        config(0),
      ],
      join(dir, 'data2'),
    );
    assert.equal(midRun.code, 1, midRun.out);
    assert.match(midRun.out, new RegExp(`every rollout of the last ${MAX_FAILED_STEPS} steps failed`));
    assert.match(midRun.out, /the search service is down/);
    assert.match(midRun.out, /--resume/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
