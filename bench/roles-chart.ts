/**
 * The `--roles` bench's curves: training reward per step of each row (shared, own, own-task-role) of one sample, drawn
 * from `bench/results/roles.json` the way the training report draws its curve (ECharts server-side SVG, resvg PNG).
 * Each row is one thick line, the mean of its seeds, and one thin line per seed; every line is a trailing moving
 * average, since a single step's reward (8 tasks x 8 rollouts) swings by +-0.2. The legend gives each row's held-out
 * scores, so the image reads without the table.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type * as echarts from 'echarts/core';
import { REWARD_CURVE_SIZE, optionToSvg, stepRewardAxes, svgToPng, type ChartSize } from '../daemon/algorithm/report-chart.js';
import type { RoleRowName, RolesRow } from './roles.js';

/** Steps averaged into each point of a curve. */
export const ROLES_SMOOTHING = 10;

export const ROLE_ROW_STYLE: Record<RoleRowName, { label: string; color: string }> = {
  shared: { label: 'shared (one policy)', color: '#3b75c4' },
  own: { label: 'own (a policy per role)', color: '#d9541e' },
  'own-task-role': { label: 'own, groups per task and role', color: '#2a9d5c' },
};

/** Trailing moving average: point i is the mean of xs[i - window + 1 .. i] (fewer at the start). */
export function movingAverage(xs: number[], window: number): number[] {
  const out: number[] = [];
  let sum = 0;
  for (let i = 0; i < xs.length; i++) {
    sum += xs[i]!;
    if (i >= window) sum -= xs[i - window]!;
    out.push(sum / Math.min(i + 1, window));
  }
  return out;
}

/** A row's mean curve over its seeds, up to the shortest seed's steps (so every point averages every seed). */
export function meanCurve(curves: number[][]): number[] {
  if (!curves.length) return [];
  const n = Math.min(...curves.map((c) => c.length));
  return Array.from({ length: n }, (_, i) => curves.reduce((a, c) => a + c[i]!, 0) / curves.length);
}

const fmt = (x: number) => x.toFixed(3);

/** The legend label of a row: its name and its held-out means. */
export function rowLegend(row: RolesRow): string {
  const test = row.runs.every((r) => r.test) ? `, test ${fmt(row.meanTestAfter)}` : '';
  return `${ROLE_ROW_STYLE[row.policies].label}: val ${fmt(row.meanAfter)}${test}`;
}

/** The chart's ECharts option; rows whose runs recorded no curve are left out. */
export function rolesCurvesOption(sample: string, rows: RolesRow[]): echarts.EChartsCoreOption {
  const drawn = rows.filter((r) => r.runs.length && r.runs.every((x) => x.curve?.length));
  const series: object[] = [];
  let maxStep = 1;
  for (const row of drawn) {
    const { color } = ROLE_ROW_STYLE[row.policies];
    const name = rowLegend(row);
    for (const run of row.runs) {
      const pts = movingAverage(run.curve!, ROLES_SMOOTHING).map((v, i) => [i + 1, v]);
      maxStep = Math.max(maxStep, pts.length);
      // A seed's line: same colour, thin and faint, outside the legend (its name is not in legend.data).
      series.push({ name: `${name} (seed ${run.seed})`, type: 'line', data: pts, color, symbol: 'none', lineStyle: { width: 1, opacity: 0.35 } });
    }
    const mean = movingAverage(meanCurve(row.runs.map((r) => r.curve!)), ROLES_SMOOTHING).map((v, i) => [i + 1, v]);
    series.push({ name, type: 'line', data: mean, color, symbol: 'none', lineStyle: { width: 3 } });
  }
  return {
    animation: false,
    backgroundColor: '#ffffff',
    textStyle: { fontFamily: 'DejaVu Sans' },
    legend: {
      top: 6,
      orient: 'vertical',
      left: 80,
      itemWidth: 22,
      textStyle: { fontSize: 12, color: '#333' },
      data: drawn.map(rowLegend),
    },
    grid: { left: 70, right: 28, top: 24 + 20 * drawn.length, bottom: 58 },
    ...stepRewardAxes(
      { name: `training step (${sample}, thin lines: each seed)`, max: maxStep },
      { name: `training reward (${ROLES_SMOOTHING}-step mean)`, min: 0, max: 1 },
    ),
    series,
  };
}

export const ROLES_CHART_SIZE: ChartSize = { ...REWARD_CURVE_SIZE, height: 400 };

/** Draws a sample's rows from a roles.json file into `png`; throws naming what is missing. */
export function writeRolesChart(resultsFile: string, sample: string, png: string): void {
  const results = JSON.parse(readFileSync(resultsFile, 'utf8')) as { samples?: Record<string, { rows?: RolesRow[] }> };
  const rows = results.samples?.[sample]?.rows ?? [];
  if (!rows.some((r) => r.runs.length && r.runs.every((x) => x.curve?.length))) {
    throw new Error(`${resultsFile}: no row of '${sample}' has a training curve for every run (run the --roles bench first)`);
  }
  mkdirSync(dirname(png), { recursive: true });
  writeFileSync(png, svgToPng(optionToSvg(rolesCurvesOption(sample, rows), ROLES_CHART_SIZE), ROLES_CHART_SIZE.scale));
}
