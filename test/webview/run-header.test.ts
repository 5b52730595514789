/**
 * What the dashboard's run header says about a run (webview/dashboard/run-header.ts), from the record
 * `agl train` writes: why it stopped for each stop reason (never the step again: "step n / total" is beside it), for
 * records written before reasons were kept, a running run whose process seems gone, the roles a run trains by name,
 * and the config worth comparing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TrainingRun } from '../../protocol/store.js';
import { STALE_RUN_MS, configSummary, describeStop, matchedRoles } from '../../webview/dashboard/run-header.js';

const NOW = 1_800_000_000_000;
function run(patch: Partial<TrainingRun>): TrainingRun {
  return {
    id: 'run-1',
    agent: 'samples/calc/agent.ts#calcAgent',
    kind: 'train',
    status: 'succeeded',
    step: 20,
    totalSteps: 20,
    checkpointDir: null,
    config: {
      model: { name: 'builtin:0.8m', init: null },
      training: { learningRate: 1e-4, batchSize: 16, groupSize: 8, maxMinutes: 6, grpo: { variant: 'grpo', beta: 0.04 } },
    },
    summary: {},
    createdAt: NOW - 3_600_000,
    updatedAt: NOW - 1000,
    ...patch,
  };
}

test('the stop reason of each way a run ends', () => {
  assert.equal(describeStop(run({ summary: { stopReason: 'completed' } }), NOW), 'completed the plan');
  assert.equal(
    describeStop(run({ summary: { stopReason: 'max-steps', epochSteps: 167 } }), NOW),
    'stopped at maxSteps after 20 steps of the 167 steps its epochs would take',
  );
  const oneStep = run({ step: 1, totalSteps: 1, config: { training: { epochs: 20 } }, summary: { stopReason: 'max-steps', epochSteps: 1094 } });
  assert.equal(describeStop(oneStep, NOW), 'stopped at maxSteps after 1 step of the 1094 steps its 20 epochs would take', 'one step, never "1 steps"');

  const fewerSteps = 'training.maxSteps (--max-steps) 3 is more than the run makes: 1 epoch of 8 training tasks at 16 tasks per step is 1 step';
  assert.equal(
    describeStop(run({ step: 1, totalSteps: 1, summary: { stopReason: 'completed', fewerSteps } }), NOW),
    `completed the plan (${fewerSteps})`,
    'a run its epochs shortened says why',
  );
  // The header read "stopped at maxMinutes (6 min): step 34 of 167" beside "step 34 / 167".
  assert.equal(describeStop(run({ step: 85, totalSteps: 167, summary: { stopReason: 'max-minutes' } }), NOW), 'stopped at maxMinutes (6 min)');
  assert.equal(describeStop(run({ status: 'cancelled', step: 3, summary: { stopReason: 'cancelled' } }), NOW), '', 'the pill says cancelled');
  assert.equal(
    describeStop(run({ status: 'failed', step: 3, summary: { stopReason: 'failed', error: 'every rollout of the last 3 steps failed' } }), NOW),
    'every rollout of the last 3 steps failed',
  );
});

test('records without a stop reason (older runs) are read from status and steps', () => {
  assert.equal(describeStop(run({}), NOW), 'completed the plan');
  assert.equal(describeStop(run({ step: 85, totalSteps: 167 }), NOW), 'stopped at maxMinutes (6 min)');
  assert.equal(describeStop(run({ status: 'failed', step: 0, summary: { error: 'boom' } }), NOW), 'boom');
  assert.equal(describeStop(run({ status: 'failed', step: 0 }), NOW), 'no error recorded');
});

test('a running run says so, and says when its record stopped moving', () => {
  assert.equal(describeStop(run({ status: 'running', step: 4 }), NOW), '', 'the pill says running, "step 4 / 20" where');
  assert.equal(
    describeStop(run({ status: 'running', step: 4, updatedAt: NOW - STALE_RUN_MS - 60_000 * 5 }), NOW),
    'no progress for 35 min: if its agl train was stopped, continue with agl train --resume run-1',
  );
});

test('the roles a run trains, by name when its agentMatch lists names; any other expression quoted as one', () => {
  assert.deepEqual(matchedRoles('^(writer|rewriter)$'), ['writer', 'rewriter']);
  assert.deepEqual(matchedRoles('^(?:writer|rewriter)$'), ['writer', 'rewriter']);
  assert.deepEqual(matchedRoles('^writer$'), ['writer']);
  assert.equal(matchedRoles('writer'), null, 'unanchored: any role containing writer');
  assert.equal(matchedRoles('^(writer|re.*)$'), null);
  assert.equal(matchedRoles('^w.r$'), null);
});

test('the config worth comparing: model, lr in exponent notation, batch, group size, variant, KL coefficient', () => {
  assert.deepEqual(
    configSummary(run({})).map(([field, , value]) => [field, value]),
    [
      ['model', 'builtin:0.8m'],
      ['lr', '1e-4'],
      ['batch', '16'],
      ['group', '8'],
      ['variant', 'grpo'],
      ['beta', '0.04'],
    ],
  );
  assert.deepEqual(configSummary(run({ config: {} })), []);
});
