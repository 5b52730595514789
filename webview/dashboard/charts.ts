/**
 * The dashboard's charts, drawn with uPlot: one card per entry of DASHBOARD_CHARTS (and one per metric
 * that fits none), each with its own value axis titled with its unit, readable metric names (the raw key
 * in a tooltip), colours from the VS Code theme (--vscode-charts-*). Several runs can be overlaid (one
 * colour per run, the second metric of a chart dashed); an EMA smoothing draws the smoothed line over a
 * faint raw one; a drag zooms every chart to the same steps, a double-click resets. Metrics whose value
 * never changes (KL without a reference model, a fixed learning rate) are listed on one "constant:" line
 * instead of taking a chart. A click picks the step under the cursor; hovering one chart moves the cursor and the
 * values beside every chart's title to the same step. With one policy per role, each policy metric and each role
 * metric gets one chart with a line per policy or role, each policy and role in one colour on every chart (a role and
 * the policy named after it share it). A value nothing measured (the loss of a step without an update, a policy's
 * reward in a step without its calls: protocol/training-health.ts unmeasuredPoints) is a gap in its line, and the
 * values beside the title say why at that step. The charts redraw in the new colours when the VS Code theme changes.
 */
import uPlot from 'uplot';
import { metricLabel, ownMetricLabel, parsePolicyMetric, parseRoleMetric } from '../../protocol/metrics.js';
import { ChartData } from './chart-data.js';
import type { RunContext } from '../../protocol/training-health.js';
import { DASHBOARD_CHARTS, type DashboardChart } from '../../protocol/webview-dashboard.js';
import type { MetricPoint } from '../../protocol/store.js';
import { h, mount } from '../shared/dom.js';
import { type ChartRun, DASHES, type Gap, type Line, PLOT_HEIGHT, plotOptions, runColor, showGapTip } from './chart-options.js';
import { fmtMetric, isConstant, smoothEma } from './format.js';

/** How long a click waits for a second one before it opens the step. */
const DOUBLE_CLICK_MS = 250;

export { runColor, type ChartRun } from './chart-options.js';

interface Chart {
  def: DashboardChart;
  card: HTMLElement;
  plotBox: HTMLElement;
  /** Why the hovered step is a gap, over the plot. */
  gapTip: HTMLElement;
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
  private readonly data = new ChartData();
  private readonly themeWatch = new MutationObserver(() => this.retheme());
  private readonly charts = new Map<string, Chart>();
  private readonly resize = new ResizeObserver(() => this.fit());
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
    // VS Code changes the theme by rewriting the variables on <html> and the theme class on <body>.
    this.themeWatch.observe(document.documentElement, { attributes: true, attributeFilter: ['style', 'class'] });
    this.themeWatch.observe(document.body, { attributes: true, attributeFilter: ['class', 'data-vscode-theme-kind'] });
  }

  /** The theme changed: every chart is drawn again with its colours (line colours and axes are baked into a plot). */
  private retheme(): void {
    for (const c of this.charts.values()) c.signature = '';
    this.redraw();
  }

  /** Which runs are drawn, first = the run the header shows. */
  setRuns(runs: ChartRun[]): void {
    this.data.setRuns(runs);
    this.redraw();
  }

  setSmoothing(weight: number): void {
    this.smoothing = weight;
    this.redraw();
  }

  latest(runId: string, name: string): number | undefined {
    return this.data.latest(runId, name);
  }

  /** The step with the highest value of a metric in a run. */
  best(runId: string, name: string): { step: number; reward: number } | null {
    return this.data.best(runId, name);
  }

  /** A run's new points; `ctx` (protocol/training-health.ts runContext) lets a gap's reason name the run's roles. */
  add(runId: string, points: MetricPoint[], ctx?: RunContext): void {
    this.data.add(runId, points, ctx);
    this.redraw();
  }

  destroy(): void {
    this.resize.disconnect();
    this.themeWatch.disconnect();
    for (const c of this.charts.values()) c.plot?.destroy();
    this.charts.clear();
    this.root.replaceChildren();
    this.constants.replaceChildren();
  }

  /**
   * The configured charts that have data, then one chart per policy metric and per role metric with a line per
   * policy or role (one policy per role: `policy/<name>/<metric>`, `role/<name>/<metric>`, overlaid so the roles
   * compare at a glance), then one chart per remaining metric.
   */
  private chartDefs(): DashboardChart[] {
    const known = new Set(DASHBOARD_CHARTS.flatMap((c) => c.metrics));
    const names = this.data.names();
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
    return [...DASHBOARD_CHARTS.filter((c) => c.metrics.some((m) => this.data.present(m))), ...perOwner, ...others];
  }

  private redraw(): void {
    const defs = this.chartDefs();
    const shown = defs.flatMap((d) => d.metrics).filter((m) => this.data.present(m));
    // Never measured: recorded only at steps that measured nothing (every step without an update, say).
    const never = new Set(shown.filter((m) => this.data.allValues(m).length === 0));
    const constant = new Set(shown.filter((m) => isConstant(this.data.allValues(m))));
    const drawn = defs.filter((d) => d.pinned || d.metrics.some((m) => this.data.present(m) && !constant.has(m) && !never.has(m)));
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
    const folded = defs.filter((d) => !drawn.includes(d)).flatMap((d) => d.metrics);
    this.drawFolded(
      folded.filter((m) => constant.has(m)),
      folded.filter((m) => never.has(m)),
    );
  }

  /** One line for the metrics that take no chart: those that never change, and those nothing ever measured (and why). */
  private drawFolded(constant: string[], never: string[]): void {
    const every = this.data.shownRuns().length > 1 ? ' of every run' : '';
    const list = (metrics: string[], item: (m: string) => (string | HTMLElement)[], title: (m: string) => string) =>
      metrics.map((m, i) => h('span', { class: 'constant-item', 'data-metric': m, title: title(m) }, ...item(m), i < metrics.length - 1 ? ', ' : ''));
    mount(
      this.constants,
      ...(constant.length
        ? [
            h('span', { class: 'muted' }, 'constant: '),
            ...list(
              constant,
              (m) => [`${metricLabel(m).label} = `, h('b', {}, fmtMetric(this.data.allValues(m)[0]))],
              (m) => `${m}: the same value at every step${every}`,
            ),
          ]
        : []),
      constant.length && never.length ? h('span', { class: 'muted' }, ' · ') : null,
      ...(never.length
        ? [
            h('span', { class: 'muted' }, 'never measured: '),
            ...list(
              never,
              (m) => [h('span', { class: 'unmeasured' }, metricLabel(m).label)],
              (m) => `${m}: at every step${every}, ${this.data.firstWhy(m)}`,
            ),
          ]
        : []),
    );
  }

  private createCard(def: DashboardChart): Chart {
    const gapTip = h('div', { class: 'gap-tip', hidden: true, role: 'status' });
    const plotBox = h('div', { class: 'plot' }, gapTip);
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
    return { def, card, plotBox, gapTip, plot: null, legend, signature: '', lines: [], data: [[]] };
  }

  /** The lines of a chart: per run, per metric, the raw values (faint under a smoothed line when smoothing). */
  private linesOf(def: DashboardChart): Line[] {
    const runs = this.data.shownRuns();
    const overlay = runs.length > 1;
    const lines: Line[] = [];
    for (const run of runs) {
      def.metrics.forEach((metric, mi) => {
        if (!this.data.series(run.id, metric)) return;
        const color = overlay ? runColor(run.colorIndex) : runColor(this.data.ownerSlot(metric) ?? mi);
        const dash = overlay ? DASHES[mi % DASHES.length] : undefined;
        lines.push({ run, metric, smoothed: false, faint: this.smoothing > 0, color, dash });
        if (this.smoothing > 0) lines.push({ run, metric, smoothed: true, faint: false, color, dash });
      });
    }
    return lines;
  }

  private dataOf(lines: Line[]): uPlot.AlignedData {
    const steps = [...new Set(lines.flatMap((l) => this.data.stepsOf(l.run.id, l.metric)))].sort((a, b) => a - b);
    return [
      steps,
      ...lines.map((l) => {
        const raw = steps.map((s) => this.data.measured(l.run.id, l.metric, s));
        return l.smoothed ? smoothEma(raw, this.smoothing) : raw;
      }),
    ] as uPlot.AlignedData;
  }

  /** The legend beside the title: each run's metrics with the value at the step under the cursor, else the latest. */
  private showLegend(chart: Chart, step: number | null): void {
    const overlay = this.data.shownRuns().length > 1;
    const steps = chart.data[0] as number[];
    const label = step !== null ? [h('span', { class: 'chart-step' }, `step ${step}`)] : [];
    chart.legend.replaceChildren(
      ...label,
      ...chart.lines
        .map((line, k) => ({ line, k }))
        .filter(({ line }) => !line.smoothed)
        .map(({ line, k }) => {
          const series = this.data.series(line.run.id, line.metric)!;
          // The latest: the line's last step, measured or not (a policy that did not update at the run's last step
          // has no loss there: the legend says "no update", never the loss of an older step as if it were the last).
          const own = this.data.stepsOf(line.run.id, line.metric);
          const at = step ?? (own.length ? Math.max(...own) : null);
          const why = at === null ? undefined : this.data.whyUnmeasured(line.run.id, line.metric, at);
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
            why !== undefined ? h('span', { class: 'unmeasured', title: why }, 'no update') : h('b', {}, fmtMetric(at === null ? null : series.get(at))),
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
    const options = plotOptions(lines, chart.plotBox.clientWidth || 400, this.smoothing, {
      onCursor: (step, left) => this.onCursor(chart, step, left),
      onSelect: (u) => this.zoomToSelection(u),
    });
    const plot = new uPlot(options, chart.data, chart.plotBox);
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

  /** The cursor moved on a chart: the values beside its title at that step, and why a line has none there. */
  private onCursor(chart: Chart, step: number | null, left: number): void {
    this.showLegend(chart, step);
    const gaps: Gap[] = [];
    if (step !== null)
      for (const line of chart.lines.filter((l) => !l.smoothed)) {
        const why = this.data.whyUnmeasured(line.run.id, line.metric, step);
        if (!why) continue;
        const policy = parsePolicyMetric(line.metric)?.policy;
        const role = parseRoleMetric(line.metric)?.role;
        const who = policy !== undefined ? `policy ${policy}` : role !== undefined ? `role ${role}` : null;
        gaps.push({ who: this.data.shownRuns().length > 1 ? [line.run.tag, who].filter(Boolean).join(' · ') : who, why });
      }
    const over = chart.plot?.over;
    const box = chart.plotBox.getBoundingClientRect();
    const at = over ? over.getBoundingClientRect() : box;
    showGapTip(chart.gapTip, gaps, { left: at.left - box.left + left, top: at.top - box.top, width: box.width });
  }

  private fit(): void {
    for (const c of this.charts.values()) {
      const width = c.plotBox.clientWidth;
      if (c.plot && width > 0 && Math.abs(c.plot.width - width) > 2) c.plot.setSize({ width, height: PLOT_HEIGHT });
    }
  }
}
