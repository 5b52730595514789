/**
 * bench:store's zero-overhead reference (bench/store-sim.ts): what the workload allows any store. The
 * README's claim that minimal/medium/heavy cannot reliably reach 90% of the limit rests on it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { drawRolloutSleep, patternBound, patternOdds } from '../../bench/store-sim.js';

test('a batch that fills every runner with equal rollouts reaches the limit; uneven ones wait for the slowest', () => {
  const sc = { pattern: 'batch' as const, batch: 4, runners: 4 };
  assert.equal(patternBound(sc, 8, [1, 1, 1, 1, 1, 1, 1, 1], 4), 1);
  // Second batch: one rollout of 3 s holds the barrier while three runners idle: 8 rollouts in 4 s = 2/s of 4/s.
  assert.equal(patternBound(sc, 8, [1, 1, 1, 1, 1, 1, 1, 3], 4), 0.5);
});

test('the queue pattern idles runners once fewer than the threshold are in flight', () => {
  // Per 4 rollouts one lasts 4 s: with refills only once nothing is in flight, each group takes 4 s.
  const durations = Array.from({ length: 16 }, (_, i) => (i % 4 === 3 ? 4 : 1));
  const starved = { pattern: 'queue' as const, batch: 4, threshold: 1, runners: 4 };
  assert.equal(patternBound(starved, 16, durations, 4), 0.25);
  // With plenty queued, the short rollouts fill the runners while the long ones run.
  assert.ok(patternBound({ ...starved, batch: 16, threshold: 16 }, 16, durations, 4) > 0.4);
});

test('the agent draws its sleeps with the mean the limit assumes', () => {
  const sc = { maxRounds: 6, sleep: 0.5 };
  let x = 1;
  const random = () => (x = (x * 16807) % 2147483647) / 2147483647;
  const n = 20000;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += drawRolloutSleep(sc, random);
  assert.ok(Math.abs(sum / n - ((0.5 * 7) / 2 + 0.25)) < 0.03, `mean ${sum / n}`);
});

test('heavy cannot reliably reach 90% of its limit with a zero-cost store; a full queue can', () => {
  const heavy = { pattern: 'queue' as const, batch: 1024, threshold: 256, runners: 512, maxRounds: 20, sleep: 1 };
  const limit = 512 / ((1 * 21) / 2 + 0.5);
  const odds = patternOdds(heavy, 10000, limit, 0.9, 20);
  assert.ok(odds.mean < 0.9 && odds.shareAtTarget < 0.25, JSON.stringify(odds));
  // The same runners and sleeps kept busy (refill before the queue runs dry) reach 90%.
  assert.equal(patternOdds({ ...heavy, threshold: 4096 }, 10000, limit, 0.9, 5).shareAtTarget, 1);
});
