/**
 * One step numbering everywhere (protocol/metrics.ts FIRST_TRAINING_STEP): a real `agl train` of two steps prints
 * "step 1/2" and "step 2/2", and every record of it says the same numbers: the step's metrics, transitions and
 * rollouts in the store, the group view's steps, `agl export`'s lines, the checkpoint's training curve and the
 * report's validation table (validations at 0, before training, and at 2, after the second update).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readCheckpoint } from '../../daemon/algorithm/checkpoint.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { groupPage } from '../../daemon/store/views.js';
import { METRICS } from '../../protocol/metrics.js';
import { runAgl, saveTinyPolicy, writeToyTasks } from './cli-helpers.js';

test('a run numbers its steps 1..N in the CLI, the store, the group view, the export, the checkpoint and the report', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-steps-'));
  try {
    const model = await saveTinyPolicy(dir);
    const train = writeToyTasks(join(dir, 'train.jsonl'), 4, 'p');
    const val = writeToyTasks(join(dir, 'val.jsonl'), 2, 'v');
    const config = join(dir, 'train.yaml');
    writeFileSync(
      config,
      'model:\n  maxTokens: 4\ntraining:\n  batchSize: 2\n  groupSize: 2\n  maxSteps: 2\n  epochs: 2\n  valEvery: 0\nruntime:\n  workers: 2\n  backend: cpu\n',
    );
    const data = join(dir, 'data');
    const r = await runAgl(
      ['train', 'test/algorithm/fixtures/toy-agent.ts#toyAgent', '--train', train, '--val', val, '--config', config, '--model', model],
      data,
    );
    assert.equal(r.code, 0, r.out);
    assert.deepEqual(
      [...r.out.matchAll(/^step (\d+)\/2 reward/gm)].map((m) => Number(m[1])),
      [1, 2],
      r.out,
    );

    const store = new SqliteStore(join(data, 'store.sqlite'));
    let runId: string;
    try {
      const [run] = await store.listTrainingRuns();
      runId = run!.id;
      const points = await store.queryMetrics(runId);
      const stepsOf = (name: string) => points.filter((p) => p.name === name).map((p) => p.step);
      assert.deepEqual(stepsOf(METRICS.rewardMean), [1, 2], "each training step's metrics carry its number");
      assert.deepEqual(stepsOf(METRICS.valReward), [0, 2], 'validations: before training, and after the 2 updates');
      const transitions = await store.queryTransitions({ runId, limit: 1000 });
      assert.deepEqual([...new Set(transitions.map((t) => t.step))].sort(), [1, 2]);
      const rollouts = (await store.queryRollouts({ runId, limit: 100 })).items;
      const rolloutSteps = (mode: string) => [...new Set(rollouts.filter((x) => x.mode === mode).map((x) => x.metadata.step))].sort();
      assert.deepEqual(rolloutSteps('train'), [1, 2]);
      assert.deepEqual(rolloutSteps('val'), [0, 2]);
      const page = await groupPage(store, { runId });
      assert.deepEqual(page.steps, [1, 2], "the group view's step picker");
      assert.equal(page.step, 2, 'the group view opens on the newest step');
      assert.ok(page.groups.length > 0);
      const first = await groupPage(store, { runId, step: 1 });
      assert.deepEqual(first.groups.map((g) => g.groupId).sort(), [...new Set(transitions.filter((t) => t.step === 1).map((t) => t.groupId))].sort());
      const ckpt = readCheckpoint(run!.checkpointDir!)!;
      assert.deepEqual(
        ckpt.trainer.train.map((p) => p.step),
        [1, 2],
      );
      const report = readFileSync(join(run!.checkpointDir!, 'report', 'report.html'), 'utf8');
      assert.deepEqual(
        [...report.matchAll(/<tr><td>(\d+)<\/td><td>[\d.]+<\/td><td>2<\/td><\/tr>/g)].map((m) => Number(m[1])),
        [0, 2],
        'the report validates at steps 0 and 2',
      );
    } finally {
      await store.close();
    }

    const exported = await runAgl(['export', '--format', 'jsonl', '--run', runId], data);
    assert.equal(exported.code, 0, exported.out);
    const lines = exported.out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { step: number });
    assert.deepEqual([...new Set(lines.map((l) => l.step))].sort(), [1, 2], "agl export's steps");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
