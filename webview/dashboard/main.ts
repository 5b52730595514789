/**
 * Entry of the training dashboard webview (bundled to dist/webview/dashboard.js): a run picker, the run's
 * header (why it stopped, config, elapsed time, best checkpoint), other runs to overlay for comparison,
 * an EMA smoothing slider, and uPlot charts of the metrics (charts.ts), appended to live as the host
 * pushes new points. A click on a step opens that step's GRPO groups in the trajectory viewer.
 */
import '@vscode-elements/elements/dist/main.js';
import '@vscode/codicons/dist/codicon.css';
import 'uplot/dist/uPlot.min.css';
import '../shared/theme.css';
import '../shared/run-chart.css';
import './dashboard.css';
import { METRICS } from '../../protocol/metrics.js';
import { runContext } from '../../protocol/training-health.js';
import type { MetricPoint } from '../../protocol/store.js';
import { DashboardProtocol as P, type DashboardState, type RunMetrics } from '../../protocol/webview-dashboard.js';
import type { TrainingRun } from '../../protocol/store.js';
import { HostConnection } from '../shared/host.js';
import { h, icon, mount, shortId } from '../shared/dom.js';
import { type ChartRun, MetricCharts, runColor } from './charts.js';
import { drawRunHeader, runLabel } from './run-header.js';
import { drawRunNotes } from './run-notes.js';
import { errorState, shouldReload } from '../shared/recovery.js';

/** The dashboard of one panel: its state (saved in the panel), the runs, the charts and the parts of the page it draws. */
class Dashboard {
  /** Whether a run is on screen (until then the dashboard keeps looking for one). */
  showing = false;
  state: DashboardState;
  private charts: MetricCharts | null = null;
  runs: TrainingRun[] = [];
  private readonly header = h('header', { class: 'view-header' });
  private readonly progress = h('div', { class: 'run-progress' });
  private readonly toolbar = h('div', { class: 'chart-toolbar' });
  private readonly constants = h('div', { class: 'constants' });
  /** Which steps the charts show after a drag (empty when they show every step). */
  private readonly zoomState = h('span', { class: 'zoom-state muted' });
  private readonly chartsRoot = h('div', { class: 'charts' });
  /** Why the run cannot learn (its first steps), and the steps that taught nothing, with what to try. */
  private readonly notes = h('div', { class: 'run-notes' });
  /** The run's agent's headline number, in the words and with the tooltip of its CodeLens (protocol/agent-headline.ts). */
  private readonly headline = h('span', { class: 'kpi headline' });
  /** Whether the user opened (or closed) a run's notes on steps: kept across redraws. */
  private readonly notesOpen = new Map<string, boolean>();
  /** Every point of the shown run so far (the notes read them). */
  private shownPoints: MetricPoint[] = [];

  constructor(
    private readonly host: HostConnection<DashboardState>,
    root: HTMLElement,
  ) {
    this.state = host.state ?? { runId: null };
    mount(root, this.header, this.progress, this.notes, this.toolbar, this.constants, this.chartsRoot);
  }

  private readonly startDaemon = (): void => this.host.command(P.startDaemon, {});

  compared(): string[] {
    return (this.state.compare ?? []).filter((id) => id !== this.state.runId && this.runs.some((r) => r.id === id));
  }

  private saveState(patch: Partial<DashboardState>): void {
    this.state = { ...this.state, ...patch };
    this.host.state = this.state;
  }

  /** The runs on the charts: the shown run first, then the compared ones, each with its colour slot. */
  private chartRuns(): ChartRun[] {
    return [this.state.runId!, ...this.compared()].map((id, i) => ({ id, tag: shortId(id), colorIndex: i }));
  }

  /** `run` as the daemon now has it, in place of the one the dashboard had. */
  private replaceRun(run: TrainingRun): void {
    this.runs = this.runs.map((r) => (r.id === run.id ? run : r));
  }

  private async drawHeadline(run: TrainingRun): Promise<void> {
    try {
      const line = await this.host.request(P.getHeadline, { agent: run.agent });
      if (this.state.runId !== run.id) return;
      this.headline.textContent = line.text;
      this.headline.title = line.tooltip;
    } catch {
      /* the daemon went away: the charts say so */
    }
  }

  /** Renames the shown run: its label is the user's, kept across agl train's updates; '' clears it. */
  private editLabel(run: TrainingRun, anchor: HTMLElement): void {
    const current = (run.summary as { label?: string }).label ?? '';
    const input = h('input', {
      type: 'text',
      class: 'label-input',
      value: current,
      maxlength: 120,
      placeholder: 'a name for this run (Enter saves, Escape cancels)',
      'aria-label': 'Run label',
    }) as HTMLInputElement;
    const done = async (save: boolean): Promise<void> => {
      if (save && input.value.trim() !== current) {
        try {
          this.replaceRun(await this.host.request(P.setRunLabel, { runId: run.id, label: input.value.trim() }));
        } catch (err) {
          input.setCustomValidity((err as Error).message);
          input.reportValidity();
          return;
        }
      }
      this.drawHeader();
      this.drawToolbar();
    };
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') void done(true);
      else if (e.key === 'Escape') void done(false);
    });
    anchor.replaceWith(input);
    input.focus();
    input.select();
  }

  private drawHeader(): void {
    const select = h(
      'vscode-single-select',
      { class: 'run-select', 'aria-label': 'Training run' },
      ...this.runs.map((r) => h('vscode-option', { value: r.id, selected: r.id === this.state.runId }, `${runLabel(r)} · ${r.status}`)),
    );
    select.addEventListener('change', () => void this.showRun((select as unknown as { value: string }).value));
    const shown = this.runs.find((r) => r.id === this.state.runId);
    const rename = h('vscode-toolbar-button', {
      icon: 'edit',
      label: 'Name this run',
      title: 'Name this run (a label shown in the picker and legends)',
      class: 'rename-run',
    });
    rename.addEventListener('click', () => shown && this.editLabel(shown, rename));
    const compare = h('vscode-toolbar-button', {
      icon: 'diff',
      label: 'Compare evals',
      title: 'Compare two evaluations (agl eval runs: before and after training, say) side by side',
      class: 'compare-evals',
    });
    compare.addEventListener('click', () => this.host.command(P.openEvalCompare, {}));
    mount(
      this.header,
      h('h1', {}, icon('graph-line'), ' Training'),
      h('div', { class: 'spacer' }),
      this.headline,
      this.runs.length ? select : null,
      shown ? rename : null,
      compare,
    );
  }

  /** The smoothing slider: the EMA weight of every chart, saved with the panel. */
  private smoothingControl(): HTMLElement {
    const slider = h('input', {
      type: 'range',
      min: 0,
      max: 0.99,
      step: 0.01,
      value: this.state.smoothing ?? 0,
      class: 'smoothing',
      'aria-label': 'Smoothing (EMA weight)',
    }) as HTMLInputElement;
    const shown = h('span', { class: 'smoothing-value' }, (this.state.smoothing ?? 0).toFixed(2));
    slider.addEventListener('input', () => {
      const weight = Number(slider.value);
      shown.textContent = weight.toFixed(2);
      this.saveState({ smoothing: weight });
      this.charts?.setSmoothing(weight);
    });
    return h(
      'label',
      { class: 'smoothing-label', title: 'Exponential moving average, as TensorBoard draws it: the raw values stay faint behind' },
      'Smoothing ',
      slider,
      shown,
    );
  }

  /** Smoothing slider, the runs to compare (checkboxes) and, when overlaid, the legend of run colours. */
  private drawToolbar(): void {
    const others = this.runs.filter((r) => r.id !== this.state.runId);
    const picked = new Set(this.compared());
    const boxes = others.map((r) => {
      const box = h('vscode-checkbox', { 'data-run': r.id, checked: picked.has(r.id), label: `${runLabel(r)} · ${r.status} · step ${r.step}/${r.totalSteps}` });
      box.addEventListener('change', () => void this.toggleCompare(r.id, (box as unknown as { checked: boolean }).checked));
      return box;
    });
    const legend = picked.size
      ? h(
          'div',
          { class: 'run-legend' },
          ...this.chartRuns().map((r) => {
            const swatch = h('span', { class: 'swatch' });
            swatch.style.color = runColor(r.colorIndex);
            return h(
              'span',
              { class: 'run-legend-item', 'data-run': r.id, title: r.id },
              swatch,
              `${r.tag} · ${runLabel(this.runs.find((run) => run.id === r.id)!)}`,
            );
          }),
          h('span', { class: 'muted' }, 'second metric of a chart dashed'),
        )
      : null;
    mount(
      this.toolbar,
      this.smoothingControl(),
      others.length
        ? h(
            'details',
            { class: 'compare', open: picked.size > 0 },
            h('summary', {}, icon('git-compare'), ` Compare runs${picked.size ? ` (${picked.size})` : ''}`),
            h('div', { class: 'compare-list' }, ...boxes),
          )
        : null,
      legend,
      this.zoomState,
    );
  }

  private redrawRun(run: TrainingRun): void {
    const charts = this.charts;
    drawRunHeader(
      this.progress,
      run,
      (m) => charts?.latest(run.id, m),
      charts?.best(run.id, METRICS.valReward) ?? null,
      charts?.best(run.id, METRICS.peakMemoryMiB)?.reward ?? null,
    );
  }

  /** The panel pushes the new points of the shown run and the compared ones (as the daemon says they land). */
  private watchRuns(): void {
    if (this.state.runId) this.host.command(P.watchRun, { runId: this.state.runId, compare: this.compared() });
  }

  /** New points of a compared run, and its new status. */
  applyCompared(data: RunMetrics): void {
    const before = this.runs.find((r) => r.id === data.run.id);
    this.replaceRun(data.run);
    this.charts?.add(data.run.id, data.points, runContext(data.run));
    if (before?.status !== data.run.status) this.drawToolbar();
  }

  private async toggleCompare(runId: string, on: boolean): Promise<void> {
    this.saveState({ compare: on ? [...this.compared(), runId] : this.compared().filter((id) => id !== runId) });
    if (on) {
      try {
        const data = await this.host.request(P.getRunMetrics, { runId });
        this.replaceRun(data.run);
        this.charts?.add(runId, data.points, runContext(data.run));
      } catch (err) {
        mount(
          this.constants,
          errorState(`Could not load run ${runId} to compare: ${(err as Error).message}`, {
            retry: () => void this.toggleCompare(runId, true),
            startDaemon: this.startDaemon,
          }),
        );
      }
    }
    this.charts?.setRuns(this.chartRuns());
    this.drawToolbar();
    this.watchRuns();
  }

  /** New charts for the run `data` is of (another run shown, or the first). */
  private newCharts(runId: string): MetricCharts {
    this.headline.textContent = '';
    this.charts?.destroy();
    const charts = new MetricCharts({
      root: this.chartsRoot,
      constants: this.constants,
      onStepClick: (step) => this.host.command(P.openGroups, { runId, step }),
      onZoom: (zoom) =>
        mount(this.zoomState, zoom ? [icon('zoom-in'), ` steps ${Math.ceil(zoom.min)}–${Math.floor(zoom.max)} · double-click a chart to reset`] : null),
    });
    charts.setSmoothing(this.state.smoothing ?? 0);
    this.charts = charts;
    charts.setRuns(this.chartRuns());
    return charts;
  }

  /** Points of the shown run: all of them (`replace`: another run, or the first read), or the new ones. */
  apply(data: RunMetrics, replace: boolean): void {
    if (!this.charts) replace = true;
    const charts = replace ? this.newCharts(data.run.id) : this.charts!;
    charts.add(data.run.id, data.points, runContext(data.run));
    this.shownPoints = replace ? [...data.points] : [...this.shownPoints, ...data.points];
    drawRunNotes(this.notes, data.run, this.shownPoints, this.notesOpen, (step) => this.host.command(P.openGroups, { runId: data.run.id, step }));
    const before = this.runs.find((r) => r.id === data.run.id);
    this.replaceRun(data.run);
    this.redrawRun(data.run);
    if (replace || data.points.some((p) => p.name === METRICS.valReward)) void this.drawHeadline(data.run);
    if (before && before.status !== data.run.status) {
      this.drawHeader();
      this.drawToolbar();
    }
  }

  async showRun(runId: string): Promise<void> {
    this.showing = true;
    this.saveState({ runId });
    this.drawHeader();
    this.drawToolbar();
    try {
      this.apply(await this.host.request(P.getRunMetrics, { runId }), true);
      this.watchRuns();
      const extra = await Promise.all(this.compared().map((id) => this.host.request(P.getRunMetrics, { runId: id }).catch(() => null)));
      for (const data of extra) {
        if (!data) continue;
        this.replaceRun(data.run);
        this.charts?.add(data.run.id, data.points, runContext(data.run));
      }
    } catch (err) {
      mount(
        this.chartsRoot,
        errorState(`Could not load run ${runId}: ${(err as Error).message}`, { retry: () => void this.showRun(runId), startDaemon: this.startDaemon }),
      );
    }
  }

  async start(): Promise<void> {
    try {
      this.runs = await this.host.request(P.listRuns, {});
    } catch (err) {
      // The daemon may be starting: the host says when it is up (P.state), and this reloads.
      mount(
        this.chartsRoot,
        errorState(`Could not list training runs: ${(err as Error).message}`, { retry: () => void this.start(), startDaemon: this.startDaemon }),
      );
      return;
    }
    const runId = this.state.runId && this.runs.some((r) => r.id === this.state.runId) ? this.state.runId : this.runs[0]?.id;
    if (!runId) {
      this.drawHeader();
      mount(
        this.chartsRoot,
        h(
          'div',
          { class: 'empty-state' },
          icon('graph-line'),
          h('p', {}, 'No training run yet.'),
          h('p', { class: 'muted' }, 'Start one with "Agent Lightning: Train This Agent"; its curves appear here live.'),
        ),
      );
      return; // the host says when a run appears (P.runAppeared): the first one shows as soon as it starts
    }
    await this.showRun(runId);
  }
}

const host = new HostConnection<DashboardState>();
const root = document.getElementById('app') ?? document.body.appendChild(h('div', { id: 'app' }));
const dashboard = new Dashboard(host, root);
host.onNotification(P.metrics, (data) => {
  if (data.run.id === dashboard.state.runId) dashboard.apply(data, false);
  else if (dashboard.compared().includes(data.run.id)) dashboard.applyCompared(data);
});
host.onNotification(P.runAppeared, () => {
  if (!dashboard.showing) void dashboard.start();
});
host.onNotification(P.show, ({ runId }) => {
  if (!dashboard.runs.some((r) => r.id === runId))
    void host.request(P.listRuns, {}).then((all) => {
      dashboard.runs = all;
      void dashboard.showRun(runId);
    });
  else void dashboard.showRun(runId);
});
// The daemon is back (started, restarted, attached): an error on screen reloads by itself.
host.onNotification(P.state, ({ up }) => {
  if (up && shouldReload(root, host.waiting)) void (dashboard.state.runId && dashboard.showing ? dashboard.showRun(dashboard.state.runId) : dashboard.start());
});
void dashboard.start();
host.ready();
