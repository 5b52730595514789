/**
 * The rollouts table: filters (status, mode, agent, resources version) above a vscode-table of rollouts,
 * newest first, paged with "Load more". A click on a row opens that rollout.
 */
import type { RolloutStatus } from '../../protocol/store.js';
import type { RolloutFilter, RolloutPage, RolloutRow } from '../../protocol/webview-trajectory.js';
import { fmtDuration, fmtNumber, fmtTime, h, icon, mount, preview, shortId, signClass } from '../shared/dom.js';

export interface RolloutsViewActions {
  load(filter: RolloutFilter): Promise<RolloutPage>;
  setFilter(filter: RolloutFilter): void;
  openRollout(rolloutId: string): void;
}

function select(label: string, name: string, current: string, options: [string, string][], onChange: (v: string) => void): HTMLElement {
  const sel = h('vscode-single-select', { 'data-filter': name, 'aria-label': label },
    ...options.map(([value, text]) => h('vscode-option', { value, selected: value === current }, text)));
  sel.addEventListener('change', () => onChange((sel as unknown as { value: string }).value));
  return h('label', { class: 'filter' }, h('span', { class: 'filter-label' }, label), sel);
}

export function statusPill(status: string): HTMLElement {
  return h('span', { class: `pill status-${status}` }, status);
}

function row(item: RolloutRow, open: (id: string) => void): HTMLElement {
  const r = item.rollout;
  const duration = r.endedAt !== null ? r.endedAt - r.createdAt : null;
  const tr = h('vscode-table-row', { class: 'rollout-row', 'data-rollout-id': r.id, tabindex: 0 },
    h('vscode-table-cell', { class: 'mono', title: r.id }, shortId(r.id)),
    h('vscode-table-cell', {}, statusPill(r.status)),
    h('vscode-table-cell', {}, r.mode),
    h('vscode-table-cell', { title: r.agent ?? '' }, r.agent ? r.agent.split(/[\\/]/).pop()! : '—'),
    h('vscode-table-cell', { class: 'mono' }, item.resourcesVersion === null ? '—' : `v${item.resourcesVersion}`),
    h('vscode-table-cell', { class: `num reward ${signClass(item.reward)}` }, fmtNumber(item.reward)),
    h('vscode-table-cell', { class: 'num' }, String(r.attemptCount)),
    h('vscode-table-cell', { class: 'num' }, fmtDuration(duration)),
    h('vscode-table-cell', { title: JSON.stringify(r.input) }, preview(r.input, 60)),
    h('vscode-table-cell', { class: 'muted' }, fmtTime(r.createdAt)),
  );
  tr.addEventListener('click', () => open(r.id));
  tr.addEventListener('keydown', (e) => { if ((e as KeyboardEvent).key === 'Enter') open(r.id); });
  return tr;
}

const COLUMNS: [string, string][] = [
  ['Rollout', '11%'], ['Status', '9%'], ['Mode', '6%'], ['Agent', '15%'], ['Res.', '5%'], ['Reward', '7%'],
  ['Att.', '5%'], ['Duration', '7%'], ['Input', '21%'], ['Created', '14%'],
];

function table(items: RolloutRow[], open: (id: string) => void): HTMLElement {
  return h('vscode-table', { zebra: true, 'bordered-rows': true, resizable: true, class: 'rollouts-table', columns: JSON.stringify(COLUMNS.map((c) => c[1])) },
    h('vscode-table-header', { slot: 'header' }, ...COLUMNS.map(([t]) => h('vscode-table-header-cell', { class: ['Reward', 'Att.', 'Duration'].includes(t) ? 'num' : null }, t))),
    h('vscode-table-body', { slot: 'body' }, ...items.map((item) => row(item, open))));
}

export function renderRolloutsView(root: HTMLElement, filter: RolloutFilter, actions: RolloutsViewActions): void {
  const tableBox = h('div', { class: 'table-box' });
  const items: RolloutRow[] = [];
  const count = h('vscode-badge', { variant: 'counter', class: 'count' }, '0');
  const more = h('vscode-button', { secondary: true, class: 'load-more', hidden: true }, 'Load more');
  const status = h('div', { class: 'empty-state', hidden: true });
  let cursor: string | null = null;

  const choose = (key: keyof RolloutFilter, value: string): void => {
    const next: RolloutFilter = { ...filter };
    if (value === '') delete next[key];
    else if (key === 'status') next.status = [value as RolloutStatus];
    else if (key === 'resourcesVersion') next.resourcesVersion = Number(value);
    else (next as Record<string, unknown>)[key] = value;
    actions.setFilter(next);
  };
  const filters = h('div', { class: 'filters' });

  const load = async (append: boolean): Promise<void> => {
    status.hidden = true;
    try {
      const page = await actions.load({ ...filter, cursor: append && cursor ? cursor : undefined });
      if (!append) {
        items.length = 0;
        mount(filters,
          select('Status', 'status', filter.status?.[0] ?? '', [['', 'All'], ...page.statuses.map((s): [string, string] => [s, s])], (v) => choose('status', v)),
          select('Mode', 'mode', filter.mode ?? '', [['', 'All'], ...page.modes.map((m): [string, string] => [m, m])], (v) => choose('mode', v)),
          select('Agent', 'agent', filter.agent ?? '', [['', 'All'], ...page.agents.map((a): [string, string] => [a, a])], (v) => choose('agent', v)),
          select('Resources', 'resourcesVersion', filter.resourcesVersion === undefined ? '' : String(filter.resourcesVersion),
            [['', 'All'], ...page.resourcesVersions.map((v): [string, string] => [String(v), `v${v}`])], (v) => choose('resourcesVersion', v)),
        );
      }
      items.push(...page.items);
      // vscode-table sizes its body cells when it is built: build it with its rows, not before.
      mount(tableBox, items.length ? table(items, actions.openRollout) : null);
      cursor = page.nextCursor;
      count.textContent = `${items.length}${cursor ? '+' : ''}`;
      more.hidden = !cursor;
      if (items.length === 0) {
        status.hidden = false;
        mount(status, icon('inbox'), h('p', {}, 'No rollouts match these filters.'),
          h('p', { class: 'muted' }, 'Run one with "Agent Lightning: Run Rollout", or `agl rollout <agent> --task ...` in a terminal.'));
      }
    } catch (err) {
      status.hidden = false;
      mount(status, icon('error'), h('p', {}, `Could not load rollouts: ${(err as Error).message}`));
    }
  };
  more.addEventListener('click', () => void load(true));

  const refresh = h('vscode-toolbar-button', { icon: 'refresh', label: 'Refresh', title: 'Refresh', class: 'refresh' });
  refresh.addEventListener('click', () => void load(false));

  mount(root,
    h('header', { class: 'view-header' },
      h('h1', {}, icon('list-tree'), ' Rollouts ', count),
      h('div', { class: 'spacer' }),
      refresh),
    filters,
    tableBox,
    status,
    h('div', { class: 'footer' }, more),
  );
  void load(false);
}
