/**
 * Entry of the compare view (bundled to dist/webview/compare.js): two eval runs side by side (protocol/eval-compare.ts
 * EvalCompareView, assembled by the panel from the runs' records): the baseline and the other run picked on top, what
 * moved (wins, losses, ties, the means, the paired test's p-value and whether the change is significant: the words
 * `agl eval --baseline` prints), then per task both answers and both rewards, filtered to the regressions, the fixes
 * or all; a reward opens its rollout in the trajectory viewer.
 */
import '@vscode-elements/elements/dist/main.js';
import '@vscode/codicons/dist/codicon.css';
import '../shared/theme.css';
import './compare.css';
import type { EvalCompareRow, EvalCompareView, EvalRunInfo } from '../../protocol/eval-compare.js';
import type { EvalTaskResult } from '../../protocol/eval.js';
import { COMPARE_FILTERS, CompareProtocol as P, type CompareFilter, type CompareState } from '../../protocol/webview-compare.js';
import { HostConnection } from '../shared/host.js';
import { fmtNumber, fmtSigned, h, icon, mount, shortId } from '../shared/dom.js';
import { errorState, shouldReload } from '../shared/recovery.js';
import { rowsShown, summaryWords } from './model.js';

const runName = (r: EvalRunInfo) => `${shortId(r.id)} · ${r.version} · ${r.mean === null ? r.status : `mean ${r.mean.toFixed(3)}`}`;
const FILTER_WORDS: Record<CompareFilter, string> = { regressions: 'Regressions', fixes: 'Fixes', all: 'All' };
const CHANGE_LOOK: Record<EvalCompareRow['change'], { icon: string; word: string }> = {
  fix: { icon: 'arrow-up', word: 'fixed' },
  regression: { icon: 'arrow-down', word: 'regressed' },
  same: { icon: 'dash', word: 'same' },
  only: { icon: 'question', word: 'in one run' },
};

class CompareViewer {
  state: CompareState;
  runs: EvalRunInfo[] = [];
  view: EvalCompareView | null = null;
  private readonly header = h('header', { class: 'view-header' });
  private readonly summary = h('div', { class: 'compare-summary', role: 'status' });
  private readonly body = h('div', { class: 'body' });

  constructor(
    private readonly host: HostConnection<CompareState>,
    root: HTMLElement,
  ) {
    this.state = { baseRunId: null, runId: null, filter: 'regressions', ...host.state };
    mount(root, this.header, this.summary, this.body);
  }

  private save(patch: Partial<CompareState>): void {
    this.state = { ...this.state, ...patch };
    this.host.state = this.state;
  }

  private readonly startDaemon = (): void => this.host.command(P.startDaemon, {});

  private picker(label: string, cls: string, selected: string | null, pick: (id: string) => void): HTMLElement {
    const select = h(
      'vscode-single-select',
      { class: `run-select ${cls}`, 'aria-label': label },
      ...this.runs.map((r) => h('vscode-option', { value: r.id, selected: r.id === selected }, runName(r))),
    );
    select.addEventListener('change', () => pick((select as unknown as { value: string }).value));
    return h('label', { class: 'picker' }, h('span', { class: 'muted' }, label), select);
  }

  drawHeader(): void {
    mount(
      this.header,
      h('h1', {}, icon('diff'), ' Compare evaluations'),
      h('div', { class: 'spacer' }),
      this.runs.length ? this.picker('baseline', 'base-select', this.state.baseRunId, (id) => void this.show(id, this.state.runId)) : null,
      this.runs.length ? this.picker('against', 'run-select-after', this.state.runId, (id) => void this.show(this.state.baseRunId, id)) : null,
    );
  }

  private answerCell(t: EvalTaskResult | null): HTMLElement {
    if (!t) return h('td', { class: 'answer missing' }, '—');
    return h('td', { class: `answer ${t.passed ? 'passed' : 'failed'}`, title: t.reason }, t.answer ?? '(no answer)');
  }

  private rewardCell(t: EvalTaskResult | null, side: string): HTMLElement {
    if (!t) return h('td', { class: `reward ${side}` }, '—');
    const rollout = t.rolloutIds[0];
    const mark = t.passed ? icon('pass') : t.errored ? icon('error') : icon('close');
    const text = h('span', {}, mark, ` ${fmtNumber(t.mean)}`);
    if (!rollout) return h('td', { class: `reward ${side}` }, text);
    const open = h('button', { class: 'link', title: `open rollout ${rollout} in the trajectory viewer`, 'data-rollout': rollout }, text);
    open.addEventListener('click', () => this.host.command(P.openRollout, { rolloutId: rollout }));
    return h('td', { class: `reward ${side}` }, open);
  }

  private drawTable(v: EvalCompareView): void {
    const rows = rowsShown(v.rows, this.state.filter);
    const filters = h(
      'div',
      { class: 'filters', role: 'group', 'aria-label': 'Which tasks' },
      ...COMPARE_FILTERS.map((f) => {
        const b = h(
          'vscode-button',
          { 'data-filter': f, secondary: f !== this.state.filter, 'aria-pressed': String(f === this.state.filter) },
          `${FILTER_WORDS[f]} (${rowsShown(v.rows, f).length})`,
        );
        b.addEventListener('click', () => {
          this.save({ filter: f });
          this.drawTable(v);
        });
        return b;
      }),
    );
    const expected = (r: EvalCompareRow) => (r.run ?? r.base)?.expected ?? '(the agent’s own reward)';
    const table = h(
      'table',
      { class: 'compare-table' },
      h(
        'thead',
        {},
        h('tr', {}, ...['task', 'expected', 'baseline answer', 'baseline reward', 'answer', 'reward', 'change'].map((c) => h('th', { scope: 'col' }, c))),
      ),
      h(
        'tbody',
        {},
        ...rows.map((r) =>
          h(
            'tr',
            { class: `change-${r.change}`, 'data-task': r.id },
            h('th', { scope: 'row' }, r.id),
            h('td', { class: 'expected' }, expected(r)),
            this.answerCell(r.base),
            this.rewardCell(r.base, 'before'),
            this.answerCell(r.run),
            this.rewardCell(r.run, 'after'),
            h('td', { class: 'change' }, icon(CHANGE_LOOK[r.change].icon), ` ${CHANGE_LOOK[r.change].word}`),
          ),
        ),
      ),
    );
    const none = rows.length ? null : h('p', { class: 'muted empty-filter' }, `No ${FILTER_WORDS[this.state.filter].toLowerCase()} between these runs.`);
    mount(this.body, filters, none ?? table);
  }

  private draw(v: EvalCompareView): void {
    this.view = v;
    const w = summaryWords(v);
    mount(
      this.summary,
      h(
        'span',
        { class: 'kpi tally' },
        h('b', {}, `${v.comparison.wins} better`),
        ' · ',
        h('b', {}, `${v.comparison.losses} worse`),
        ` · ${v.comparison.ties} tied`,
      ),
      h('span', { class: 'kpi means' }, 'mean ', h('b', {}, w.means), ` (${fmtSigned(v.comparison.mean - v.comparison.baselineMean)})`),
      h('span', { class: `kpi test ${v.comparison.significant ? 'significant' : ''}` }, w.test),
      h('span', { class: 'muted verdict' }, w.verdict),
    );
    this.drawTable(v);
  }

  async show(baseRunId: string | null, runId: string | null): Promise<void> {
    this.save({ baseRunId, runId });
    this.drawHeader();
    if (!baseRunId || !runId) return;
    try {
      const v = await this.host.request(P.getCompare, { baseRunId, runId });
      if (this.state.baseRunId === baseRunId && this.state.runId === runId) this.draw(v);
    } catch (err) {
      mount(this.summary);
      mount(
        this.body,
        errorState(`Could not compare ${runId} with ${baseRunId}: ${(err as Error).message}`, {
          retry: () => void this.show(baseRunId, runId),
          startDaemon: this.startDaemon,
        }),
      );
    }
  }

  async start(): Promise<void> {
    try {
      this.runs = await this.host.request(P.listRuns, {});
    } catch (err) {
      mount(this.body, errorState(`Could not list eval runs: ${(err as Error).message}`, { retry: () => void this.start(), startDaemon: this.startDaemon }));
      return;
    }
    const known = (id: string | null) => id !== null && this.runs.some((r) => r.id === id);
    const finished = this.runs.filter((r) => r.mean !== null);
    // Else the newest two finished runs: the older the baseline.
    const runId = known(this.state.runId) ? this.state.runId : (finished[0]?.id ?? null);
    const baseRunId = known(this.state.baseRunId) ? this.state.baseRunId : (finished.find((r) => r.id !== runId)?.id ?? null);
    if (baseRunId && runId) return this.show(baseRunId, runId);
    this.drawHeader();
    mount(
      this.body,
      h(
        'div',
        { class: 'empty-state' },
        icon('beaker'),
        h('p', {}, finished.length ? 'One finished evaluation so far: compare needs two.' : 'No finished evaluation yet.'),
        h('p', { class: 'muted' }, 'Run a dataset from the Test Explorer (or `agl eval AGENT --data F`) before and after a change; the two runs compare here.'),
      ),
    );
  }
}

const host = new HostConnection<CompareState>();
const root = document.getElementById('app') ?? document.body.appendChild(h('div', { id: 'app' }));
const viewer = new CompareViewer(host, root);
host.onNotification(
  P.show,
  ({ baseRunId, runId }) =>
    void host.request(P.listRuns, {}).then((runs) => {
      viewer.runs = runs;
      void viewer.show(baseRunId, runId);
    }),
);
host.onNotification(P.runsChanged, () => {
  if (!viewer.view) void viewer.start();
  else
    void host.request(P.listRuns, {}).then((runs) => {
      viewer.runs = runs;
      viewer.drawHeader();
    });
});
host.onNotification(P.state, ({ up }) => {
  if (up && shouldReload(root, host.waiting)) void viewer.start();
});
void viewer.start();
host.ready();
