/**
 * Entry of the training dashboard webview (bundled to dist/webview/dashboard.js): a run picker, the run's
 * progress, and uPlot charts of its metrics (reward and validation, KL, clip ratio, zero-variance
 * fraction, ...), appended to live as the host pushes new points. A click on a step opens that step's
 * GRPO groups in the trajectory viewer.
 */
import '@vscode-elements/elements/dist/main.js';
import '@vscode/codicons/dist/codicon.css';
import 'uplot/dist/uPlot.min.css';
import '../shared/theme.css';
import './dashboard.css';
import { METRICS } from '../../protocol/metrics.js';
import { DashboardProtocol as P, type DashboardState, type RunMetrics } from '../../protocol/webview-dashboard.js';
import type { TrainingRun } from '../../protocol/store.js';
import { HostConnection } from '../shared/host.js';
import { fmtNumber, fmtTime, h, icon, mount } from '../shared/dom.js';
import { MetricCharts } from './charts.js';

const host = new HostConnection<DashboardState>();
const WAIT_FOR_RUN_MS = 3000;
/** Whether a run is on screen (until then the dashboard keeps looking for one). */
let showing = false;
const root = document.getElementById('app') ?? document.body.appendChild(h('div', { id: 'app' }));
let state: DashboardState = host.state ?? { runId: null };
let charts: MetricCharts | null = null;
let runs: TrainingRun[] = [];
const header = h('header', { class: 'view-header' });
const progress = h('div', { class: 'run-progress' });
const chartsRoot = h('div', { class: 'charts' });
mount(root, header, progress, chartsRoot);

function drawHeader(): void {
  const select = h('vscode-single-select', { class: 'run-select', 'aria-label': 'Training run' },
    ...runs.map((r) => h('vscode-option', { value: r.id, selected: r.id === state.runId }, `${r.agent.split(/[\\/]/).pop()} · ${fmtTime(r.createdAt)} · ${r.status}`)));
  select.addEventListener('change', () => void showRun((select as unknown as { value: string }).value));
  mount(header, h('h1', {}, icon('graph-line'), ' Training'), h('div', { class: 'spacer' }), runs.length ? select : null);
}

function drawProgress(run: TrainingRun): void {
  const bar = h('vscode-progress-bar', { value: run.step, max: Math.max(1, run.totalSteps) });
  const last = charts?.latest(METRICS.rewardMean);
  const val = charts?.latest(METRICS.valReward);
  mount(progress,
    h('div', { class: 'progress-line' },
      h('span', { class: `pill status-${run.status}` }, run.status),
      h('span', {}, `step ${run.step} / ${run.totalSteps}`),
      h('span', { class: 'muted' }, run.agent),
      h('div', { class: 'spacer' }),
      last !== undefined ? h('span', { class: 'kpi' }, 'reward ', h('b', {}, fmtNumber(last))) : null,
      val !== undefined ? h('span', { class: 'kpi' }, 'validation ', h('b', {}, fmtNumber(val))) : null,
      run.status === 'running' ? h('span', { class: 'live' }, h('span', { class: 'live-dot' }), 'live') : null),
    run.totalSteps > 0 && run.status === 'running' ? bar : null,
    run.checkpointDir ? h('div', { class: 'muted' }, icon('save'), ` checkpoint: ${run.checkpointDir}`) : null);
}

function apply(data: RunMetrics, replace: boolean): void {
  if (!charts || replace) {
    charts?.destroy();
    charts = new MetricCharts(chartsRoot, (step) => host.command(P.openGroups, { runId: data.run.id, step }));
  }
  charts.add(data.points);
  drawProgress(data.run);
  const before = runs.find((r) => r.id === data.run.id);
  runs = runs.map((r) => (r.id === data.run.id ? data.run : r));
  if (before && before.status !== data.run.status) drawHeader();
}

async function showRun(runId: string): Promise<void> {
  showing = true;
  state = { runId };
  host.state = state;
  drawHeader();
  try {
    apply(await host.request(P.getRunMetrics, { runId }), true);
    host.command(P.watchRun, { runId });
  } catch (err) {
    mount(chartsRoot, h('div', { class: 'empty-state error' }, icon('error'), h('p', {}, `Could not load run ${runId}: ${(err as Error).message}`)));
  }
}

async function start(): Promise<void> {
  try { runs = await host.request(P.listRuns, {}); } catch (err) {
    mount(chartsRoot, h('div', { class: 'empty-state error' }, icon('error'), h('p', {}, `Could not list training runs: ${(err as Error).message}`)));
    setTimeout(() => { if (!showing) void start(); }, WAIT_FOR_RUN_MS); // the daemon may be starting
    return;
  }
  const runId = state.runId && runs.some((r) => r.id === state.runId) ? state.runId : runs[0]?.id;
  if (!runId) {
    drawHeader();
    mount(chartsRoot, h('div', { class: 'empty-state' }, icon('graph-line'), h('p', {}, 'No training run yet.'),
      h('p', { class: 'muted' }, 'Start one with "Agent Lightning: Train This Agent"; its curves appear here live.')));
    setTimeout(() => { if (!showing) void start(); }, WAIT_FOR_RUN_MS); // show the first run as soon as it starts
    return;
  }
  await showRun(runId);
}

host.onNotification(P.metrics, (data) => { if (data.run.id === state.runId) apply(data, false); });
host.onNotification(P.show, ({ runId }) => {
  if (!runs.some((r) => r.id === runId)) void host.request(P.listRuns, {}).then((all) => { runs = all; void showRun(runId); });
  else void showRun(runId);
});
void start();
host.ready();
