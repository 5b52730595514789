/**
 * The per-task Pareto front (protocol/pareto.ts) the optimizer's parent selection and the optimization view share: a
 * candidate is on it when no other is at least as good on every val task and better on one; equal candidates are both
 * on it; each task's winners are the candidates with its best score.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dominates, paretoFront, taskWinners } from '../../protocol/pareto.js';

describe('Pareto front over val tasks', () => {
  it('dominates: at least as good everywhere and better somewhere', () => {
    assert.equal(dominates([1, 1, 0.5], [0, 1, 0]), true);
    assert.equal(dominates([1, 1], [1, 1]), false, 'equal is no domination');
    assert.equal(dominates([1, 0], [0, 1]), false, 'each better on one task');
    assert.equal(dominates([0.9, 1], [1, 1]), false);
  });

  it('keeps every candidate no other dominates, in the order given, ties included', () => {
    const rows = [
      { id: 'seed', scores: [0, 1, 0] },
      { id: 'c1', scores: [1, 1, 0.5] },
      { id: 'c2', scores: [0, 0, 1] },
      { id: 'c3', scores: [1, 1, 0.5] },
      { id: 'c4', scores: [0, 0, 0.5] },
    ];
    assert.deepEqual(paretoFront(rows), ['c1', 'c2', 'c3']);
    assert.deepEqual(paretoFront([{ id: 'only', scores: [0, 0] }]), ['only']);
    assert.deepEqual(paretoFront([]), []);
  });

  it("names each task's winners", () => {
    const rows = [
      { id: 'a', scores: [1, 0, 0.5] },
      { id: 'b', scores: [1, 0.2, 0] },
    ];
    assert.deepEqual(taskWinners(rows), [['a', 'b'], ['b'], ['a']]);
    assert.deepEqual(taskWinners([]), []);
  });

  it('refuses candidates scored on different numbers of tasks, naming them', () => {
    const rows = [
      { id: 'a', scores: [1, 0] },
      { id: 'b', scores: [1] },
    ];
    assert.throws(() => paretoFront(rows), /candidate 'b' has 1 scores, 'a' has 2/);
    assert.throws(() => taskWinners(rows), RangeError);
  });
});
