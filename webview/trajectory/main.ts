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
import {
  TrajectoryProtocol as P,
  type DatasetAdded,
  type DatasetTarget,
  type RolloutFilter,
  type TrajectoryState,
  type TrajectoryView,
} from '../../protocol/webview-trajectory.js';
import { HostConnection } from '../shared/host.js';
import { h, mount, shortId } from '../shared/dom.js';
import { errorState, shouldReload } from '../shared/recovery.js';
import { defaultGroupPrefs, renderGroupView } from './group-view.js';
import { renderRolloutView } from './rollout-view.js';
import { RolloutsList, type ListPosition } from './rollouts-view.js';
import type { SpanTreeLayout } from './span-tree.js';

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

/** The viewer of one panel: its state (saved in the panel), where Back goes, and what its views keep across redraws. */
class TrajectoryViewer {
  private state: ViewerState;
  /** Set by Back for the draw it starts: where to put the user in the view it returns to. */
  private returning: Return | null = null;
  private renderToken = 0;
  /** What the rollout view last drew, to skip live redraws that would change nothing. */
  private shownSignature = '';
  private readonly rollouts: RolloutsList;
  /** The span tree's name column, as the user set it. */
  private readonly treeLayout: SpanTreeLayout = { nameColumnPx: null };
  /** The group view's sort, merge and folds. */
  private readonly groupPrefs = defaultGroupPrefs();

  constructor(
    private readonly host: HostConnection<ViewerState>,
    private readonly root: HTMLElement,
  ) {
    this.state = restoredState(host.state);
    this.rollouts = new RolloutsList(root, {
      load: (filter: RolloutFilter) => host.request(P.listRollouts, filter),
      setFilter: (filter) => {
        this.state = { ...this.state, filter };
        host.state = this.state;
        void this.render();
      },
      openRollout: (rolloutId, from) => this.open({ kind: 'rollout', rolloutId }, { list: from }),
      startDaemon: this.startDaemon,
      addToDataset: this.addToDataset,
    });
  }

  private readonly openCode = (filepath: string, lineno: number | null, symbol?: string): void => this.host.command(P.openCode, { filepath, lineno, symbol });
  private readonly startDaemon = (): void => this.host.command(P.startDaemon, {});
  private readonly addToDataset = (target: DatasetTarget): Promise<DatasetAdded | null> => this.host.request(P.addToDataset, target);
  private readonly back = (): void => {
    const to: Return = this.state.back[this.state.back.length - 1] ?? { view: { kind: 'rollouts' } };
    this.state = { ...this.state, back: this.state.back.slice(0, -1) };
    this.returning = to;
    this.go(to.view);
  };

  private loading(): void {
    mount(this.root, h('div', { class: 'loading' }, h('vscode-progress-ring', {}), 'Loading…'));
  }

  private failed(what: string, err: unknown): void {
    mount(
      this.root,
      errorState(`Could not load ${what}: ${(err as Error).message}`, {
        retry: () => void this.render(),
        startDaemon: this.startDaemon,
        more: [{ label: this.backLabel(), run: this.back }],
      }),
    );
  }

  /** Shows `view` in place of the current one (another attempt, another step): Back still goes where it went. */
  go(view: TrajectoryView): void {
    this.state = { ...this.state, view };
    this.host.state = this.state;
    void this.render();
  }

  /** Opens `view` from the current one, which Back returns to with the user where `from` says (by default the page's scroll). */
  private open(view: TrajectoryView, from: Omit<Return, 'view'> = { scrollY: window.scrollY }): void {
    this.state = { ...this.state, back: [...this.state.back, { ...from, view: this.state.view }].slice(-MAX_BACK) };
    this.go(view);
  }

  /** What Back returns to, for its button. */
  private backLabel(): string {
    const to = this.state.back[this.state.back.length - 1]?.view;
    if (!to || to.kind === 'rollouts') return 'Back to rollouts';
    return to.kind === 'group' ? 'Back to the GRPO group' : `Back to rollout ${shortId(to.rolloutId)}`;
  }

  /**
   * Scrolls the page back to `y` once the view's elements have drawn themselves: vscode-elements render a
   * moment after they are attached, and a scroll before that lands short of where the user was.
   */
  private async scrollOnceDrawn(y: number, token: number): Promise<void> {
    const drawing = [...this.root.querySelectorAll('*')].map((e) => (e as { updateComplete?: Promise<unknown> }).updateComplete).filter(Boolean);
    await Promise.all(drawing);
    if (token === this.renderToken) window.scrollTo(0, y);
  }

  /** Draws the current view; whatever goes wrong shows the error state (with Start Daemon and Retry), never a blank page. */
  render(quiet = false): Promise<void> {
    return this.draw(quiet).catch((err: unknown) => this.failed('this view', err));
  }

  /** Draws the current view; `quiet` redraws in place (no loading screen, same scroll) for live updates. */
  private async draw(quiet: boolean): Promise<void> {
    const token = ++this.renderToken;
    const view = this.state.view;
    const to = quiet ? null : this.returning;
    if (!quiet) this.returning = null;
    document.body.dataset.view = view.kind;
    if (view.kind === 'rollouts') {
      this.rollouts.render(this.state.filter, to?.list);
      return;
    }
    if (!quiet) this.loading();
    if (view.kind === 'rollout') await this.drawRollout(view, quiet, to, token);
    else await this.drawGroups(view, to, token);
  }

  private async drawRollout(view: Extract<TrajectoryView, { kind: 'rollout' }>, quiet: boolean, to: Return | null, token: number): Promise<void> {
    try {
      const detail = await this.host.request(P.getRollout, { rolloutId: view.rolloutId, attemptId: view.attemptId });
      if (token !== this.renderToken) return;
      const scroll = window.scrollY;
      // A live poll that finds nothing new leaves the page alone (open folds, hover, selection).
      const signature = [detail.rollout.status, detail.attemptId, detail.spans.length, detail.transitions.length].join('|');
      const unchanged = quiet && signature === this.shownSignature;
      this.shownSignature = signature;
      if (!unchanged)
        renderRolloutView(
          this.root,
          detail,
          { tab: view.tab ?? 'timeline', selectedSpanId: view.selectedSpanId },
          {
            back: this.back,
            backLabel: this.backLabel(),
            selectAttempt: (attemptId) => this.go({ ...view, attemptId, selectedSpanId: undefined }),
            saveViewState: (s) => {
              this.state = { ...this.state, view: { ...view, ...s } };
              this.host.state = this.state;
            },
            openCode: this.openCode,
            openGroup: (rolloutId) => this.open({ kind: 'group', rolloutId }),
            addToDataset: this.addToDataset,
            labelRollout: (target) => this.host.request(P.labelRollout, target),
            filterByPromptVersion: (promptVersion) => {
              this.state = { ...this.state, filter: { promptVersion } };
              this.open({ kind: 'rollouts' });
            },
            filterByModel: (servedBy) => {
              this.state = { ...this.state, filter: { servedBy } };
              this.open({ kind: 'rollouts' });
            },
          },
          this.treeLayout,
        );
      if (quiet && !unchanged) window.scrollTo(0, scroll);
      if (to?.scrollY) void this.scrollOnceDrawn(to.scrollY, token);
      // A rollout still running grows span by span: the host says when its spans land (P.changed), and it is read again.
    } catch (err) {
      if (token !== this.renderToken) return;
      // Quietly following (the daemon restarting): its hello brings P.changed with `all`, and this reads again.
      if (!quiet) this.failed(`rollout ${view.rolloutId}`, err);
    }
  }

  private async drawGroups(view: Extract<TrajectoryView, { kind: 'group' }>, to: Return | null, token: number): Promise<void> {
    try {
      const page = await this.host.request(P.getGroups, { runId: view.runId, step: view.step, rolloutId: view.rolloutId });
      if (token !== this.renderToken) return;
      renderGroupView(
        this.root,
        page,
        {
          back: this.back,
          backLabel: this.backLabel(),
          openRollout: (rolloutId, spanId) => this.open({ kind: 'rollout', rolloutId, selectedSpanId: spanId }),
          selectStep: (step) => this.go({ kind: 'group', runId: page.runId ?? undefined, step }),
          openDashboard: (runId) => this.host.command(P.openDashboard, { runId }),
          openCode: this.openCode,
        },
        this.groupPrefs,
      );
      if (to?.scrollY) void this.scrollOnceDrawn(to.scrollY, token);
    } catch (err) {
      if (token === this.renderToken) this.failed('the GRPO groups', err);
    }
  }

  /** Back by keyboard, as in a browser: Backspace (outside a text field) and Alt+Left. */
  onKey(e: KeyboardEvent): void {
    if (this.state.view.kind === 'rollouts' || e.repeat || e.ctrlKey || e.metaKey || e.shiftKey) return;
    const backspace = e.key === 'Backspace' && !e.altKey && !inTextField(e);
    if (!backspace && !(e.key === 'ArrowLeft' && e.altKey)) return;
    e.preventDefault();
    e.stopPropagation();
    this.back();
  }

  /** The extension shows a view (a CodeLens, the dashboard, a rollout just run): Back from it goes to the list. */
  show(view: TrajectoryView, filter: RolloutFilter | undefined): void {
    this.state = { ...this.state, back: [], ...(filter ? { filter } : {}) };
    this.go(view);
  }

  /** Rollouts changed: the list, or the rollout shown when it is one of them, is drawn again in place. */
  changed(rolloutIds: string[], all: boolean | undefined): void {
    const v = this.state.view;
    if (v.kind === 'rollouts' || (v.kind === 'rollout' && (all || rolloutIds.includes(v.rolloutId)))) void this.render(true);
  }
}

const host = new HostConnection<ViewerState>();
const root = document.getElementById('app') ?? document.body.appendChild(h('div', { id: 'app' }));
const viewer = new TrajectoryViewer(host, root);
// Caught on the way down: the span tree would take Alt+Left as ArrowLeft.
window.addEventListener('keydown', (e) => viewer.onKey(e), true);
host.onNotification(P.show, ({ view, filter }) => viewer.show(view, filter));
host.onNotification(P.changed, ({ rolloutIds, all }) => viewer.changed(rolloutIds, all));
// The daemon is back (started, restarted, attached): a view showing an error reloads by itself.
host.onNotification(P.state, ({ up }) => {
  if (up && shouldReload(root, host.waiting)) void viewer.render();
});
void viewer.render();
host.ready();
