/**
 * The `--roles` bench's curves (bench/roles-chart.ts): the smoothing and seed mean it draws, and the PNG it writes from a
 * roles.json file: one colour per row that has curves, rows without curves left out, the legend giving each row's
 * held-out scores, and a clear error when nothing can be drawn.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROLES_CHART_SIZE, ROLE_ROW_STYLE, meanCurve, movingAverage, rolesCurvesOption, writeRolesChart } from '../../bench/roles-chart.js';
import type { RolesRow, RolesRun } from '../../bench/roles.js';
import { countPixels, readPng } from '../helpers/png-reader.js';

const near = (hex: string, tolerance = 40) => {
  const [R, G, B] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  return (r: number, g: number, b: number) => Math.abs(r - R) + Math.abs(g - G) + Math.abs(b - B) <= tolerance;
};

function run(seed: number, curve?: number[]): RolesRun {
  return {
    seed,
    before: 0,
    after: 0.9,
    steps: curve?.length ?? 0,
    minutes: 20,
    peakRssMiB: 2000,
    calls: {},
    test: { score: 0.8 },
    ...(curve ? { curve } : {}),
  };
}
const rising = (n: number, top: number) => Array.from({ length: n }, (_, i) => top * (1 - Math.exp(-i / 30)));

test('roles chart: trailing moving average and the seed mean up to the shortest seed', () => {
  assert.deepEqual(movingAverage([1, 2, 3, 4, 5], 2), [1, 1.5, 2.5, 3.5, 4.5]);
  assert.deepEqual(movingAverage([0, 1, 0, 1], 10), [0, 0.5, 1 / 3, 0.5]);
  assert.deepEqual(
    meanCurve([
      [1, 2, 3],
      [3, 4],
    ]),
    [2, 3],
  );
  assert.deepEqual(meanCurve([]), []);
});

test('roles chart: one colour per row with curves, rows without curves left out, legend with held-out scores; no curves is an error', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-roles-chart-'));
  try {
    const rows: RolesRow[] = [
      { policies: 'shared', runs: [run(1, rising(120, 0.8)), run(2, rising(118, 0.75))], meanAfter: 0.819, meanGain: 0.819, meanTestAfter: 0.833 },
      { policies: 'own', runs: [run(1, rising(140, 0.9)), run(2, rising(141, 0.85))], meanAfter: 0.863, meanGain: 0.863, meanTestAfter: 0.81 },
      // measured before runs kept their curve: not drawn
      { policies: 'own-task-role', runs: [run(1), run(2)], meanAfter: 0.887, meanGain: 0.887, meanTestAfter: 0.758 },
    ];
    const file = join(dir, 'roles.json');
    writeFileSync(file, JSON.stringify({ samples: { rag: { rows } } }));
    const option = rolesCurvesOption('rag', rows) as { legend: { data: string[] }; series: { name: string; data: number[][] }[] };
    assert.deepEqual(option.legend.data, ['shared (one policy): val 0.819, test 0.833', 'own (a policy per role): val 0.863, test 0.810']);
    // each drawn row: a thin line per seed and its mean, which stops at the shorter seed
    assert.equal(option.series.length, 6);
    assert.equal(option.series.find((s) => s.name === option.legend.data[0])!.data.length, 118);

    const png = join(dir, 'out', 'roles-curves.png');
    writeRolesChart(file, 'rag', png);
    const img = readPng(readFileSync(png));
    assert.deepEqual([img.width, img.height], [ROLES_CHART_SIZE.width * ROLES_CHART_SIZE.scale, ROLES_CHART_SIZE.height * ROLES_CHART_SIZE.scale]);
    const all = { x0: 0, y0: 0, x1: img.width, y1: img.height };
    assert.ok(countPixels(img, all, near(ROLE_ROW_STYLE.shared.color)) > 500, 'the shared row is drawn in its colour');
    assert.ok(countPixels(img, all, near(ROLE_ROW_STYLE.own.color)) > 500, 'the own row is drawn in its colour');
    assert.equal(countPixels(img, all, near(ROLE_ROW_STYLE['own-task-role'].color, 20)), 0, 'a row without curves is not drawn');

    assert.throws(() => writeRolesChart(file, 'sql', png), /roles\.json: no row of 'sql' has a training curve for every run/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
