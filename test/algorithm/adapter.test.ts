/** The adapter: spans -> ordered transitions, rewards attached, agent filter (parent repair: test/protocol/span-reading.test.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spansToTrajectory } from '../../daemon/algorithm/adapter.js';
import { SPAN, AGL, AGL_V0_REWARD_PREFIX } from '../../protocol/spans.js';
import { llmCall, reward, span, tool } from './helpers.js';

test('one transition per LLM call, in time order, with token ids, logprobs and following rewards', () => {
  const spans = [
    reward('rw-final', 50, 1),
    llmCall('c2', 30, { prompt: [5], completion: [6, 7, 8] }),
    llmCall('c1', 10),
    tool('t1', 20, true),
    reward('rw-mid', 25, 0.2),
  ];
  const traj = spansToTrajectory(spans);
  assert.deepEqual(
    traj.steps.map((s) => s.spanId),
    ['c1', 'c2'],
  );
  assert.deepEqual(
    traj.steps.map((s) => s.index),
    [0, 1],
  );
  assert.deepEqual(traj.steps[1].promptIds, [5]);
  assert.deepEqual(traj.steps[1].completionIds, [6, 7, 8]);
  assert.deepEqual(traj.steps[1].logprobs, [-0.5, -0.5, -0.5]);
  assert.deepEqual(
    traj.steps[0].rewards.map((r) => r.value),
    [0.2],
  );
  assert.deepEqual(
    traj.steps[0].tools.map((t) => [t.toolName, t.succeeded]),
    [['calc', true]],
  );
  assert.deepEqual(
    traj.steps[1].rewards.map((r) => r.value),
    [1],
  );
  assert.deepEqual(
    traj.rewards.map((r) => r.value),
    [0.2, 1],
  );
});

test('calls without token ids are skipped and reported, not crashed on (agent-lightning #50, #442)', () => {
  const bad = llmCall('c0', 1);
  delete bad.attributes[AGL.completionTokenIds];
  const traj = spansToTrajectory([bad, llmCall('c1', 2)]);
  assert.deepEqual(
    traj.steps.map((s) => s.spanId),
    ['c1'],
  );
  assert.deepEqual(traj.skipped, [{ spanId: 'c0', reason: 'no-token-ids', agentName: null }]);
});

test('agent filter keeps only matching agents; names inherited from ancestors', () => {
  const spans = [
    span({ spanId: 'root', name: SPAN.agentRun, startTime: 0 }),
    span({ spanId: 'w', name: SPAN.operation, startTime: 1, parentSpanId: 'root', attributes: { [AGL.agentName]: 'writer' } }),
    llmCall('c1', 2, { parentSpanId: 'w' }),
    llmCall('c2', 3, { agent: 'checker', parentSpanId: 'root' }),
    llmCall('c3', 4, { agent: 'rewriter', parentSpanId: 'root' }),
    reward('r', 5, 1, 'root'),
  ];
  const all = spansToTrajectory(spans);
  assert.deepEqual(
    all.steps.map((s) => s.agentName),
    ['writer', 'checker', 'rewriter'],
  );
  const sel = spansToTrajectory(spans, { agentMatch: '^(writer|rewriter)$' });
  assert.deepEqual(
    sel.steps.map((s) => [s.spanId, s.index]),
    [
      ['c1', 0],
      ['c3', 1],
    ],
  );
  assert.deepEqual(sel.skipped, [{ spanId: 'c2', reason: 'agent-filtered', agentName: 'checker' }], 'a call left out names its role');
  assert.equal(sel.rewards.at(-1)?.value, 1);
});

test('agent-lightning v0 reward attributes are understood', () => {
  const v0 = span({
    spanId: 'rw',
    name: 'agentlightning.reward',
    startTime: 9,
    attributes: { [`${AGL_V0_REWARD_PREFIX}.0.name`]: 'acc', [`${AGL_V0_REWARD_PREFIX}.0.value`]: 0.75 },
  });
  const traj = spansToTrajectory([llmCall('c', 1), v0]);
  assert.deepEqual(
    traj.steps[0].rewards.map((r) => [r.name, r.value]),
    [['acc', 0.75]],
  );
});
