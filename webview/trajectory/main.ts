/**
 * Entry of the trajectory viewer webview (bundled to dist/webview/trajectory.js): routes between the
 * rollouts table, one rollout (timeline / states) and the GRPO group view, keeps the current view in
 * getState/setState, and asks the host for data with typed requests (protocol/webview-trajectory.ts).
 *
 * Back returns to where a view was opened from, as it was: a rollout opened from a group card to that group
 * (its step, scrolled where it was), one opened from the list to the list (its filters, search and sort are
 * the panel's filter; its scroll and current row come back with it). The views opened from one another are
 * kept on a stack in the panel state; a view the extension shows starts it afresh. Back is also Backspace
 * (outside a text field) and Alt+Left.
 */
import '@vscode-elements/elements/dist/main.js';
import '@vscode/codicons/dist/codicon.css';
import '../shared/theme.css';
import './trajectory.css';
import { TrajectoryProtocol as P, type RolloutFilter, type TrajectoryState, type TrajectoryView } from '../../protocol/webview-trajectory.js';
import { HostConnection } from '../shared/host.js';
import { h, mount, shortId } from '../shared/dom.js';
import { errorState, shouldReload } from '../shared/recovery.js';
import { renderGroupView } from './group-view.js';
import { renderRolloutView } from './rollout-view.js';
import { renderRolloutsView, type ListPosition } from './rollouts-view.js';

/** A view Back returns to, and where the user was in it. */
interface Return {
  view: TrajectoryView;
  /** The page's scroll (a rollout, the groups). */
  scrollY?: number;
  /** The rollouts list's scroll and current row. */
  list?: ListPosition;
}
/** What the panel keeps: the view and the list's filter, and the views Back returns to (the next one last). */
interface ViewerState extends TrajectoryState {
  back: Return[];
}
/** Views kept for Back: enough for any way through rollouts and groups, bounded in the panel state. */
const MAX_BACK = 20;

const host = new HostConnection<ViewerState>();
const root = document.getElementById('app') ?? document.body.appendChild(h('div', { id: 'app' }));

/** A view to draw from whatever was saved; null when it is not one. */
function viewOf(saved: unknown): TrajectoryView | null {
  const v = (typeof saved === 'object' && saved !== null ? saved : {}) as Partial<TrajectoryView> & { rolloutId?: unknown };
  if (v.kind === 'rollout') return typeof v.rolloutId === 'string' ? (v as TrajectoryView) : null;
  return v.kind === 'group' || v.kind === 'rollouts' ? (v as TrajectoryView) : null;
}
/**
 * The state a restored panel reopens on. Whatever VS Code hands back (an older version's shape, nothing at
 * all) gives a view to draw: a panel restored after a window reload must never stay blank.
 */
function restoredState(saved: unknown): ViewerState {
  const s = (typeof saved === 'object' && saved !== null ? saved : {}) as Partial<ViewerState>;
  const back: Return[] = [];
  for (const r of Array.isArray(s.back) ? (s.back as Partial<Return>[]) : []) {
    const view = typeof r === 'object' && r !== null ? viewOf(r.view) : null;
    if (!view) continue;
    const list =
      r.list && Number.isFinite(r.list.scrollTop) && Number.isInteger(r.list.active) ? { scrollTop: r.list.scrollTop, active: r.list.active } : undefined;
    back.push({ view, scrollY: Number.isFinite(r.scrollY) ? r.scrollY : undefined, list });
  }
  return { view: viewOf(s.view) ?? { kind: 'rollouts' }, filter: typeof s.filter === 'object' && s.filter !== null ? s.filter : {}, back };
}
let state: ViewerState = restoredState(host.state);
/** Set by Back for the draw it starts: where to put the user in the view it returns to. */
let returning: Return | null = null;
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
      more: [{ label: backLabel(), run: back }],
    }),
  );
}

/** Shows `view` in place of the current one (another attempt, another step): Back still goes where it went. */
function go(view: TrajectoryView): void {
  state = { ...state, view };
  host.state = state;
  void render();
}

/** Opens `view` from the current one, which Back returns to with the user where `from` says (by default the page's scroll). */
function open(view: TrajectoryView, from: Omit<Return, 'view'> = { scrollY: window.scrollY }): void {
  state = { ...state, back: [...state.back, { ...from, view: state.view }].slice(-MAX_BACK) };
  go(view);
}

/** Back to the view this one was opened from; the rollouts list when there is none. */
function back(): void {
  const to: Return = state.back[state.back.length - 1] ?? { view: { kind: 'rollouts' } };
  state = { ...state, back: state.back.slice(0, -1) };
  returning = to;
  go(to.view);
}

/** What Back returns to, for its button. */
function backLabel(): string {
  const to = state.back[state.back.length - 1]?.view;
  if (!to || to.kind === 'rollouts') return 'Back to rollouts';
  return to.kind === 'group' ? 'Back to the GRPO group' : `Back to rollout ${shortId(to.rolloutId)}`;
}

/**
 * Scrolls the page back to `y` once the view's elements have drawn themselves: vscode-elements render a
 * moment after they are attached, and a scroll before that lands short of where the user was.
 */
async function scrollOnceDrawn(y: number, token: number): Promise<void> {
  const drawing = [...root.querySelectorAll('*')].map((e) => (e as { updateComplete?: Promise<unknown> }).updateComplete).filter(Boolean);
  await Promise.all(drawing);
  if (token === renderToken) window.scrollTo(0, y);
}

/** Whether a key event comes from a place that types text (where Backspace deletes, not goes back). */
function inTextField(e: Event): boolean {
  return e
    .composedPath()
    .some(
      (t) =>
        t instanceof HTMLElement &&
        (t.isContentEditable ||
          /^(TEXTAREA|SELECT|VSCODE-TEXTFIELD|VSCODE-TEXTAREA)$/.test(t.tagName) ||
          (t instanceof HTMLInputElement && !['checkbox', 'radio', 'button', 'submit', 'reset'].includes(t.type))),
    );
}

/** Draws the current view; whatever goes wrong shows the error state (with Start Daemon and Retry), never a blank page. */
function render(quiet = false): Promise<void> {
  return draw(quiet).catch((err: unknown) => failed('this view', err));
}

/** Draws the current view; `quiet` redraws in place (no loading screen, same scroll) for live updates. */
async function draw(quiet: boolean): Promise<void> {
  const token = ++renderToken;
  const view = state.view;
  const to = quiet ? null : returning;
  if (!quiet) returning = null;
  document.body.dataset.view = view.kind;
  if (view.kind === 'rollouts') {
    renderRolloutsView(
      root,
      state.filter,
      {
        load: (filter: RolloutFilter) => host.request(P.listRollouts, filter),
        setFilter: (filter) => {
          state = { ...state, filter };
          host.state = state;
          void render();
        },
        openRollout: (rolloutId, from) => open({ kind: 'rollout', rolloutId }, { list: from }),
        startDaemon,
      },
      to?.list,
    );
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
            back,
            backLabel: backLabel(),
            selectAttempt: (attemptId) => go({ ...view, attemptId, selectedSpanId: undefined }),
            saveViewState: (s) => {
              state = { ...state, view: { ...view, ...s } };
              host.state = state;
            },
            openCode,
            openGroup: (rolloutId) => open({ kind: 'group', rolloutId }),
          },
        );
      if (quiet && !unchanged) window.scrollTo(0, scroll);
      if (to?.scrollY) void scrollOnceDrawn(to.scrollY, token);
      // A rollout still running grows span by span: the host says when its spans land (P.changed), and it is read again.
    } catch (err) {
      if (token !== renderToken) return;
      // Quietly following (the daemon restarting): its hello brings P.changed with `all`, and this reads again.
      if (!quiet) failed(`rollout ${view.rolloutId}`, err);
    }
    return;
  }
  try {
    const page = await host.request(P.getGroups, { runId: view.runId, step: view.step, rolloutId: view.rolloutId });
    if (token !== renderToken) return;
    renderGroupView(root, page, {
      back,
      backLabel: backLabel(),
      openRollout: (rolloutId, spanId) => open({ kind: 'rollout', rolloutId, selectedSpanId: spanId }),
      selectStep: (step) => go({ kind: 'group', runId: page.runId ?? undefined, step }),
      openDashboard: (runId) => host.command(P.openDashboard, { runId }),
      openCode,
    });
    if (to?.scrollY) void scrollOnceDrawn(to.scrollY, token);
  } catch (err) {
    if (token === renderToken) failed('the GRPO groups', err);
  }
}

// Back by keyboard, as in a browser. Caught on the way down: the span tree would take Alt+Left as ArrowLeft.
window.addEventListener(
  'keydown',
  (e) => {
    if (state.view.kind === 'rollouts' || e.repeat || e.ctrlKey || e.metaKey || e.shiftKey) return;
    const backspace = e.key === 'Backspace' && !e.altKey && !inTextField(e);
    if (!backspace && !(e.key === 'ArrowLeft' && e.altKey)) return;
    e.preventDefault();
    e.stopPropagation();
    back();
  },
  true,
);

// The extension shows a view (a CodeLens, the dashboard, a rollout just run): Back from it goes to the list.
host.onNotification(P.show, ({ view, filter }) => {
  state = { ...state, back: [], ...(filter ? { filter } : {}) };
  go(view);
});
host.onNotification(P.changed, ({ rolloutIds, all }) => {
  const v = state.view;
  if (v.kind === 'rollouts' || (v.kind === 'rollout' && (all || rolloutIds.includes(v.rolloutId)))) void render(true);
});
// The daemon is back (started, restarted, attached): a view showing an error reloads by itself.
host.onNotification(P.state, ({ up }) => {
  if (up && shouldReload(root, host.waiting)) void render();
});
void render();
host.ready();
