/**
 * Entry of the trajectory viewer webview (bundled to dist/webview/trajectory.js): routes between the
 * rollouts table, one rollout (timeline / states) and the GRPO group view, keeps the current view in
 * getState/setState, and asks the host for data with typed requests (protocol/webview-trajectory.ts).
 */
import '@vscode-elements/elements/dist/main.js';
import '@vscode/codicons/dist/codicon.css';
import '../shared/theme.css';
import './trajectory.css';
import { TrajectoryProtocol as P, type RolloutFilter, type TrajectoryState, type TrajectoryView } from '../../protocol/webview-trajectory.js';
import { HostConnection } from '../shared/host.js';
import { h, mount } from '../shared/dom.js';
import { errorState, shouldReload } from '../shared/recovery.js';
import { renderGroupView } from './group-view.js';
import { renderRolloutView } from './rollout-view.js';
import { renderRolloutsView } from './rollouts-view.js';

const host = new HostConnection<TrajectoryState>();
const root = document.getElementById('app') ?? document.body.appendChild(h('div', { id: 'app' }));
/**
 * The state a restored panel reopens on. Whatever VS Code hands back (an older version's shape, nothing at
 * all) gives a view to draw: a panel restored after a window reload must never stay blank.
 */
function restoredState(saved: unknown): TrajectoryState {
  const s = (typeof saved === 'object' && saved !== null ? saved : {}) as Partial<TrajectoryState>;
  const v = (typeof s.view === 'object' && s.view !== null ? s.view : {}) as Partial<TrajectoryView> & { rolloutId?: unknown };
  const view: TrajectoryView =
    v.kind === 'rollout' && typeof v.rolloutId === 'string' ? (v as TrajectoryView) : v.kind === 'group' ? (v as TrajectoryView) : { kind: 'rollouts' };
  return { view, filter: typeof s.filter === 'object' && s.filter !== null ? s.filter : {} };
}
let state: TrajectoryState = restoredState(host.state);
let renderToken = 0;
/** What the rollout view last drew, to skip live redraws that would change nothing. */
let shownSignature = '';

const openCode = (filepath: string, lineno: number | null, symbol?: string): void => host.command(P.openCode, { filepath, lineno, symbol });

function loading(): void {
  mount(root, h('div', { class: 'loading' }, h('vscode-progress-ring', {}), 'Loading…'));
}
const startDaemon = (): void => host.command(P.startDaemon, {});
function failed(what: string, err: unknown): void {
  mount(
    root,
    errorState(`Could not load ${what}: ${(err as Error).message}`, {
      retry: () => void render(),
      startDaemon,
      more: [{ label: 'Back to rollouts', run: () => go({ kind: 'rollouts' }) }],
    }),
  );
}

function go(view: TrajectoryView): void {
  state = { ...state, view };
  host.state = state;
  void render();
}

/** Statuses after which a rollout no longer changes (protocol/store.ts TERMINAL_ROLLOUT_STATUSES). */
const ENDED = new Set(['succeeded', 'failed', 'cancelled']);
const LIVE_REFRESH_MS = 1500;

/** Draws the current view; whatever goes wrong shows the error state (with Start Daemon and Retry), never a blank page. */
function render(quiet = false): Promise<void> {
  return draw(quiet).catch((err: unknown) => failed('this view', err));
}

/** Draws the current view; `quiet` redraws in place (no loading screen, same scroll) for live updates. */
async function draw(quiet: boolean): Promise<void> {
  const token = ++renderToken;
  const view = state.view;
  document.body.dataset.view = view.kind;
  if (view.kind === 'rollouts') {
    renderRolloutsView(root, state.filter, {
      load: (filter: RolloutFilter) => host.request(P.listRollouts, filter),
      setFilter: (filter) => {
        state = { ...state, filter };
        host.state = state;
        void render();
      },
      openRollout: (rolloutId) => go({ kind: 'rollout', rolloutId }),
      startDaemon,
    });
    return;
  }
  if (!quiet) loading();
  if (view.kind === 'rollout') {
    try {
      const detail = await host.request(P.getRollout, { rolloutId: view.rolloutId, attemptId: view.attemptId });
      if (token !== renderToken) return;
      const scroll = window.scrollY;
      // A live poll that finds nothing new leaves the page alone (open folds, hover, selection).
      const signature = [detail.rollout.status, detail.attemptId, detail.spans.length, detail.transitions.length].join('|');
      const unchanged = quiet && signature === shownSignature;
      shownSignature = signature;
      if (!unchanged)
        renderRolloutView(
          root,
          detail,
          { tab: view.tab ?? 'timeline', selectedSpanId: view.selectedSpanId },
          {
            back: () => go({ kind: 'rollouts' }),
            selectAttempt: (attemptId) => go({ ...view, attemptId, selectedSpanId: undefined }),
            saveViewState: (s) => {
              state = { ...state, view: { ...view, ...s } };
              host.state = state;
            },
            openCode,
            openGroup: (rolloutId) => go({ kind: 'group', rolloutId }),
          },
        );
      if (quiet && !unchanged) window.scrollTo(0, scroll);
      // A rollout still running grows span by span: follow it until it ends.
      if (!ENDED.has(detail.rollout.status))
        setTimeout(() => {
          if (token === renderToken) void render(true);
        }, LIVE_REFRESH_MS);
    } catch (err) {
      if (token !== renderToken) return;
      if (!quiet) failed(`rollout ${view.rolloutId}`, err);
      else
        setTimeout(() => {
          if (token === renderToken) void render(true);
        }, LIVE_REFRESH_MS * 2); // daemon restarting: keep following
    }
    return;
  }
  try {
    const page = await host.request(P.getGroups, { runId: view.runId, step: view.step, rolloutId: view.rolloutId });
    if (token !== renderToken) return;
    renderGroupView(root, page, {
      back: () => go({ kind: 'rollouts' }),
      openRollout: (rolloutId, spanId) => go({ kind: 'rollout', rolloutId, selectedSpanId: spanId }),
      selectStep: (step) => go({ kind: 'group', runId: page.runId ?? undefined, step }),
      openDashboard: (runId) => host.command(P.openDashboard, { runId }),
      openCode,
    });
  } catch (err) {
    if (token === renderToken) failed('the GRPO groups', err);
  }
}

host.onNotification(P.show, ({ view, filter }) => {
  if (filter) state = { ...state, filter };
  go(view);
});
host.onNotification(P.changed, ({ rolloutIds }) => {
  const v = state.view;
  if (v.kind === 'rollouts' || (v.kind === 'rollout' && rolloutIds.includes(v.rolloutId))) void render(true);
});
// The daemon is back (started, restarted, attached): a view showing an error reloads by itself.
host.onNotification(P.state, ({ up }) => {
  if (up && shouldReload(root, host.waiting)) void render();
});
void render();
host.ready();
