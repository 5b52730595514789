/**
 * `agl train` on a run that cannot learn says so after its first steps, with the cause the evidence names and what to
 * try (protocol/training-health.ts), instead of ending "held-out reward 0.000 -> 0.000" without a word (every rollout
 * scored 0; greedy sampling; an agent that makes no LLM call through the gateway); it reads its task
 * files from the config's `data:` section when --train / --val are not given; and it records each role's share of
 * every step (role/<name>/...) and the tokens its update trained on (grpo/trained_tokens).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { METRICS, roleMetric, type TrainingRunSummary } from '../../protocol/metrics.js';
import { LEARNING_CHECK_STEPS } from '../../protocol/training-health.js';
import { runAgl, saveTinyPolicy, writeToyTasks } from './cli-helpers.js';

test('agl train says a run cannot learn after its first steps, from tasks named by the config', { timeout: 300_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-health-'));
  try {
    const model = await saveTinyPolicy(dir);
    // Every rollout of every task earns 0: no group has reward spread, no advantage moves a weight.
    mkdirSync(join(dir, 'agent', 'data'), { recursive: true });
    writeToyTasks(join(dir, 'agent', 'data', 'train.jsonl'), 4, 'p', { reward: 0 });
    writeToyTasks(join(dir, 'agent', 'data', 'val.jsonl'), 2, 'v', { reward: 0 });
    const config = join(dir, 'agent', 'train.yaml');
    writeFileSync(
      config,
      'data:\n  train: data/train.jsonl\n  val: data/val.jsonl\nmodel:\n  maxTokens: 4\n' +
        `training:\n  batchSize: 2\n  groupSize: 2\n  maxSteps: ${LEARNING_CHECK_STEPS + 1}\n  epochs: 5\n  valEvery: 0\n  valSize: 2\nruntime:\n  workers: 2\n  backend: cpu\n`,
    );
    const r = await runAgl(['train', 'test/algorithm/fixtures/toy-agent.ts#toyAgent', '--config', config, '--model', model, '--quiet'], join(dir, 'data'));
    assert.equal(r.code, 0, r.out);
    assert.match(
      r.out,
      new RegExp(`Training cannot learn: in the first ${LEARNING_CHECK_STEPS} steps every rollout scored 0: every GRPO group had zero variance`),
    );
    assert.match(r.out, /Likely cause: every rollout scored 0/);
    assert.match(r.out, /agl sft/);
    assert.match(
      r.out,
      /held-out reward 0\.000 -> 0\.000 of 2 tasks in [\d.]+ min, on tfjs · cpu · float32 · 1 rank\n/,
      'the result says what it is over and on',
    );
    assert.match(
      r.out,
      /agl train: the policy did not change in any step \(no update moved a weight\)[^\n]*\n(agl train: stopped at [^\n]*\n)?agl train: Training cannot learn/,
      'repeated with the result',
    );

    const store = new SqliteStore(join(dir, 'data', 'store.sqlite'));
    try {
      const [run] = await store.listTrainingRuns();
      const summary = run!.summary as TrainingRunSummary;
      assert.deepEqual(summary.data, { train: resolve(dir, 'agent', 'data', 'train.jsonl'), val: resolve(dir, 'agent', 'data', 'val.jsonl') });
      const points = await store.queryMetrics(run!.id);
      const at1 = new Map(points.filter((p) => p.step === 1).map((p) => [p.name, p.value]));
      assert.equal(at1.get(METRICS.trainedTokens), 0, 'nothing trained: every advantage was 0');
      assert.equal(at1.get(roleMetric('toyAgent', 'calls')), 4, 'the toyAgent role made the 4 calls of the step (2 tasks x 2 samples)');
      assert.equal(at1.get(roleMetric('toyAgent', 'token_share')), 0);
    } finally {
      await store.close();
    }

    // A run shorter than the check: judged on the steps it ran, at its end.
    const short = await runAgl(
      ['train', 'test/algorithm/fixtures/toy-agent.ts#toyAgent', '--config', config, '--model', model, '--quiet', '--max-steps', '2'],
      join(dir, 'data-short'),
    );
    assert.equal(short.code, 0, short.out);
    assert.match(short.out, /Training cannot learn: in the first 2 steps every rollout scored 0: every GRPO group had zero variance/);

    // Greedy sampling (model.temperature 0): every sample of a task is one answer; said so, not "warm up with agl sft".
    const greedy = join(dir, 'agent', 'greedy.yaml');
    writeFileSync(greedy, readFileSync(config, 'utf8').replace('model:\n', 'model:\n  temperature: 0\n'));
    writeToyTasks(join(dir, 'agent', 'data', 'train.jsonl'), 4, 'p');
    const g = await runAgl(
      ['train', 'test/algorithm/fixtures/toy-agent.ts#toyAgent', '--config', greedy, '--model', model, '--quiet'],
      join(dir, 'data-greedy'),
    );
    assert.equal(g.code, 0, g.out);
    assert.match(g.out, /Training cannot learn: in the first 3 steps every LLM call was sampled greedily/);
    assert.match(g.out, /Likely cause: greedy sampling: the run's model\.temperature is 0/);
    assert.match(g.out, /What to try:\nagl train: {3}- sample while training: model\.temperature: 1/);
    assert.doesNotMatch(g.out, /agl sft/);

    // No LLM call through the gateway: said so, with the agent named as it was typed.
    const noCall = await runAgl(
      ['train', 'test/algorithm/fixtures/toy-agent.ts#noCallAgent', '--config', config, '--model', model, '--quiet'],
      join(dir, 'data-nocall'),
    );
    assert.equal(noCall.code, 0, noCall.out);
    assert.match(noCall.out, /held-out reward 1\.000 -> 1\.000 of 2 tasks/);
    assert.match(noCall.out, /Training cannot learn: no LLM call was recorded through the gateway in the first 3 steps \(12 rollouts ran\)/);
    assert.match(noCall.out, /agl rollout test\/algorithm\/fixtures\/toy-agent\.ts#noCallAgent --task/);

    // Neither the flags nor the config name the tasks: a clear error.
    const bare = join(dir, 'bare.yaml');
    writeFileSync(bare, 'model:\n  maxTokens: 4\n');
    const missing = await runAgl(['train', 'test/algorithm/fixtures/toy-agent.ts#toyAgent', '--config', bare, '--model', model], join(dir, 'data2'));
    assert.equal(missing.code, 2);
    assert.match(missing.out, /--train and --val are required \(or a --config whose data: names train and val\)/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
