/**
 * Resume after kill: `agl train` is killed with SIGKILL mid-run, then `agl train --resume <dir>` continues
 * from the last checkpoint and finishes the planned steps; no step is trained twice or skipped. The run
 * record then says why the run stopped and where its best checkpoint is.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import type { TrainingRunSummary } from '../../protocol/metrics.js';

import { saveTinyPolicy, startAgl, writeToyTasks } from './cli-helpers.js';

const AGENT = 'test/algorithm/fixtures/toy-agent.ts#toyAgent';

test('a killed training resumes from its last checkpoint and completes the plan', { timeout: 600_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-resume-test-'));
  try {
    const model = await saveTinyPolicy(dir);
    const tasks = writeToyTasks(join(dir, 'tasks.jsonl'), 6);
    writeFileSync(
      join(dir, 'train.yaml'),
      'model:\n  maxTokens: 6\ntraining:\n  batchSize: 2\n  groupSize: 4\n  maxSteps: 6\n  epochs: 3\n  valEvery: 0\n  learningRate: 0.01\nruntime:\n  workers: 2\n  backend: cpu\n',
    );
    const ckpt = join(dir, 'ckpt');
    const args = [AGENT, '--train', tasks, '--val', tasks, '--model', model, '--config', join(dir, 'train.yaml'), '--checkpoint-dir', ckpt, '--quiet'];

    const first = startAgl(['train', ...args], join(dir, 'data'));
    const stepOf = () => (existsSync(join(ckpt, 'state.json')) ? (JSON.parse(readFileSync(join(ckpt, 'state.json'), 'utf8')).trainer.step as number) : 0);
    while (stepOf() < 2) {
      const code = await Promise.race([first.exited, new Promise((r) => setTimeout(() => r('waiting'), 200))]);
      assert.equal(code, 'waiting', `agl train ended before it could be killed:\n${first.output()}`);
    }
    first.child.kill('SIGKILL');
    await first.exited;
    const killedAt = stepOf();
    assert.ok(killedAt >= 2 && killedAt < 6, `killed mid-run (step ${killedAt})`);

    const second = startAgl(['train', ...args.filter((a) => a !== '--checkpoint-dir' && a !== ckpt), '--resume', ckpt], join(dir, 'data'));
    assert.equal(await second.exited, 0, second.output());
    assert.match(second.output(), new RegExp(`resumed at step ${killedAt}`));
    assert.equal(stepOf(), 6);

    const store = new SqliteStore(join(dir, 'data', 'store.sqlite'));
    try {
      const [run] = await store.listTrainingRuns();
      assert.equal(run.status, 'succeeded');
      assert.equal(run.step, 6);
      // The run record says why it stopped (maxSteps 6 cut the 9 steps of 3 epochs) and where its best weights are.
      const summary = run.summary as TrainingRunSummary;
      assert.equal(summary.stopReason, 'max-steps');
      assert.equal(summary.epochSteps, 9);
      assert.ok(summary.elapsedMs! > 0);
      const val = (await store.queryMetrics(run.id)).filter((m) => m.name === 'val/reward');
      const bestVal = val.reduce((a, b) => (b.value > a.value ? b : a));
      assert.equal(summary.best?.reward, bestVal.value);
      assert.equal(summary.best?.step, bestVal.step);
      assert.ok(existsSync(join(summary.best!.path!, 'config.json')), 'the best policy is kept');
      assert.deepEqual(JSON.parse(readFileSync(join(summary.best!.path!, 'best.json'), 'utf8')).step, bestVal.step);
      const steps = (await store.queryMetrics(run.id)).filter((m) => m.name === 'reward/mean').map((m) => m.step);
      // A step interrupted after its metrics but before its checkpoint is redone: each step is present, once or twice, none missing.
      assert.deepEqual(
        [...new Set(steps)].sort((a, b) => a - b),
        [1, 2, 3, 4, 5, 6],
      );
    } finally {
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
