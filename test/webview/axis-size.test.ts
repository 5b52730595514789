/**
 * A value axis is as wide as the labels it ends with: uPlot sizes an axis in passes as its ticks settle, and a later
 * pass may draw finer ticks with wider labels (0.45, 0.5 first; 0.425, 0.45, 0.475, 0.5 next), which the axis must fit.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type uPlot from 'uplot';
import { valueAxisSize } from '../../webview/dashboard/axis-size.js';

/** A plot whose canvas measures 6 px per character, with uPlot's own tick (10) and gap (5); `_size` as uPlot keeps it. */
function plot(): uPlot & { axes: (uPlot.Axis & { _size?: number })[] } {
  const axis: uPlot.Axis & { _size?: number } = { font: '11px sans-serif', ticks: { size: 10 }, gap: 5 };
  const ctx = { font: '', measureText: (t: string) => ({ width: 6 * t.length }) };
  return { axes: [{}, axis], ctx } as unknown as uPlot & { axes: (uPlot.Axis & { _size?: number })[] };
}

/** uPlot's passes: each asks for the size of the labels it drew, and keeps the answer as the axis's `_size`. */
function passes(u: ReturnType<typeof plot>, labels: string[][]): number {
  labels.forEach((values, i) => (u.axes[1]!._size = valueAxisSize(u, values, 1, i + 1)));
  return u.axes[1]!._size!;
}

test('the axis fits the finer ticks of a later pass (0.425 after 0.45)', () => {
  const size = passes(plot(), [
    ['0.45', '0.5'],
    ['0.425', '0.45', '0.475', '0.5'],
  ]);
  assert.equal(size, 10 + 5 + 6 * 5 + 4, 'tick, gap, the widest label (5 characters) and the margin');
});

test('a later pass with narrower labels keeps the axis as wide: sizes do not swing back and forth', () => {
  const size = passes(plot(), [
    ['1,800', '1,900'],
    ['2k', '3k'],
  ]);
  assert.equal(size, 10 + 5 + 6 * 5 + 4);
});

test('the first pass is sized on its own labels, whatever the axis kept from an earlier layout', () => {
  const u = plot();
  u.axes[1]!._size = 200;
  assert.equal(valueAxisSize(u, ['0.5'], 1, 1), 10 + 5 + 6 * 3 + 4);
});
