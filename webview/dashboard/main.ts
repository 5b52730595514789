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
import './dashboard.css';
import { METRICS } from '../../protocol/metrics.js';
import { diagnoseLearning, runContext, stepNotes, type StepNote } from '../../protocol/training-health.js';
import type { MetricPoint } from '../../protocol/store.js';
import { DashboardProtocol as P, type DashboardState, type RunMetrics } from '../../protocol/webview-dashboard.js';
import type { TrainingRun } from '../../protocol/store.js';
import { HostConnection } from '../shared/host.js';
import { h, icon, mount, shortId } from '../shared/dom.js';
import { type ChartRun, MetricCharts, runColor } from './charts.js';
import { drawRunHeader, runLabel } from './run-header.js';
import { errorState, shouldReload } from '../shared/recovery.js';

const host = new HostConnection<DashboardState>();
const startDaemon = (): void => host.command(P.startDaemon, {});
/** Whether a run is on screen (until then the dashboard keeps looking for one). */
let showing = false;
const root = document.getElementById('app') ?? document.body.appendChild(h('div', { id: 'app' }));
let state: DashboardState = host.state ?? { runId: null };
let charts: MetricCharts | null = null;
let runs: TrainingRun[] = [];
const header = h('header', { class: 'view-header' });
const progress = h('div', { class: 'run-progress' });
const toolbar = h('div', { class: 'chart-toolbar' });
const constants = h('div', { class: 'constants' });
/** Which steps the charts show after a drag (empty when they show every step). */
const zoomState = h('span', { class: 'zoom-state muted' });
const chartsRoot = h('div', { class: 'charts' });
/** Why the run cannot learn (its first steps), and the steps that taught nothing, with what to try. */
const notes = h('div', { class: 'run-notes' });
mount(root, header, progress, notes, toolbar, constants, chartsRoot);
/** Whether the user opened (or closed) a run's notes on steps: kept across redraws. */
const notesOpen = new Map<string, boolean>();
/** Every point of the shown run so far (the notes read them). */
let shownPoints: MetricPoint[] = [];

const compared = (): string[] => (state.compare ?? []).filter((id) => id !== state.runId && runs.some((r) => r.id === id));

function saveState(patch: Partial<DashboardState>): void {
  state = { ...state, ...patch };
  host.state = state;
}

/** The runs on the charts: the shown run first, then the compared ones, each with its colour slot. */
function chartRuns(): ChartRun[] {
  return [state.runId!, ...compared()].map((id, i) => ({ id, tag: shortId(id), colorIndex: i }));
}

/** The run's agent's headline number, in the words and with the tooltip of its CodeLens (protocol/agent-headline.ts). */
const headline = h('span', { class: 'kpi headline' });
async function drawHeadline(run: TrainingRun): Promise<void> {
  try {
    const line = await host.request(P.getHeadline, { agent: run.agent });
    if (state.runId !== run.id) return;
    headline.textContent = line.text;
    headline.title = line.tooltip;
  } catch {
    /* the daemon went away: the charts say so */
  }
}

/**
 * The diagnosis of a run that cannot learn (protocol/training-health.ts, the same words agl train prints and the
 * editor's notification says), then the steps that taught nothing or little: the notes that say the same thing
 * gathered on one line with their steps, each with the first thing to try about it. A note's step opens its groups.
 */
function drawNotes(run: TrainingRun): void {
  const ctx = runContext(run);
  const diagnosis = diagnoseLearning(shownPoints, ctx);
  const list = stepNotes(shownPoints, ctx);
  const noted = new Set(list.map((n) => n.step)).size;
  const stepLink = (step: number): HTMLElement => {
    const a = h('a', { href: '#', class: 'note-step', 'data-step': step, title: `Open step ${step}'s GRPO groups` }, `step ${step}`);
    a.addEventListener('click', (e) => {
      e.preventDefault();
      host.command(P.openGroups, { runId: run.id, step });
    });
    return a;
  };
  const alike = new Map<string, StepNote[]>();
  for (const n of list) alike.set(`${n.kind}\u0000${n.text}`, [...(alike.get(`${n.kind}\u0000${n.text}`) ?? []), n]);
  const details = list.length
    ? h(
        'details',
        { class: 'step-notes', open: notesOpen.get(run.id) ?? (!diagnosis && alike.size <= 3) },
        h('summary', {}, icon('info'), ` Notes on ${noted} step${noted === 1 ? '' : 's'} that taught little`),
        h(
          'ul',
          {},
          ...[...alike.values()].map((same) =>
            h(
              'li',
              {
                class: `step-note note-${same[0]!.kind}`,
                'data-step': same[0]!.step,
                'data-steps': same.map((n) => n.step).join(' '),
                'data-kind': same[0]!.kind,
              },
              ...same.flatMap((n, i) => [i ? ', ' : '', stepLink(n.step)]),
              `: ${same[0]!.text}`,
              h('div', { class: 'muted what-to-try' }, `Try first: ${same[0]!.tryFirst}`),
            ),
          ),
        ),
      )
    : null;
  // Opened or closed by the user (a click or Enter on its summary), the notes stay so when new points redraw them.
  details?.querySelector('summary')?.addEventListener('click', () => notesOpen.set(run.id, !(details as HTMLDetailsElement).open));
  mount(
    notes,
    diagnosis
      ? h(
          'div',
          { class: 'learning-diagnosis', role: 'alert', 'data-kind': diagnosis.kind },
          h('div', { class: 'diagnosis-title' }, icon('warning'), ` ${diagnosis.message}`),
          h('div', {}, h('span', { class: 'muted' }, 'Likely cause: '), diagnosis.cause),
          h('div', { class: 'muted' }, 'What to try:'),
          h('ul', {}, ...diagnosis.advice.map((a) => h('li', {}, a))),
        )
      : null,
    details,
  );
}

/** Renames the shown run: its label is the user's, kept across agl train's updates; '' clears it. */
function editLabel(run: TrainingRun, anchor: HTMLElement): void {
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
        const updated = await host.request(P.setRunLabel, { runId: run.id, label: input.value.trim() });
        runs = runs.map((r) => (r.id === updated.id ? updated : r));
      } catch (err) {
        input.setCustomValidity((err as Error).message);
        input.reportValidity();
        return;
      }
    }
    drawHeader();
    drawToolbar();
  };
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') void done(true);
    else if (e.key === 'Escape') void done(false);
  });
  anchor.replaceWith(input);
  input.focus();
  input.select();
}

function drawHeader(): void {
  const select = h(
    'vscode-single-select',
    { class: 'run-select', 'aria-label': 'Training run' },
    ...runs.map((r) => h('vscode-option', { value: r.id, selected: r.id === state.runId }, `${runLabel(r)} · ${r.status}`)),
  );
  select.addEventListener('change', () => void showRun((select as unknown as { value: string }).value));
  const shown = runs.find((r) => r.id === state.runId);
  const rename = h('vscode-toolbar-button', {
    icon: 'edit',
    label: 'Name this run',
    title: 'Name this run (a label shown in the picker and legends)',
    class: 'rename-run',
  });
  rename.addEventListener('click', () => shown && editLabel(shown, rename));
  mount(header, h('h1', {}, icon('graph-line'), ' Training'), h('div', { class: 'spacer' }), headline, runs.length ? select : null, shown ? rename : null);
}

/** Smoothing slider, the runs to compare (checkboxes) and, when overlaid, the legend of run colours. */
function drawToolbar(): void {
  const slider = h('input', {
    type: 'range',
    min: 0,
    max: 0.99,
    step: 0.01,
    value: state.smoothing ?? 0,
    class: 'smoothing',
    'aria-label': 'Smoothing (EMA weight)',
  }) as HTMLInputElement;
  const shown = h('span', { class: 'smoothing-value' }, (state.smoothing ?? 0).toFixed(2));
  slider.addEventListener('input', () => {
    const weight = Number(slider.value);
    shown.textContent = weight.toFixed(2);
    saveState({ smoothing: weight });
    charts?.setSmoothing(weight);
  });
  const others = runs.filter((r) => r.id !== state.runId);
  const picked = new Set(compared());
  const boxes = others.map((r) => {
    const box = h('vscode-checkbox', { 'data-run': r.id, checked: picked.has(r.id), label: `${runLabel(r)} · ${r.status} · step ${r.step}/${r.totalSteps}` });
    box.addEventListener('change', () => void toggleCompare(r.id, (box as unknown as { checked: boolean }).checked));
    return box;
  });
  const legend = picked.size
    ? h(
        'div',
        { class: 'run-legend' },
        ...chartRuns().map((r) => {
          const swatch = h('span', { class: 'swatch' });
          swatch.style.color = runColor(r.colorIndex);
          return h('span', { class: 'run-legend-item', 'data-run': r.id, title: r.id }, swatch, `${r.tag} · ${runLabel(runs.find((run) => run.id === r.id)!)}`);
        }),
        h('span', { class: 'muted' }, 'second metric of a chart dashed'),
      )
    : null;
  mount(
    toolbar,
    h(
      'label',
      { class: 'smoothing-label', title: 'Exponential moving average, as TensorBoard draws it: the raw values stay faint behind' },
      'Smoothing ',
      slider,
      shown,
    ),
    others.length
      ? h(
          'details',
          { class: 'compare', open: picked.size > 0 },
          h('summary', {}, icon('git-compare'), ` Compare runs${picked.size ? ` (${picked.size})` : ''}`),
          h('div', { class: 'compare-list' }, ...boxes),
        )
      : null,
    legend,
    zoomState,
  );
}

function redrawRun(run: TrainingRun): void {
  drawRunHeader(
    progress,
    run,
    (m) => charts?.latest(run.id, m),
    charts?.best(run.id, METRICS.valReward) ?? null,
    charts?.best(run.id, METRICS.peakMemoryMiB)?.reward ?? null,
  );
}

/** The panel pushes the new points of the shown run and the compared ones (as the daemon says they land). */
function watchRuns(): void {
  if (state.runId) host.command(P.watchRun, { runId: state.runId, compare: compared() });
}

/** New points of a compared run, and its new status. */
function applyCompared(data: RunMetrics): void {
  const before = runs.find((r) => r.id === data.run.id);
  runs = runs.map((r) => (r.id === data.run.id ? data.run : r));
  charts?.add(data.run.id, data.points, runContext(data.run));
  if (before?.status !== data.run.status) drawToolbar();
}

async function toggleCompare(runId: string, on: boolean): Promise<void> {
  saveState({ compare: on ? [...compared(), runId] : compared().filter((id) => id !== runId) });
  if (on) {
    try {
      const data = await host.request(P.getRunMetrics, { runId });
      runs = runs.map((r) => (r.id === runId ? data.run : r));
      charts?.add(runId, data.points, runContext(data.run));
    } catch (err) {
      mount(
        constants,
        errorState(`Could not load run ${runId} to compare: ${(err as Error).message}`, { retry: () => void toggleCompare(runId, true), startDaemon }),
      );
    }
  }
  charts?.setRuns(chartRuns());
  drawToolbar();
  watchRuns();
}

function apply(data: RunMetrics, replace: boolean): void {
  if (!charts || replace) {
    replace = true;
    headline.textContent = '';
    charts?.destroy();
    charts = new MetricCharts({
      root: chartsRoot,
      constants,
      onStepClick: (step) => host.command(P.openGroups, { runId: data.run.id, step }),
      onZoom: (zoom) =>
        mount(zoomState, zoom ? [icon('zoom-in'), ` steps ${Math.ceil(zoom.min)}–${Math.floor(zoom.max)} · double-click a chart to reset`] : null),
    });
    charts.setSmoothing(state.smoothing ?? 0);
    charts.setRuns(chartRuns());
  }
  charts.add(data.run.id, data.points, runContext(data.run));
  shownPoints = replace ? [...data.points] : [...shownPoints, ...data.points];
  drawNotes(data.run);
  const before = runs.find((r) => r.id === data.run.id);
  runs = runs.map((r) => (r.id === data.run.id ? data.run : r));
  redrawRun(data.run);
  if (replace || data.points.some((p) => p.name === METRICS.valReward)) void drawHeadline(data.run);
  if (before && before.status !== data.run.status) {
    drawHeader();
    drawToolbar();
  }
}

async function showRun(runId: string): Promise<void> {
  showing = true;
  saveState({ runId });
  drawHeader();
  drawToolbar();
  try {
    apply(await host.request(P.getRunMetrics, { runId }), true);
    watchRuns();
    const extra = await Promise.all(compared().map((id) => host.request(P.getRunMetrics, { runId: id }).catch(() => null)));
    for (const data of extra) {
      if (!data) continue;
      runs = runs.map((r) => (r.id === data.run.id ? data.run : r));
      charts?.add(data.run.id, data.points, runContext(data.run));
    }
  } catch (err) {
    mount(chartsRoot, errorState(`Could not load run ${runId}: ${(err as Error).message}`, { retry: () => void showRun(runId), startDaemon }));
  }
}

async function start(): Promise<void> {
  try {
    runs = await host.request(P.listRuns, {});
  } catch (err) {
    // The daemon may be starting: the host says when it is up (P.state), and this reloads.
    mount(chartsRoot, errorState(`Could not list training runs: ${(err as Error).message}`, { retry: () => void start(), startDaemon }));
    return;
  }
  const runId = state.runId && runs.some((r) => r.id === state.runId) ? state.runId : runs[0]?.id;
  if (!runId) {
    drawHeader();
    mount(
      chartsRoot,
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
  await showRun(runId);
}

host.onNotification(P.metrics, (data) => {
  if (data.run.id === state.runId) apply(data, false);
  else if (compared().includes(data.run.id)) applyCompared(data);
});
host.onNotification(P.runAppeared, () => {
  if (!showing) void start();
});
host.onNotification(P.show, ({ runId }) => {
  if (!runs.some((r) => r.id === runId))
    void host.request(P.listRuns, {}).then((all) => {
      runs = all;
      void showRun(runId);
    });
  else void showRun(runId);
});
// The daemon is back (started, restarted, attached): an error on screen reloads by itself.
host.onNotification(P.state, ({ up }) => {
  if (up && shouldReload(root, host.waiting)) void (state.runId && showing ? showRun(state.runId) : start());
});
void start();
host.ready();
