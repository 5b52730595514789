/** Credit assignment strategies and AIR rules against hand-computed values. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spansToTrajectory } from '../../daemon/algorithm/adapter.js';
import { assignCredit } from '../../daemon/algorithm/credit.js';
import { AGL } from '../../protocol/spans.js';
import { llmCall, reward, tool } from './helpers.js';

// Three calls; a tool fails after call 0, succeeds after call 1; intermediate reward 0.5 after call 1; final 2.
const traj = () =>
  spansToTrajectory([
    llmCall('c0', 10),
    tool('t0', 11, false),
    llmCall('c1', 20),
    tool('t1', 21, true),
    reward('mid', 22, 0.5),
    llmCall('c2', 30),
    reward('final', 31, 2),
  ]);
const credits = (cfg: Parameters<typeof assignCredit>[1]) => assignCredit(traj(), cfg).map((c) => c.credit);
const close = (a: number[], b: number[]) => a.forEach((x, i) => assert.ok(Math.abs(x - b[i]) < 1e-12, `${a} vs ${b}`));

test('identical: every call gets the final reward (the paper default)', () => {
  assert.deepEqual(credits({}), [2, 2, 2]);
});
test('discounted: gamma^(T-1-i) * R', () => {
  close(credits({ strategy: 'discounted', gamma: 0.5 }), [0.5, 1, 2]);
});
test('last: only the last call is credited', () => {
  assert.deepEqual(credits({ strategy: 'last' }), [0, 0, 2]);
});
test('combined: final reward plus weighted intermediate rewards that followed the call', () => {
  close(credits({ strategy: 'combined', intermediateWeight: 2 }), [2, 3, 2]);
});
test('AIR rules reward/penalise tool outcomes on the call that caused them, under any strategy', () => {
  const air = [
    { when: 'tool_failed' as const, reward: -0.25 },
    { when: 'tool_succeeded' as const, reward: 0.1, tool: '^calc$' },
    { when: 'tool_succeeded' as const, reward: 5, tool: '^search$' },
  ];
  close(credits({ air }), [1.75, 2.1, 2]);
  close(credits({ strategy: 'last', air }), [-0.25, 0.1, 2]);
});
test('the reward the agent returned is the final one even when a reward arrives after it; the others are intermediate', () => {
  const returned = reward('returned', 31, 2);
  returned.attributes[AGL.rewardFinal] = true;
  const t = spansToTrajectory([llmCall('c0', 10), llmCall('c1', 30), returned, reward('late', 40, 0.5)]);
  assert.deepEqual(
    assignCredit(t).map((c) => c.credit),
    [2, 2],
  );
  assert.deepEqual(
    assignCredit(t, { strategy: 'combined' }).map((c) => c.credit),
    [2, 2.5],
  );
});
test('no reward at all: credit 0 (a crashed agent earns nothing)', () => {
  const t = spansToTrajectory([llmCall('c0', 1), llmCall('c1', 2)]);
  assert.deepEqual(
    assignCredit(t).map((c) => c.credit),
    [0, 0],
  );
});
