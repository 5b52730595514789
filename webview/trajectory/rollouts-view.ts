/**
 * The rollouts table: filters (status, mode, agent, resources version) above a vscode-table of rollouts,
 * newest first, paged with "Load more". A click on a row opens that rollout.
 */
import type { RolloutStatus } from '../../protocol/store.js';
import type { RolloutFilter, RolloutPage, RolloutRow } from '../../protocol/webview-trajectory.js';
import { fmtDuration, fmtNumber, fmtTime, h, icon, mount, preview, shortId, signClass } from '../shared/dom.js';
import { errorState } from '../shared/recovery.js';

export interface RolloutsViewActions {
  load(filter: RolloutFilter): Promise<RolloutPage>;
  setFilter(filter: RolloutFilter): void;
  openRollout(rolloutId: string): void;
  /** The error state's "Start Daemon" (shared/recovery.ts). */
  startDaemon(): void;
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

/** Table columns: width in % when the panel is wide, and when narrow (a panel beside the editor) or hidden. */
interface Column { title: string; wide: number; narrow?: number; num?: boolean; cell: (item: RolloutRow) => HTMLElement }
const NARROW_BELOW_PX = 820;
const COLUMNS: Column[] = [
  { title: 'Rollout', wide: 11, narrow: 22, cell: ({ rollout: r }) => h('vscode-table-cell', { class: 'mono', title: r.id }, shortId(r.id)) },
  { title: 'Status', wide: 9, narrow: 20, cell: ({ rollout: r }) => h('vscode-table-cell', {}, statusPill(r.status)) },
  { title: 'Mode', wide: 6, cell: ({ rollout: r }) => h('vscode-table-cell', {}, r.mode) },
  { title: 'Agent', wide: 15, cell: ({ rollout: r }) => h('vscode-table-cell', { title: r.agent ?? '' }, r.agent ? r.agent.split(/[\\/]/).pop()! : '—') },
  { title: 'Res.', wide: 5, cell: (i) => h('vscode-table-cell', { class: 'mono' }, i.resourcesVersion === null ? '—' : `v${i.resourcesVersion}`) },
  { title: 'Reward', wide: 7, narrow: 13, num: true, cell: (i) => h('vscode-table-cell', { class: `num reward ${signClass(i.reward)}` }, fmtNumber(i.reward)) },
  { title: 'Att.', wide: 5, num: true, cell: ({ rollout: r }) => h('vscode-table-cell', { class: 'num' }, String(r.attemptCount)) },
  { title: 'Duration', wide: 7, narrow: 15, num: true,
    cell: ({ rollout: r }) => h('vscode-table-cell', { class: 'num' }, fmtDuration(r.endedAt !== null ? r.endedAt - r.createdAt : null)) },
  { title: 'Input', wide: 21, narrow: 30, cell: ({ rollout: r }) => h('vscode-table-cell', { title: JSON.stringify(r.input) }, preview(r.input, 60)) },
  { title: 'Created', wide: 14, cell: ({ rollout: r }) => h('vscode-table-cell', { class: 'muted' }, fmtTime(r.createdAt)) },
];

function row(item: RolloutRow, columns: Column[], open: (id: string) => void): HTMLElement {
  const id = item.rollout.id;
  const tr = h('vscode-table-row', { class: 'rollout-row', 'data-rollout-id': id, tabindex: 0 }, ...columns.map((c) => c.cell(item)));
  tr.addEventListener('click', () => open(id));
  tr.addEventListener('keydown', (e) => { if ((e as KeyboardEvent).key === 'Enter') open(id); });
  return tr;
}

function table(items: RolloutRow[], narrow: boolean, open: (id: string) => void): HTMLElement {
  const columns = narrow ? COLUMNS.filter((c) => c.narrow) : COLUMNS;
  return h('vscode-table', { zebra: true, 'bordered-rows': true, resizable: true, class: `rollouts-table${narrow ? ' narrow' : ''}`,
    columns: JSON.stringify(columns.map((c) => `${narrow ? c.narrow : c.wide}%`)) },
  h('vscode-table-header', { slot: 'header' }, ...columns.map((c) => h('vscode-table-header-cell', { class: c.num ? 'num' : null }, c.title))),
  h('vscode-table-body', { slot: 'body' }, ...items.map((item) => row(item, columns, open))));
}

export function renderRolloutsView(root: HTMLElement, filter: RolloutFilter, actions: RolloutsViewActions): void {
  const tableBox = h('div', { class: 'table-box' });
  const items: RolloutRow[] = [];
  let narrow = false;
  const drawTable = (): void => {
    narrow = root.clientWidth > 0 && root.clientWidth < NARROW_BELOW_PX;
    mount(tableBox, items.length ? table(items, narrow, actions.openRollout) : null);
  };
  // The panel is often put beside the editor: rebuild the table when it crosses the narrow width.
  const resize = new ResizeObserver(() => {
    if (!tableBox.isConnected) { resize.disconnect(); return; } // another view replaced this one
    if ((root.clientWidth > 0 && root.clientWidth < NARROW_BELOW_PX) !== narrow) drawTable();
  });
  resize.observe(root);
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
      drawTable();
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
      mount(status, errorState(`Could not load rollouts: ${(err as Error).message}`, { retry: () => void load(false), startDaemon: actions.startDaemon }));
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
