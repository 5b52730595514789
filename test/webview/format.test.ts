/**
 * The dashboard's numbers (webview/dashboard/format.ts): learning-rate axes in exponent notation (the issue
 * showed "0.001, 0, 0, 0"), ticks with just the decimals they need, 3 significant digits for values,
 * TensorBoard's debiased EMA, and what counts as a constant series.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fmtElapsed, fmtExponent, fmtMetric, isConstant, smoothEma, tickLabels } from '../../webview/dashboard/format.js';

test('axis ticks stay readable at every scale', () => {
  assert.deepEqual(tickLabels([0, 0.00025, 0.0005, 0.00075, 0.001]), ['0', '2.5e-4', '5e-4', '7.5e-4', '1e-3']);
  assert.deepEqual(tickLabels([0.00008, 0.0001, 0.00012]), ['8e-5', '1e-4', '1.2e-4']);
  assert.deepEqual(tickLabels([0, 0.2, 0.4, 0.6000000000000001]), ['0.0', '0.2', '0.4', '0.6']);
  assert.deepEqual(tickLabels([0, 0.25, 0.5]), ['0.00', '0.25', '0.50']);
  assert.deepEqual(tickLabels([10, 20, 30]), ['10', '20', '30']);
  assert.deepEqual(tickLabels([-0.1, 0, 0.1]), ['-0.1', '0.0', '0.1']);
  assert.deepEqual(tickLabels([0, 20000, 40000]), ['0', '20k', '40k']);
});

test('axis ticks from a thousand up are compact units, as short as the smallest magnitude allows', () => {
  // Training throughput of a 6-minute calc run: 1,000 to 1,800 tokens/s ("L800" and "L000" when clipped).
  assert.deepEqual(tickLabels([1000, 1200, 1400, 1600, 1800]), ['1k', '1.2k', '1.4k', '1.6k', '1.8k']);
  assert.deepEqual(tickLabels([1000, 1500, 2000]), ['1k', '1.5k', '2k']);
  assert.deepEqual(tickLabels([-2000, 0, 2000]), ['-2k', '0', '2k']);
  assert.deepEqual(tickLabels([0, 2_500_000, 5_000_000]), ['0', '2.5M', '5M']);
  assert.deepEqual(tickLabels([1e9, 2e9]), ['1G', '2G']);
  assert.deepEqual(tickLabels([1020, 1040, 1060]), ['1.02k', '1.04k', '1.06k'], 'every tick still distinct');
  assert.deepEqual(tickLabels([900, 950, 999]), ['900', '950', '999']);
});

test('values get 3 significant digits, tiny ones exponents, big ones no decimals', () => {
  assert.equal(fmtMetric(0.71234), '0.712');
  assert.equal(fmtMetric(0.84), '0.840');
  assert.equal(fmtMetric(0.0001), '1e-4');
  assert.equal(fmtMetric(0.001), '1e-3');
  assert.equal(fmtMetric(0.031), '0.0310');
  assert.equal(fmtMetric(0.00025), '2.5e-4');
  assert.equal(fmtMetric(12.3456), '12.3');
  assert.equal(fmtMetric(1234.5), '1,235');
  assert.equal(fmtMetric(0), '0');
  assert.equal(fmtMetric(167), '167');
  assert.equal(fmtMetric(null), '—');
  assert.equal(fmtExponent(1e-3), '1e-3');
  assert.equal(fmtElapsed(360_000), '6 min 0 s');
  assert.equal(fmtElapsed(3_900_000), '1 h 05 min');
});

test('EMA smoothing is debiased, skips gaps, and 0 means raw', () => {
  assert.deepEqual(smoothEma([1, 2, 3], 0), [1, 2, 3]);
  const s = smoothEma([1, null, 1, 1], 0.9);
  assert.equal(s[1], null);
  for (const v of [s[0], s[2], s[3]]) assert.ok(Math.abs((v as number) - 1) < 1e-12, 'a constant series stays at its value from the first point');
  const [a, b] = smoothEma([0, 1], 0.5) as number[];
  assert.equal(a, 0);
  assert.ok(Math.abs(b - 0.5 / 0.75) < 1e-12); // (0.5*0 + 0.5*1) debiased by 1 - 0.5^2
});

test('a series is constant when it has two or more points, all equal', () => {
  assert.equal(isConstant([0, 0, 0]), true);
  assert.equal(isConstant([1e-3, 1e-3]), true);
  assert.equal(isConstant([0]), false);
  assert.equal(isConstant([0, 1e-9]), false);
});
