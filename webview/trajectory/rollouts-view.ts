/**
 * The rollouts list at store scale: a search box and filter controls, the active filters as removable chips
 * with how many rollouts they hide, the exact number that match, column headers that sort (click; again to
 * reverse), and a virtualised list (virtual-list.ts) that fetches pages as the user scrolls through all of
 * them. A click (or Enter) on a row opens that rollout. Searching, filtering, sorting and counting happen in
 * the store; this view draws. Rendering again with the same filter refreshes in place (live updates keep the
 * scroll position); with another filter it starts from the top, keeping the focus in the control in use.
 *
 * In a panel beside the editor (the view narrower than NARROW_WIDTH) the question gets the row's width: each
 * row is two lines, the question, status and reward on the first, the rest (id, mode, agent, resources,
 * attempts, duration, created) on a muted second line and whole in its tooltip; the filters fold behind a
 * "Filters (n)" button next to the search box, so the rows start near the top.
 *
 * By keyboard: Tab walks every control in order (search, Filters, the filters when shown, the sort headers, the rows);
 * ArrowDown from the search box goes straight to the rows; arrows, Page keys, Home and End move through them
 * (virtual-list.ts), Enter opens one. Coming back from a rollout (`at`) draws the list
 * at the same scroll with the opened row focused.
 */
import type { RolloutSort, RolloutStatus } from '../../protocol/store.js';
import type { RolloutFilter, RolloutPage, RolloutPageRequest, RolloutRow } from '../../protocol/webview-trajectory.js';
import { fmtDuration, fmtNumber, fmtTime, h, icon, mount, shortId, signClass } from '../shared/dom.js';
import { errorState } from '../shared/recovery.js';
import { activeFilterChips, activeFilterCount } from './filter-chips.js';
import { runStatusPill } from './outcome.js';
import { taskSummary } from './task-summary.js';
import { VirtualList, type ListPosition } from './virtual-list.js';

export type { ListPosition } from './virtual-list.js';

export interface RolloutsViewActions {
  load(request: RolloutPageRequest): Promise<RolloutPage>;
  setFilter(filter: RolloutFilter): void;
  /** `from`: where the list was (scroll, the opened row as the current one), for Back to come back to. */
  openRollout(rolloutId: string, from: ListPosition): void;
  /** The error state's "Start Daemon" (shared/recovery.ts). */
  startDaemon(): void;
}

/** Row heights (trajectory.css): one line, and two in a narrow view. */
const ROW_HEIGHT = 30;
const ROW_HEIGHT_NARROW = 44;
/** Below this width (px, the view's own: the panel less its padding) the list takes its narrow layout. */
const NARROW_WIDTH = 600;
const SEARCH_DEBOUNCE_MS = 300;

/** Columns: a CSS class (widths and which hide when narrow live in trajectory.css) and, when sortable, the sort key. */
interface Column {
  title: string;
  key: string;
  sort?: RolloutSort;
  num?: boolean;
  cell: (item: RolloutRow) => HTMLElement;
}
const cell = (cls: string, title: string | null, ...children: (Node | string)[]) => h('div', { class: `cell ${cls}`, role: 'gridcell', title }, ...children);

function durationTitle(item: RolloutRow): string | null {
  const r = item.rollout;
  if (item.startedAt === null) return 'not started yet';
  const queued = `queued ${fmtDuration(item.startedAt - r.createdAt)} before it`;
  return item.durationMs === null ? `attempt ${r.attemptCount} running; ${queued}` : `attempt ${r.attemptCount} ran ${fmtDuration(item.durationMs)}; ${queued}`;
}
function errorMark(item: RolloutRow): HTMLElement | null {
  if (!item.error && item.errorSpans === 0) return null;
  const text = [item.error, item.errorSpans ? `${item.errorSpans} span${item.errorSpans > 1 ? 's' : ''} with an error` : null].filter(Boolean).join('; ');
  return h('span', { class: 'error-mark', title: text, 'aria-label': text }, icon('error'));
}

const COLUMNS: Column[] = [
  { title: 'Rollout', key: 'id', cell: ({ rollout: r }) => cell('col-id mono', r.id, shortId(r.id)) },
  { title: 'Status', key: 'status', sort: 'status', cell: (i) => cell('col-status', null, runStatusPill(i.rollout.status), errorMark(i) ?? '') },
  { title: 'Mode', key: 'mode', cell: ({ rollout: r }) => cell('col-mode', null, r.mode) },
  { title: 'Agent', key: 'agent', cell: ({ rollout: r }) => cell('col-agent', r.agent ?? '', r.agent ? r.agent.split(/[\\/]/).pop()! : '—') },
  { title: 'Res.', key: 'res', cell: (i) => cell('col-res mono', null, i.resourcesVersion === null ? '—' : `v${i.resourcesVersion}`) },
  { title: 'Reward', key: 'reward', sort: 'reward', num: true, cell: (i) => cell(`col-reward num reward ${signClass(i.reward)}`, null, fmtNumber(i.reward)) },
  { title: 'Att.', key: 'attempts', num: true, cell: ({ rollout: r }) => cell('col-attempts num', null, String(r.attemptCount)) },
  { title: 'Duration', key: 'duration', sort: 'duration', num: true, cell: (i) => cell('col-duration num', durationTitle(i), fmtDuration(i.durationMs)) },
  {
    title: 'Input',
    key: 'input',
    cell: ({ rollout: r }) => {
      const s = taskSummary(r.input);
      return cell('col-input', s.full, s.text);
    },
  },
  { title: 'Created', key: 'created', sort: 'createdAt', cell: ({ rollout: r }) => cell('col-created muted', null, fmtTime(r.createdAt)) },
];

/**
 * The second line of a row in a narrow view: what the hidden columns say, in their order, and all of it
 * spelled out in the tooltip.
 */
function metaCell(item: RolloutRow): HTMLElement {
  const { rollout: r, resourcesVersion, durationMs } = item;
  const agent = r.agent ? r.agent.split(/[\\/]/).pop()! : '—';
  const attempts = `${r.attemptCount} attempt${r.attemptCount === 1 ? '' : 's'}`;
  const res = resourcesVersion === null ? '—' : `v${resourcesVersion}`;
  const title = [
    `rollout ${r.id}`,
    `mode ${r.mode}`,
    `agent ${r.agent ?? 'default'}`,
    `resources ${resourcesVersion === null ? 'unknown' : `v${resourcesVersion}`}`,
    durationTitle(item) ?? attempts,
    `created ${fmtTime(r.createdAt)}`,
  ].join('\n');
  return cell('col-meta muted', title, [shortId(r.id), r.mode, agent, res, attempts, fmtDuration(durationMs), fmtTime(r.createdAt)].join(' · '));
}

function rowOf(item: RolloutRow, index: number, open: (id: string, index: number) => void): HTMLElement {
  const id = item.rollout.id;
  const row = h(
    'div',
    { class: `rollout-row grid-row${index % 2 ? ' odd' : ''}`, role: 'row', 'data-rollout-id': id },
    ...COLUMNS.map((c) => c.cell(item)),
    metaCell(item),
  );
  row.addEventListener('click', () => open(id, index));
  row.addEventListener('keydown', (e) => {
    if ((e as KeyboardEvent).key === 'Enter') open(id, index);
  });
  return row;
}
function placeholderRow(index: number): HTMLElement {
  return h('div', { class: `placeholder-row grid-row${index % 2 ? ' odd' : ''}`, role: 'row' }, h('div', { class: 'cell col-input muted' }, '…'));
}

function select(label: string, name: string, current: string, options: [string, string][], onChange: (v: string) => void): HTMLElement {
  const sel = h(
    'vscode-single-select',
    { 'data-filter': name, 'aria-label': label },
    ...options.map(([value, text]) => h('vscode-option', { value, selected: value === current }, text)),
  );
  sel.addEventListener('change', () => onChange((sel as unknown as { value: string }).value));
  return h('label', { class: 'filter' }, h('span', { class: 'filter-label' }, label), sel);
}
/**
 * Other keys of a text input: `value` is its trimmed text, `commit` reports it now (not after the debounce).
 */
type TextKeys = (e: KeyboardEvent, value: string, commit: () => void) => void;
/** A text input that reports its trimmed value `debounceMs` after typing stops, or at once on Enter. */
function textInput(
  label: string,
  name: string,
  current: string,
  attrs: Record<string, string>,
  onChange: (v: string) => void,
  debounceMs = 0,
  keys?: TextKeys,
): HTMLElement {
  const field = h('vscode-textfield', { 'data-filter': name, 'aria-label': label, value: current, ...attrs });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const value = (): string => (field as unknown as { value: string }).value.trim();
  const fire = () => {
    clearTimeout(timer);
    onChange(value());
  };
  field.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(fire, debounceMs);
  });
  field.addEventListener('keydown', (e) => {
    if ((e as KeyboardEvent).key === 'Enter') fire();
    else keys?.(e as KeyboardEvent, value(), fire);
  });
  return field;
}
function textField(
  label: string,
  name: string,
  current: string,
  attrs: Record<string, string>,
  onChange: (v: string) => void,
  debounceMs = 0,
  keys?: TextKeys,
): HTMLElement {
  return h(
    'label',
    { class: `filter filter-${name}` },
    h('span', { class: 'filter-label' }, label),
    textInput(label, name, current, attrs, onChange, debounceMs, keys),
  );
}

/** Whether the narrow view shows its filters, kept while the panel lives (a redraw for a new filter keeps them open). */
let filtersOpen = false;
/** Set when ArrowDown leaves a search typed and not yet applied: the list drawn for it takes the focus when its rows arrive. */
let focusRowsNext = false;

/** The view drawn into a root, kept so that rendering again can refresh in place. */
interface Shown {
  filter: string;
  list: VirtualList<RolloutRow>;
  element: HTMLElement;
}
const shown = new WeakMap<HTMLElement, Shown>();
/** The filters' choices from the last page: a redraw shows its controls at once (the focus stays in the one in use). */
type Choices = Pick<RolloutPage, 'statuses' | 'modes' | 'agents' | 'resourcesVersions' | 'runs'>;
let lastChoices: Choices | null = null;
const choicesOf = (p: RolloutPage): Choices => ({
  statuses: p.statuses,
  modes: p.modes,
  agents: p.agents,
  resourcesVersions: p.resourcesVersions,
  runs: p.runs,
});

/** Focuses a filter control once it has rendered (vscode-elements draw their inner input asynchronously). */
function focusControl(container: HTMLElement, name: string): void {
  const el = container.querySelector<HTMLElement>(`[data-filter="${name}"]`);
  if (el) void Promise.resolve((el as unknown as { updateComplete?: Promise<unknown> }).updateComplete).then(() => el.focus());
}

/** `at`: where to draw the list from (coming back to it), the current row focused; otherwise its top. */
export function renderRolloutsView(root: HTMLElement, filter: RolloutFilter, actions: RolloutsViewActions, at?: ListPosition): void {
  const key = JSON.stringify(filter);
  const previous = shown.get(root);
  if (previous && previous.element.isConnected && previous.filter === key) {
    previous.list.refresh();
    return;
  }
  // Keep the focus in the control the user is typing in (the search box) across the redraw.
  const focused = (document.activeElement as HTMLElement | null)?.getAttribute('data-filter') ?? null;

  const set = (patch: Partial<RolloutFilter>): void => {
    const next: Record<string, unknown> = { ...filter, ...patch };
    for (const k of Object.keys(next)) if (next[k] === undefined || next[k] === '') delete next[k];
    actions.setFilter(next as RolloutFilter);
  };
  const num = (v: string): number | undefined => (v === '' || !Number.isFinite(Number(v)) ? undefined : Number(v));
  const sort = filter.sort ?? 'createdAt';
  const order = filter.order ?? 'desc';

  const count = h('span', { class: 'count', 'aria-live': 'polite' }, '…');
  const search = textField(
    'Search',
    'search',
    filter.search ?? '',
    { placeholder: 'Words in the task or its outputs', type: 'search' },
    (v) => {
      if (v !== (filter.search ?? '')) set({ search: v || undefined });
    },
    SEARCH_DEBOUNCE_MS,
    // ArrowDown goes straight to the rows. Tab goes on to the next control, as everywhere (Filters, the sort headers,
    // then the rows): a search typed and not yet applied is applied once the focus has moved, and the list drawn for
    // it keeps the focus in that control.
    (e, typed, commit) => {
      if (e.shiftKey || e.altKey || e.ctrlKey || e.metaKey) return;
      const pending = typed !== (filter.search ?? '');
      if (e.key === 'Tab' && pending) setTimeout(commit, 0);
      if (e.key !== 'ArrowDown') return;
      if (pending) {
        e.preventDefault();
        focusRowsNext = true;
        commit();
      } else if (list.focusCurrent()) e.preventDefault();
    },
  );
  const filters = h('div', { class: 'filters', id: 'rollout-filters' });
  const hiddenFilters = activeFilterCount(filter, ['search']);
  const toggle = h(
    'button',
    {
      class: `filters-toggle${hiddenFilters ? ' active' : ''}`,
      'aria-expanded': String(filtersOpen),
      'aria-controls': 'rollout-filters',
      title: filtersOpen ? 'Hide the filters' : 'Show the filters',
      'data-filter': 'toggle',
    },
    icon('filter'),
    hiddenFilters ? ` Filters (${hiddenFilters})` : ' Filters',
  );
  toggle.addEventListener('click', () => {
    filtersOpen = !filtersOpen;
    element.classList.toggle('filters-open', filtersOpen);
    toggle.setAttribute('aria-expanded', String(filtersOpen));
    toggle.title = filtersOpen ? 'Hide the filters' : 'Show the filters';
  });
  const chips = h('div', { class: 'chips' });
  const status = h('div', { class: 'empty-state', hidden: true });

  const header = h(
    'div',
    { class: 'grid-header grid-row', role: 'row', 'aria-rowindex': 1 },
    ...COLUMNS.map((c) => {
      if (!c.sort) return h('div', { class: `cell col-${c.key}${c.num ? ' num' : ''}`, role: 'columnheader' }, c.title);
      const active = c.sort === sort;
      const button = h(
        'button',
        {
          class: `cell sort-header col-${c.key}${c.num ? ' num' : ''}${active ? ' sorted' : ''}`,
          role: 'columnheader',
          'data-sort': c.sort,
          'aria-sort': active ? (order === 'asc' ? 'ascending' : 'descending') : 'none',
          title: active
            ? `Sorted by ${c.title.toLowerCase()}, ${order === 'asc' ? 'ascending' : 'descending'}: click to reverse`
            : `Sort by ${c.title.toLowerCase()}`,
        },
        c.title,
        active ? icon(order === 'asc' ? 'arrow-up' : 'arrow-down', 'sort-indicator') : '',
      );
      button.addEventListener('click', () => set({ sort: c.sort, order: active && order === 'desc' ? 'asc' : 'desc' }));
      return button;
    }),
    // Narrow: the legend of the rows' second line, followed there by the Duration and Created sort buttons.
    h('div', { class: 'cell col-meta', role: 'columnheader' }, 'Rollout · mode · agent · res. · attempts'),
  );

  /** The choices this view's controls show: another view's fetch may have set lastChoices while these were not drawn. */
  let drawnChoices: string | null = null;
  const drawChoices = (page: Choices): void => {
    drawnChoices = JSON.stringify(page);
    const run = page.runs.find((r) => r.id === filter.runId);
    // The control in use is drawn again: it keeps the focus (or takes it, when this view was drawn for its change).
    const active = document.activeElement as HTMLElement | null;
    const had = active && filters.contains(active) ? active.getAttribute('data-filter') : null;
    const inUse = had ?? (!active || active === document.body ? focused : null);
    mount(
      filters,
      select('Status', 'status', filter.status?.[0] ?? '', [['', 'All'], ...page.statuses.map((s): [string, string] => [s, s])], (v) =>
        set({ status: v ? [v as RolloutStatus] : undefined }),
      ),
      select('Mode', 'mode', filter.mode ?? '', [['', 'All'], ...page.modes.map((m): [string, string] => [m, m])], (v) =>
        set({ mode: (v || undefined) as RolloutFilter['mode'] }),
      ),
      select('Agent', 'agent', filter.agent ?? '', [['', 'All'], ...page.agents.map((a): [string, string] => [a, a])], (v) => set({ agent: v || undefined })),
      select(
        'Run',
        'runId',
        filter.runId ?? '',
        [
          ['', 'All'],
          ...(run || !filter.runId ? [] : [[filter.runId, filter.runId] as [string, string]]),
          ...page.runs.map((r): [string, string] => [r.id, `${r.id} · ${r.agent.split(/[\\/]/).pop()}`]),
        ],
        (v) => set({ runId: v || undefined }),
      ),
      textField('Step', 'step', filter.step === undefined ? '' : String(filter.step), { type: 'number', min: '0', placeholder: 'any' }, (v) =>
        set({ step: num(v) }),
      ),
      h(
        'div',
        { class: 'filter filter-reward' },
        h('span', { class: 'filter-label' }, 'Reward'),
        textInput(
          'Reward at least',
          'rewardMin',
          filter.rewardMin === undefined ? '' : String(filter.rewardMin),
          { type: 'number', step: '0.1', placeholder: 'min' },
          (v) => set({ rewardMin: num(v) }),
        ),
        h('span', { class: 'filter-label' }, 'to'),
        textInput(
          'Reward at most',
          'rewardMax',
          filter.rewardMax === undefined ? '' : String(filter.rewardMax),
          { type: 'number', step: '0.1', placeholder: 'max' },
          (v) => set({ rewardMax: num(v) }),
        ),
      ),
      select(
        'Errors',
        'hasError',
        filter.hasError === undefined ? '' : String(filter.hasError),
        [
          ['', 'All'],
          ['true', 'With errors'],
          ['false', 'Without errors'],
        ],
        (v) => set({ hasError: v === '' ? undefined : v === 'true' }),
      ),
      select(
        'Resources',
        'resourcesVersion',
        filter.resourcesVersion === undefined ? '' : String(filter.resourcesVersion),
        [['', 'All'], ...page.resourcesVersions.map((v): [string, string] => [String(v), `v${v}`])],
        (v) => set({ resourcesVersion: num(v) }),
      ),
    );
    if (inUse && filters.isConnected) focusControl(filters, inUse);
  };

  const drawSummary = (page: RolloutPage): void => {
    count.textContent = `${page.total.toLocaleString('en-US')} rollout${page.total === 1 ? '' : 's'}`;
    const hidden = page.storeTotal - page.total;
    mount(
      chips,
      ...activeFilterChips(filter, page, (keys) => set(Object.fromEntries(keys.map((k) => [k, undefined])))),
      hidden > 0 ? h('span', { class: 'hidden-count muted' }, `${hidden.toLocaleString('en-US')} hidden by filters`) : null,
    );
    chips.hidden = chips.childElementCount === 0;
    status.hidden = page.total > 0;
    if (page.total > 0) mount(status); // an error shown before (the daemon was down) goes with the rows
    if (page.total === 0) {
      mount(
        status,
        icon('inbox'),
        h('p', {}, page.storeTotal > 0 ? 'No rollouts match these filters.' : 'No rollouts yet.'),
        h(
          'p',
          { class: 'muted' },
          page.storeTotal > 0
            ? 'Remove a filter above to see more.'
            : 'Run one with "Agent Lightning: Run Rollout", or `agl rollout <agent> --task ...` in a terminal.',
        ),
      );
    }
  };

  let last: RolloutPage | null = null;
  const list = new VirtualList<RolloutRow>(
    {
      fetch: async (offset, limit) => {
        const page = await actions.load({ ...filter, offset, limit });
        const choices = choicesOf(page);
        lastChoices = choices;
        if (JSON.stringify(choices) !== drawnChoices) drawChoices(choices);
        last = page;
        drawSummary(page);
        return { items: page.items, total: page.total };
      },
      row: (item, index) => rowOf(item, index, (id, active) => actions.openRollout(id, { scrollTop: list.element.scrollTop, active })),
      placeholder: placeholderRow,
      onTotal: () => {
        if (last) drawSummary(last);
      },
      onError: (err) => {
        status.hidden = false;
        mount(status, errorState(`Could not load rollouts: ${err.message}`, { retry: () => list.reset(), startDaemon: actions.startDaemon }));
      },
    },
    ROW_HEIGHT,
    header,
  );

  const refresh = h('vscode-toolbar-button', { icon: 'refresh', label: 'Refresh', title: 'Refresh', class: 'refresh' });
  refresh.addEventListener('click', () => list.refresh());
  const element = h(
    'div',
    { class: `rollouts-view${filtersOpen ? ' filters-open' : ''}` },
    h('header', { class: 'view-header' }, h('h1', {}, icon('list-tree'), ' Rollouts ', count), h('div', { class: 'spacer' }), refresh),
    h('div', { class: 'filter-area' }, search, toggle, filters),
    chips,
    h('div', { class: 'rollouts-grid', role: 'grid', 'aria-label': 'Rollouts' }, list.element),
    status,
  );
  mount(root, element);
  // Narrow or not from the first draw (no row drawn at the wrong height), then whenever the panel is resized.
  const layout = (): void => {
    const narrow = element.clientWidth > 0 && element.clientWidth < NARROW_WIDTH;
    element.classList.toggle('narrow', narrow);
    list.setRowHeight(narrow ? ROW_HEIGHT_NARROW : ROW_HEIGHT);
  };
  layout();
  const resized = new ResizeObserver(() => (element.isConnected ? layout() : resized.disconnect()));
  resized.observe(element);
  if (focused === 'search' || focused === 'toggle') focusControl(element, focused);
  if (lastChoices) drawChoices(lastChoices);
  shown.set(root, { filter: key, list, element });
  const intoRows = focusRowsNext;
  focusRowsNext = false;
  list.reset(at ? { ...at, focus: true } : intoRows ? { scrollTop: 0, active: 0, focus: true } : undefined);
}
