/**
 * The dashboard's charts, drawn with uPlot: one card per entry of DASHBOARD_CHARTS (and one per metric
 * that fits none), colours taken from the VS Code theme (--vscode-charts-*), resized with the panel,
 * appended to as points arrive. Clicking a chart picks the step under the cursor.
 */
import uPlot from 'uplot';
import { DASHBOARD_CHARTS } from '../../protocol/webview-dashboard.js';
import type { MetricPoint } from '../../protocol/store.js';
import { fmtNumber, h } from '../shared/dom.js';

const PALETTE = ['--vscode-charts-blue', '--vscode-charts-green', '--vscode-charts-orange', '--vscode-charts-purple', '--vscode-charts-red', '--vscode-charts-yellow'];
const FALLBACK = ['#3794ff', '#89d185', '#d18616', '#b180d7', '#f14c4c', '#cca700'];

function themeColor(variable: string, fallback: string): string {
  return getComputedStyle(document.body).getPropertyValue(variable).trim() || fallback;
}

interface Chart { id: string; title: string; metrics: string[]; card: HTMLElement; plotBox: HTMLElement; plot: uPlot | null; lastValues: HTMLElement }

export class MetricCharts {
  private readonly values = new Map<string, Map<number, number>>();
  private readonly charts = new Map<string, Chart>();
  private readonly resize = new ResizeObserver(() => this.fit());

  constructor(private readonly root: HTMLElement, private readonly onStepClick: (step: number) => void) {
    root.replaceChildren(h('p', { class: 'hint muted' }, 'Click a point to open that step’s GRPO groups in the trajectory viewer.'));
    this.resize.observe(root);
  }

  latest(name: string): number | undefined {
    const series = this.values.get(name);
    if (!series || series.size === 0) return undefined;
    return series.get(Math.max(...series.keys()));
  }

  add(points: MetricPoint[]): void {
    for (const p of points) {
      if (!this.values.has(p.name)) this.values.set(p.name, new Map());
      this.values.get(p.name)!.set(p.step, p.value);
    }
    for (const def of this.chartDefs()) {
      let chart = this.charts.get(def.id);
      if (!chart) { chart = this.createCard(def); this.charts.set(def.id, chart); }
      this.draw(chart);
    }
  }

  destroy(): void {
    this.resize.disconnect();
    for (const c of this.charts.values()) c.plot?.destroy();
    this.charts.clear();
    this.root.replaceChildren();
  }

  /** The configured charts that have data, then one chart per remaining metric. */
  private chartDefs(): { id: string; title: string; metrics: string[] }[] {
    const known = new Set(DASHBOARD_CHARTS.flatMap((c) => c.metrics));
    const configured = DASHBOARD_CHARTS.filter((c) => c.metrics.some((m) => this.values.has(m)));
    const others = [...this.values.keys()].filter((m) => !known.has(m)).sort().map((m) => ({ id: `metric-${m}`, title: m, metrics: [m] }));
    return [...configured, ...others];
  }

  private createCard(def: { id: string; title: string; metrics: string[] }): Chart {
    const plotBox = h('div', { class: 'plot' });
    const lastValues = h('div', { class: 'chart-values' });
    const card = h('section', { class: 'chart-card', 'data-chart': def.id }, h('div', { class: 'chart-head' }, h('h2', {}, def.title), lastValues), plotBox);
    // Configured charts keep their order ahead of the per-metric ones.
    const order = DASHBOARD_CHARTS.findIndex((c) => c.id === def.id);
    card.dataset.order = String(order < 0 ? 1000 : order);
    const after = [...this.root.querySelectorAll<HTMLElement>('.chart-card')].find((c) => Number(c.dataset.order) > Number(card.dataset.order));
    this.root.insertBefore(card, after ?? null);
    return { ...def, card, plotBox, plot: null, lastValues };
  }

  private data(chart: Chart): uPlot.AlignedData {
    const present = chart.metrics.filter((m) => this.values.has(m));
    const steps = [...new Set(present.flatMap((m) => [...this.values.get(m)!.keys()]))].sort((a, b) => a - b);
    return [steps, ...present.map((m) => steps.map((s) => this.values.get(m)!.get(s) ?? null))] as uPlot.AlignedData;
  }

  /** The values beside the title: the latest ones, or those of the step under the cursor. */
  private showValues(chart: Chart, step: number | null): void {
    const present = chart.metrics.filter((m) => this.values.has(m));
    const label = step !== null ? [h('span', { class: 'chart-step' }, `step ${step}`)] : [];
    chart.lastValues.replaceChildren(...label,
      ...present.map((m, i) => {
        const swatch = h('span', { class: 'swatch' });
        swatch.style.background = themeColor(PALETTE[i % PALETTE.length], FALLBACK[i % FALLBACK.length]);
        const value = step === null ? this.latest(m) : this.values.get(m)!.get(step);
        return h('span', { class: 'chart-value', 'data-metric': m }, swatch, `${m} `, h('b', {}, fmtNumber(value ?? null)));
      }));
  }

  private draw(chart: Chart): void {
    const present = chart.metrics.filter((m) => this.values.has(m));
    const data = this.data(chart);
    this.showValues(chart, null);
    if (chart.plot && chart.plot.series.length === present.length + 1) { chart.plot.setData(data); return; }
    chart.plot?.destroy();
    const opts = this.options(present, chart.plotBox.clientWidth || 400);
    opts.hooks = { setCursor: [(u) => {
      const idx = u.cursor.idx;
      this.showValues(chart, idx === null || idx === undefined ? null : (u.data[0] as number[])[idx]);
    }] };
    chart.plot = new uPlot(opts, data, chart.plotBox);
    chart.plot.over.addEventListener('click', () => {
      const idx = chart.plot?.cursor.idx;
      if (idx !== null && idx !== undefined) this.onStepClick((chart.plot!.data[0] as number[])[idx]);
    });
  }

  private options(metrics: string[], width: number): uPlot.Options {
    const fg = themeColor('--vscode-descriptionForeground', '#9d9d9d');
    const grid = themeColor('--vscode-editorWidget-border', '#454545');
    const font = `11px ${themeColor('--vscode-font-family', 'sans-serif')}`;
    const axis = { stroke: fg, grid: { stroke: grid, width: 0.5 }, ticks: { stroke: grid, width: 0.5 }, font };
    return {
      width, height: 190,
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { size: 7 } },
      scales: {
        x: { time: false },
        // A flat series (e.g. all-zero rewards at the start) gets a readable range instead of uPlot's 0-100.
        y: { range: (_u, min, max) => (min !== max ? uPlot.rangeNum(min, max, 0.1, true) : min === 0 ? [0, 1] : [min - Math.abs(min) * 0.1, max + Math.abs(max) * 0.1]) },
      },
      axes: [{ ...axis, size: 28, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] }, { ...axis, size: 48 }],
      series: [
        { label: 'step' },
        ...metrics.map((m, i) => ({
          label: m,
          stroke: themeColor(PALETTE[i % PALETTE.length], FALLBACK[i % FALLBACK.length]),
          width: 2,
          spanGaps: true,
          points: { show: true, size: 4 },
          value: (_u: uPlot, v: number | null) => fmtNumber(v),
        })),
      ],
    };
  }

  private fit(): void {
    for (const c of this.charts.values()) {
      const width = c.plotBox.clientWidth;
      if (c.plot && width > 0 && Math.abs(c.plot.width - width) > 2) c.plot.setSize({ width, height: 190 });
    }
  }
}
