/**
 * The dashboard's charts, drawn with uPlot: one card per entry of DASHBOARD_CHARTS (and one per metric
 * that fits none), each with its own value axis titled with its unit, readable metric names (the raw key
 * in a tooltip), colours from the VS Code theme (--vscode-charts-*). Several runs can be overlaid (one
 * colour per run, the second metric of a chart dashed); an EMA smoothing draws the smoothed line over a
 * faint raw one; a drag zooms every chart to the same steps, a double-click resets. Metrics whose value
 * never changes (KL without a reference model, a fixed learning rate) are listed on one "constant:" line
 * instead of taking a chart. A click picks the step under the cursor; hovering one chart moves the cursor and the
 * values beside every chart's title to the same step. With one policy per role, each policy metric and each role
 * metric gets one chart with a line per policy or role.
 */
import uPlot from 'uplot';
import { metricLabel, ownMetricLabel, parsePolicyMetric, parseRoleMetric } from '../../protocol/metrics.js';
import { DASHBOARD_CHARTS, type DashboardChart } from '../../protocol/webview-dashboard.js';
import type { MetricPoint } from '../../protocol/store.js';
import { h } from '../shared/dom.js';
import { fmtMetric, isConstant, smoothEma, tickLabels } from './format.js';

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
const DASHES: (number[] | undefined)[] = [undefined, [6, 4], [2, 3]];
const PLOT_HEIGHT = 200;
/** Charts that share this key move their cursors together (uPlot.sync). */
const CURSOR_SYNC_KEY = 'agl-dashboard-steps';
/** How long a click waits for a second one before it opens the step. */
const DOUBLE_CLICK_MS = 250;

function themeColor(variable: string, fallback: string): string {
  return getComputedStyle(document.body).getPropertyValue(variable).trim() || fallback;
}

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
interface Line {
  run: ChartRun;
  metric: string;
  smoothed: boolean;
  faint: boolean;
  color: string;
  dash?: number[];
}

interface Chart {
  def: DashboardChart;
  card: HTMLElement;
  plotBox: HTMLElement;
  plot: uPlot | null;
  legend: HTMLElement;
  signature: string;
  lines: Line[];
  data: uPlot.AlignedData;
}

export interface ChartsOptions {
  /** Where the chart cards go. */
  root: HTMLElement;
  /** Where the "constant:" line goes. */
  constants: HTMLElement;
  /** A click on a chart: the step under the cursor. */
  onStepClick: (step: number) => void;
  /** The steps shown after a drag, or null after a reset. */
  onZoom: (zoom: { min: number; max: number } | null) => void;
}

export class MetricCharts {
  /** run id -> metric -> step -> value */
  private readonly values = new Map<string, Map<string, Map<number, number>>>();
  private readonly charts = new Map<string, Chart>();
  private readonly resize = new ResizeObserver(() => this.fit());
  private runs: ChartRun[] = [];
  private smoothing = 0;
  /** The steps every chart shows after a drag, null = all. */
  private zoom: { min: number; max: number } | null = null;

  private readonly root: HTMLElement;
  private readonly constants: HTMLElement;

  constructor(private readonly o: ChartsOptions) {
    this.root = o.root;
    this.constants = o.constants;
    const root = o.root;
    root.replaceChildren(
      h(
        'p',
        { class: 'hint muted' },
        'Drag across a chart to zoom (every chart follows), double-click to reset; click a point to open that step’s GRPO groups.',
      ),
    );
    this.resize.observe(root);
  }

  /** Which runs are drawn, first = the run the header shows. */
  setRuns(runs: ChartRun[]): void {
    this.runs = runs;
    for (const id of [...this.values.keys()]) if (!runs.some((r) => r.id === id)) this.values.delete(id);
    this.redraw();
  }

  setSmoothing(weight: number): void {
    this.smoothing = weight;
    this.redraw();
  }

  latest(runId: string, name: string): number | undefined {
    const series = this.values.get(runId)?.get(name);
    if (!series || series.size === 0) return undefined;
    return series.get(Math.max(...series.keys()));
  }

  /** The step with the highest value of a metric in a run. */
  best(runId: string, name: string): { step: number; reward: number } | null {
    let best: { step: number; reward: number } | null = null;
    for (const [step, value] of this.values.get(runId)?.get(name) ?? []) if (!best || value > best.reward) best = { step, reward: value };
    return best;
  }

  add(runId: string, points: MetricPoint[]): void {
    if (!this.values.has(runId)) this.values.set(runId, new Map());
    const run = this.values.get(runId)!;
    for (const p of points) {
      if (!run.has(p.name)) run.set(p.name, new Map());
      run.get(p.name)!.set(p.step, p.value);
    }
    this.redraw();
  }

  destroy(): void {
    this.resize.disconnect();
    for (const c of this.charts.values()) c.plot?.destroy();
    this.charts.clear();
    this.root.replaceChildren();
    this.constants.replaceChildren();
  }

  private shownRuns(): ChartRun[] {
    return this.runs.filter((r) => this.values.has(r.id));
  }

  private present(metric: string): boolean {
    return this.shownRuns().some((r) => this.values.get(r.id)!.has(metric));
  }

  /** Every value of a metric across the runs shown. */
  private allValues(metric: string): number[] {
    return this.shownRuns().flatMap((r) => [...(this.values.get(r.id)!.get(metric)?.values() ?? [])]);
  }

  /**
   * The configured charts that have data, then one chart per policy metric and per role metric with a line per
   * policy or role (one policy per role: `policy/<name>/<metric>`, `role/<name>/<metric>`, overlaid so the roles
   * compare at a glance), then one chart per remaining metric.
   */
  private chartDefs(): DashboardChart[] {
    const known = new Set(DASHBOARD_CHARTS.flatMap((c) => c.metrics));
    const names = new Set(this.shownRuns().flatMap((r) => [...this.values.get(r.id)!.keys()]));
    const grouped = new Map<string, DashboardChart>();
    const others: DashboardChart[] = [];
    for (const m of [...names].filter((n) => !known.has(n)).sort()) {
      const policy = parsePolicyMetric(m);
      const role = policy ? null : parseRoleMetric(m);
      const own = policy ? { kind: 'policy' as const, metric: policy.metric } : role ? { kind: 'role' as const, metric: role.metric } : null;
      if (!own) {
        const { label, unit } = metricLabel(m);
        others.push({ id: `metric-${m}`, title: label[0].toUpperCase() + label.slice(1), metrics: [m], yTitle: unit || label });
        continue;
      }
      const id = `${own.kind}-${own.metric}`;
      const { label, unit } = ownMetricLabel(own.kind, own.metric);
      const chart = grouped.get(id) ?? { id, title: `Per ${own.kind}: ${label}`, metrics: [], yTitle: unit || label };
      chart.metrics.push(m);
      grouped.set(id, chart);
    }
    // Policies before roles, each in the order of POLICY_METRICS / ROLE_METRICS' labels (alphabetical ids otherwise).
    const perOwner = [...grouped.values()].sort((a, b) => (a.id.startsWith('policy') === b.id.startsWith('policy') ? 0 : a.id.startsWith('policy') ? -1 : 1));
    return [...DASHBOARD_CHARTS.filter((c) => c.metrics.some((m) => this.present(m))), ...perOwner, ...others];
  }

  private redraw(): void {
    const defs = this.chartDefs();
    const constant = new Set(defs.flatMap((d) => d.metrics).filter((m) => this.present(m) && isConstant(this.allValues(m))));
    const drawn = defs.filter((d) => d.pinned || d.metrics.some((m) => this.present(m) && !constant.has(m)));
    for (const [id, chart] of this.charts) {
      if (drawn.some((d) => d.id === id)) continue;
      chart.plot?.destroy();
      chart.card.remove();
      this.charts.delete(id);
    }
    for (const def of drawn) {
      let chart = this.charts.get(def.id);
      if (!chart) {
        chart = this.createCard(def);
        this.charts.set(def.id, chart);
      }
      this.draw(chart);
    }
    const collapsed = defs.filter((d) => !drawn.includes(d)).flatMap((d) => d.metrics.filter((m) => constant.has(m)));
    this.constants.replaceChildren(
      ...(collapsed.length
        ? [
            h('span', { class: 'muted' }, 'constant: '),
            ...collapsed.map((m, i) =>
              h(
                'span',
                { class: 'constant-item', 'data-metric': m, title: `${m}: the same value at every step${this.shownRuns().length > 1 ? ' of every run' : ''}` },
                `${metricLabel(m).label} = `,
                h('b', {}, fmtMetric(this.allValues(m)[0])),
                i < collapsed.length - 1 ? ', ' : '',
              ),
            ),
          ]
        : []),
    );
  }

  private createCard(def: DashboardChart): Chart {
    const plotBox = h('div', { class: 'plot' });
    const legend = h('div', { class: 'chart-values' });
    // Axis titles are text beside the canvas (selectable, read by screen readers), not pixels in it.
    const card = h(
      'section',
      { class: 'chart-card', 'data-chart': def.id },
      h('div', { class: 'chart-head' }, h('h2', { title: def.metrics.join(', ') }, def.title), legend),
      h('div', { class: 'plot-row' }, h('div', { class: 'axis-title y-title' }, def.yTitle), plotBox),
      h('div', { class: 'axis-title x-title' }, 'training step'),
    );
    // Configured charts keep their order ahead of the per-metric ones.
    const order = DASHBOARD_CHARTS.findIndex((c) => c.id === def.id);
    card.dataset.order = String(order < 0 ? 1000 : order);
    const after = [...this.root.querySelectorAll<HTMLElement>('.chart-card')].find((c) => Number(c.dataset.order) > Number(card.dataset.order));
    this.root.insertBefore(card, after ?? null);
    return { def, card, plotBox, plot: null, legend, signature: '', lines: [], data: [[]] };
  }

  /** The lines of a chart: per run, per metric, the raw values (faint under a smoothed line when smoothing). */
  private linesOf(def: DashboardChart): Line[] {
    const runs = this.shownRuns();
    const overlay = runs.length > 1;
    const lines: Line[] = [];
    for (const run of runs) {
      def.metrics.forEach((metric, mi) => {
        if (!this.values.get(run.id)!.has(metric)) return;
        const color = runColor(overlay ? run.colorIndex : mi);
        const dash = overlay ? DASHES[mi % DASHES.length] : undefined;
        lines.push({ run, metric, smoothed: false, faint: this.smoothing > 0, color, dash });
        if (this.smoothing > 0) lines.push({ run, metric, smoothed: true, faint: false, color, dash });
      });
    }
    return lines;
  }

  private dataOf(lines: Line[]): uPlot.AlignedData {
    const steps = [...new Set(lines.flatMap((l) => [...this.values.get(l.run.id)!.get(l.metric)!.keys()]))].sort((a, b) => a - b);
    return [
      steps,
      ...lines.map((l) => {
        const raw = steps.map((s) => this.values.get(l.run.id)!.get(l.metric)!.get(s) ?? null);
        return l.smoothed ? smoothEma(raw, this.smoothing) : raw;
      }),
    ] as uPlot.AlignedData;
  }

  /** The legend beside the title: each run's metrics with the value at the step under the cursor, else the latest. */
  private showLegend(chart: Chart, step: number | null): void {
    const overlay = this.shownRuns().length > 1;
    const steps = chart.data[0] as number[];
    const label = step !== null ? [h('span', { class: 'chart-step' }, `step ${step}`)] : [];
    chart.legend.replaceChildren(
      ...label,
      ...chart.lines
        .map((line, k) => ({ line, k }))
        .filter(({ line }) => !line.smoothed)
        .map(({ line, k }) => {
          const series = this.values.get(line.run.id)!.get(line.metric)!;
          const at = step ?? (series.size ? Math.max(...series.keys()) : null);
          const smoothedLine = chart.lines[k + 1]?.smoothed ? (chart.data[k + 2] as (number | null)[]) : null;
          const smoothed = smoothedLine && at !== null ? smoothedLine[steps.indexOf(at)] : null;
          const swatch = h('span', { class: `swatch${line.dash ? ' dashed' : ''}` });
          swatch.style.color = line.color;
          const { label: name, unit } = metricLabel(line.metric);
          return h(
            'span',
            {
              class: 'chart-value',
              'data-metric': line.metric,
              'data-run': line.run.id,
              title: `${line.metric}${unit ? ` (${unit})` : ''}${overlay ? ` · run ${line.run.id}` : ''}`,
            },
            swatch,
            overlay ? `${line.run.tag} · ${name} ` : `${name} `,
            h('b', {}, fmtMetric(at === null ? null : series.get(at))),
            smoothed !== null && smoothed !== undefined
              ? [' ', h('i', { class: 'smoothed', title: `EMA smoothing ${this.smoothing}` }, `smoothed ${fmtMetric(smoothed)}`)]
              : null,
          );
        }),
    );
  }

  private draw(chart: Chart): void {
    const lines = this.linesOf(chart.def);
    const signature = JSON.stringify([lines.map((l) => [l.run.id, l.metric, l.smoothed, l.color]), this.smoothing]);
    chart.lines = lines;
    chart.data = this.dataOf(lines);
    this.showLegend(chart, null);
    if (chart.plot && chart.signature === signature) {
      chart.plot.setData(chart.data);
      if (this.zoom) chart.plot.setScale('x', this.zoom);
      return;
    }
    chart.plot?.destroy();
    chart.signature = signature;
    const plot = new uPlot(this.options(chart, chart.plotBox.clientWidth || 400), chart.data, chart.plotBox);
    chart.plot = plot;
    if (this.zoom) plot.setScale('x', this.zoom);
    // A click opens the step unless it turns out to be half of a double-click (which resets the zoom).
    let pending: ReturnType<typeof setTimeout> | undefined;
    plot.over.addEventListener('dblclick', () => {
      clearTimeout(pending);
      this.resetZoom();
    });
    plot.over.addEventListener('click', () => {
      clearTimeout(pending);
      const idx = plot.cursor.idx;
      if (idx === null || idx === undefined) return;
      const step = (plot.data[0] as number[])[idx];
      pending = setTimeout(() => this.o.onStepClick(step), DOUBLE_CLICK_MS);
    });
  }

  /** A double-click: every chart shows all its steps again. */
  private resetZoom(): void {
    this.zoom = null;
    this.o.onZoom(null);
    for (const c of this.charts.values()) c.plot?.setData(c.data);
  }

  /** A drag across one chart (its selection, in pixels): every chart shows those steps. */
  private zoomToSelection(u: uPlot): void {
    const { left, width } = u.select;
    if (width < 3) return;
    const zoom = { min: u.posToVal(left, 'x'), max: u.posToVal(left + width, 'x') };
    u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
    this.zoom = zoom;
    this.o.onZoom(zoom);
    for (const c of this.charts.values()) c.plot?.setScale('x', zoom);
  }

  private options(chart: Chart, width: number): uPlot.Options {
    const fg = themeColor('--vscode-descriptionForeground', '#9d9d9d');
    const grid = themeColor('--vscode-editorWidget-border', '#454545');
    const family = themeColor('--vscode-font-family', 'sans-serif');
    const axis = { stroke: fg, grid: { stroke: grid, width: 0.5 }, ticks: { stroke: grid, width: 0.5 }, font: `11px ${family}` };
    return {
      width,
      height: PLOT_HEIGHT,
      legend: { show: false },
      // uPlot draws the selection; zoomToSelection applies it to every chart (uPlot alone would zoom just this one).
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
        { ...axis, values: (_u, splits) => tickLabels(splits), size: (_u, values) => 14 + 6.5 * Math.max(3, ...(values ?? []).map((v) => String(v).length)) },
      ],
      series: [
        { label: 'step' },
        ...chart.lines.map((l) => ({
          label: `${l.run.id} ${l.metric}${l.smoothed ? ' (smoothed)' : ''}`,
          stroke: l.color,
          width: l.faint ? 1 : 2,
          alpha: l.faint ? 0.3 : 1,
          dash: l.dash,
          spanGaps: true,
          points: { show: !l.faint && this.smoothing === 0, size: 4 },
          value: (_u: uPlot, v: number | null) => fmtMetric(v),
        })),
      ],
      hooks: {
        setCursor: [
          (u) => {
            const idx = u.cursor.idx;
            this.showLegend(chart, idx === null || idx === undefined ? null : (u.data[0] as number[])[idx]);
          },
        ],
        setSelect: [(u) => this.zoomToSelection(u)],
      },
    };
  }

  private fit(): void {
    for (const c of this.charts.values()) {
      const width = c.plotBox.clientWidth;
      if (c.plot && width > 0 && Math.abs(c.plot.width - width) > 2) c.plot.setSize({ width, height: PLOT_HEIGHT });
    }
  }
}
