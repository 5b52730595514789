/**
 * How one dashboard chart is drawn by uPlot (charts.ts owns the data and the cards): colours from the VS Code theme
 * (--vscode-charts-*, read when the plot is made, so a new theme means a new plot), titled axes with readable ticks, a
 * cursor that moves with every other chart's, drag-to-select, and gaps kept where nothing was measured. Also the tip
 * over a plot that says why a hovered step is a gap.
 */
import uPlot from 'uplot';
import { METRICS } from '../../protocol/metrics.js';
import { h, mount } from '../shared/dom.js';
import { valueAxisSize } from './axis-size.js';
import { fmtMetric, tickLabels } from './format.js';

const PALETTE = [
  '--vscode-charts-blue',
  '--vscode-charts-orange',
  '--vscode-charts-green',
  '--vscode-charts-purple',
  '--vscode-charts-red',
  '--vscode-charts-yellow',
];
const FALLBACK = ['#3794ff', '#d18616', '#89d185', '#b180d7', '#f14c4c', '#cca700'];
/** Line styles of a chart's 1st, 2nd, 3rd metric when colours tell runs apart. */
export const DASHES: (number[] | undefined)[] = [undefined, [6, 4], [2, 3]];
export const PLOT_HEIGHT = 200;
/** Charts that share this key move their cursors together (uPlot.sync). */
const CURSOR_SYNC_KEY = 'agl-dashboard-steps';

function themeColor(variable: string, fallback: string): string {
  return getComputedStyle(document.body).getPropertyValue(variable).trim() || fallback;
}

/** The theme's colour of a palette slot (runs, or policies and roles). */
export function runColor(index: number): string {
  return themeColor(PALETTE[index % PALETTE.length], FALLBACK[index % FALLBACK.length]);
}

/** A run on the charts: its id, its short name in chart legends, and its colour slot. */
export interface ChartRun {
  id: string;
  tag: string;
  colorIndex: number;
}

/** One line of a chart: a run's metric, raw or smoothed. */
export interface Line {
  run: ChartRun;
  metric: string;
  smoothed: boolean;
  faint: boolean;
  color: string;
  dash?: number[];
}

export interface PlotHooks {
  /** The cursor moved: the step under it (null: it left), and where it is across the plot (px). */
  onCursor(step: number | null, left: number): void;
  /** A drag across the plot ended (its selection, in pixels). */
  onSelect(u: uPlot): void;
}

export function plotOptions(lines: Line[], width: number, smoothing: number, hooks: PlotHooks): uPlot.Options {
  const fg = themeColor('--vscode-descriptionForeground', '#9d9d9d');
  const grid = themeColor('--vscode-editorWidget-border', '#454545');
  const family = themeColor('--vscode-font-family', 'sans-serif');
  const axis = { stroke: fg, grid: { stroke: grid, width: 0.5 }, ticks: { stroke: grid, width: 0.5 }, font: `11px ${family}` };
  return {
    width,
    height: PLOT_HEIGHT,
    legend: { show: false },
    // uPlot draws the selection; charts.ts applies it to every chart (uPlot alone would zoom just this one).
    // The cursor moves on every chart at once (the same step), so a step reads across loss, KL, rewards, ...
    cursor: { drag: { x: true, y: false, setScale: false }, points: { size: 7 }, sync: { key: CURSOR_SYNC_KEY, scales: ['x', null] } },
    scales: {
      x: { time: false },
      // A flat series (e.g. all-zero rewards at the start) gets a readable range instead of uPlot's 0-100.
      y: {
        range: (_u, min, max) =>
          min !== max ? uPlot.rangeNum(min, max, 0.1, true) : min === 0 ? [0, 1] : [min - Math.abs(min) * 0.1, max + Math.abs(max) * 0.1],
      },
    },
    axes: [
      { ...axis, size: 26, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000], values: (_u, splits) => splits.map((v) => String(v)) },
      {
        ...axis,
        values: (u, splits) => {
          const labels = tickLabels(splits);
          u.root.dataset.yTicks = JSON.stringify(labels); // what the axis draws, for the tests of its fit
          return labels;
        },
        size: valueAxisSize,
      },
    ],
    series: [
      { label: 'step' },
      ...lines.map((l) => ({
        label: `${l.run.id} ${l.metric}${l.smoothed ? ' (smoothed)' : ''}`,
        stroke: l.color,
        width: l.faint ? 1 : 2,
        alpha: l.faint ? 0.3 : 1,
        dash: l.dash,
        // Held-out reward is measured every valEvery steps by design: its points are joined. Elsewhere a gap is a
        // step where nothing measured the value, and stays one.
        spanGaps: l.metric === METRICS.valReward,
        points: { show: !l.faint && smoothing === 0, size: 4 },
        value: (_u: uPlot, v: number | null) => fmtMetric(v),
      })),
    ],
    hooks: {
      setCursor: [
        (u) => {
          const idx = u.cursor.idx;
          hooks.onCursor(idx === null || idx === undefined ? null : (u.data[0] as number[])[idx], u.cursor.left ?? 0);
        },
      ],
      setSelect: [(u) => hooks.onSelect(u)],
    },
  };
}

/** A gap under the cursor: who has none and why. */
export interface Gap {
  /** Whose line ("policy rewriter"); null when the chart has one line. */
  who: string | null;
  why: string;
}

/**
 * Shows (or hides, with no gaps) the tip over a plot that says why the hovered step is a gap, beside the cursor. It
 * floats over the plot, so the page never moves under the mouse.
 */
export function showGapTip(tip: HTMLElement, gaps: Gap[], cursor: { left: number; top: number; width: number }): void {
  tip.hidden = gaps.length === 0;
  if (tip.hidden) return;
  // Several lines with one reason (a step nothing updated): the reason once; else each line's own.
  const same = gaps.length > 1 && new Set(gaps.map((g) => g.why)).size === 1;
  mount(tip, ...(same ? [h('div', {}, gaps[0]!.why)] : gaps.map((g) => h('div', {}, g.who ? `${g.who}: ${g.why}` : g.why))));
  // Beside the cursor, on the side with more room (left and cursor.width are in the plot box's pixels).
  const onRight = cursor.left < cursor.width / 2;
  tip.style.top = `${cursor.top + 4}px`;
  tip.style.left = onRight ? `${cursor.left + 12}px` : '';
  tip.style.right = onRight ? '' : `${cursor.width - cursor.left + 12}px`;
}
