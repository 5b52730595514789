/**
 * The rollouts list at store scale (its columns: rollouts-columns.ts): a search box and filter controls, the active filters as removable chips
 * with how many rollouts they hide, the exact number that match, column headers that sort (click; again to
 * reverse), and a virtualised list (virtual-list.ts) that fetches pages as the user scrolls through all of
 * them. A click (or Enter) on a row opens that rollout; its checkbox, Space or Ctrl+click selects it, for Add to dataset
 * (rollouts-selection.ts: the selection's, else the whole filter's, in the header). Searching, filtering, sorting and counting happen in
 * the store; this view draws. Rendering again with the same filter refreshes in place (live updates keep the
 * scroll position); with another filter it starts from the top, keeping the focus in the control in use.
 *
 * In a panel beside the editor (the view narrower than NARROW_WIDTH) the question gets the row's width: each
 * row is two lines, the question, status and reward on the first, the rest (id, mode, agent, resources, model,
 * attempts, duration, created) on a muted second line and whole in its tooltip; the filters fold behind a
 * "Filters (n)" button next to the search box, so the rows start near the top.
 *
 * By keyboard: Tab walks every control in order (search, Filters, the filters when shown, the sort headers, the rows);
 * ArrowDown from the search box goes straight to the rows; arrows, Page keys, Home and End move through them
 * (virtual-list.ts), Enter opens one. Coming back from a rollout (`at`) draws the list
 * at the same scroll with the opened row focused.
 */
import type { RolloutFilter, RolloutPage, RolloutPageRequest, RolloutRow } from '../../protocol/webview-trajectory.js';
import { h, icon, mount } from '../shared/dom.js';
import { errorState } from '../shared/recovery.js';
import { activeFilterChips, activeFilterCount } from './filter-chips.js';
import { NO_RUNNER } from '../../protocol/runner-presence.js';
import { type Choices, choicesOf, filterControls, type FilterSetter, filterSetter, focusControl, textField } from './rollouts-controls.js';
import { COLUMNS, metaCell, waitsForNoRunner } from './rollouts-columns.js';
import { VirtualList, type ListPosition } from './virtual-list.js';
import type { AddToDataset } from './dataset-controls.js';
import { DatasetBar, RolloutSelection } from './rollouts-selection.js';

export type { ListPosition } from './virtual-list.js';

export interface RolloutsViewActions {
  load(request: RolloutPageRequest): Promise<RolloutPage>;
  setFilter(filter: RolloutFilter): void;
  /** `from`: where the list was (scroll, the opened row as the current one), for Back to come back to. */
  openRollout(rolloutId: string, from: ListPosition): void;
  /** The error state's "Start Daemon" (shared/recovery.ts). */
  startDaemon(): void;
  addToDataset: AddToDataset;
}

/** Row heights (trajectory.css): one line, and two in a narrow view. */
const ROW_HEIGHT = 30;
const ROW_HEIGHT_NARROW = 44;
/** Below this width (px, the view's own: the panel less its padding) the list takes its narrow layout. */
const NARROW_WIDTH = 600;
const SEARCH_DEBOUNCE_MS = 300;

function rowOf(item: RolloutRow, index: number, open: (id: string, index: number) => void, selection: RolloutSelection): HTMLElement {
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
  selection.wire(row, id);
  return row;
}
function placeholderRow(index: number): HTMLElement {
  return h('div', { class: `placeholder-row grid-row${index % 2 ? ' odd' : ''}`, role: 'row' }, h('div', { class: 'cell col-input muted' }, '…'));
}

/** The column headers; the sortable ones are buttons that sort by their column (again: the other way). */
function sortHeader(filter: RolloutFilter, set: FilterSetter): HTMLElement {
  const sort = filter.sort ?? 'createdAt';
  const order = filter.order ?? 'desc';
  return h(
    'div',
    { class: 'grid-header grid-row', role: 'row', 'aria-rowindex': 1 },
    ...COLUMNS.map((c) => {
      if (!c.sort) return h('div', { class: `cell col-${c.key}${c.num ? ' num' : ''}`, role: 'columnheader', title: c.tip ?? null }, c.title);
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
    h('div', { class: 'cell col-meta', role: 'columnheader' }, 'Rollout · mode · agent · resources · model · attempts'),
  );
}

/** What the list remembers from one drawing to the next, for as long as the panel lives. */
interface ListMemory {
  /** Whether the narrow view shows its filters (a redraw for a new filter keeps them open). */
  filtersOpen: boolean;
  /** Set when ArrowDown leaves a search typed and not yet applied: the list drawn for it takes the focus when its rows arrive. */
  focusRowsNext: boolean;
  /** The filters' choices from the last page: a redraw shows its controls at once (the focus stays in the one in use). */
  lastChoices: Choices | null;
  /** The rollouts selected (for Add to dataset), while the filter stays the same. */
  readonly selection: RolloutSelection;
}

/**
 * The rollouts list of one panel, drawn into `root`. Rendering again with the same filter refreshes the drawn list
 * in place; another filter draws it again from the top.
 */
export class RolloutsList implements ListMemory {
  filtersOpen = false;
  focusRowsNext = false;
  lastChoices: Choices | null = null;
  readonly selection = new RolloutSelection();
  private shown: RolloutsDrawing | null = null;

  constructor(
    private readonly root: HTMLElement,
    private readonly actions: RolloutsViewActions,
  ) {}

  /** `at`: where to draw the list from (coming back to it), the current row focused; otherwise its top. */
  render(filter: RolloutFilter, at?: ListPosition): void {
    this.selection.forFilter(JSON.stringify(filter));
    const previous = this.shown;
    if (previous && previous.element.isConnected && previous.key === JSON.stringify(filter)) {
      previous.list.refresh();
      return;
    }
    const drawing = new RolloutsDrawing(this, filter, this.actions);
    mount(this.root, drawing.element);
    this.shown = drawing;
    drawing.start(at);
  }
}

/** One drawing of the list for one filter: its controls, summary and rows. */
class RolloutsDrawing {
  readonly key: string;
  readonly list: VirtualList<RolloutRow>;
  readonly element: HTMLElement;
  private readonly set: FilterSetter;
  /** The control the user was in before this drawing (the search box while typing): it keeps the focus. */
  private readonly focused: string | null;
  private readonly count = h('span', { class: 'count', 'aria-live': 'polite' }, '…');
  private readonly filters = h('div', { class: 'filters', id: 'rollout-filters' });
  private readonly chips = h('div', { class: 'chips' });
  private readonly status = h('div', { class: 'empty-state', hidden: true });
  private readonly bar: DatasetBar;
  /** The choices this drawing's controls show: another drawing's fetch may have set lastChoices while these were not drawn. */
  private drawnChoices: string | null = null;
  private last: RolloutPage | null = null;

  constructor(
    private readonly memory: ListMemory,
    private readonly filter: RolloutFilter,
    private readonly actions: RolloutsViewActions,
  ) {
    this.key = JSON.stringify(filter);
    this.focused = (document.activeElement as HTMLElement | null)?.getAttribute('data-filter') ?? null;
    this.set = filterSetter(filter, actions.setFilter);
    this.list = this.rows(sortHeader(filter, this.set));
    const refresh = h('vscode-toolbar-button', { icon: 'refresh', label: 'Refresh', title: 'Refresh', class: 'refresh' });
    refresh.addEventListener('click', () => this.list.refresh());
    this.bar = new DatasetBar(memory.selection, filter, actions.addToDataset);
    const off = memory.selection.onChange(() => {
      if (!this.list.element.isConnected) return void off();
      for (const row of this.list.element.querySelectorAll<HTMLElement>('.rollout-row')) memory.selection.mark(row, row.dataset.rolloutId!);
    });
    this.element = h(
      'div',
      { class: `rollouts-view${memory.filtersOpen ? ' filters-open' : ''}` },
      h('header', { class: 'view-header' }, h('h1', {}, icon('list-tree'), ' Rollouts ', this.count), h('div', { class: 'spacer' }), this.bar.element, refresh),
      h('div', { class: 'filter-area' }, this.searchField(), this.filtersToggle(), this.filters),
      this.chips,
      h('div', { class: 'rollouts-grid', role: 'grid', 'aria-label': 'Rollouts' }, this.list.element),
      this.status,
    );
  }

  /** Once mounted: the layout for the view's width, the focus, the filters' last choices, and the rows from `at` or the top. */
  start(at?: ListPosition): void {
    const element = this.element;
    // Narrow or not from the first draw (no row drawn at the wrong height), then whenever the panel is resized.
    const layout = (): void => {
      const narrow = element.clientWidth > 0 && element.clientWidth < NARROW_WIDTH;
      element.classList.toggle('narrow', narrow);
      this.list.setRowHeight(narrow ? ROW_HEIGHT_NARROW : ROW_HEIGHT);
    };
    layout();
    const resized = new ResizeObserver(() => (element.isConnected ? layout() : resized.disconnect()));
    resized.observe(element);
    if (this.focused === 'search' || this.focused === 'toggle') focusControl(element, this.focused);
    if (this.memory.lastChoices) this.drawChoices(this.memory.lastChoices);
    const intoRows = this.memory.focusRowsNext;
    this.memory.focusRowsNext = false;
    this.list.reset(at ? { ...at, focus: true } : intoRows ? { scrollTop: 0, active: 0, focus: true } : undefined);
  }

  private searchField(): HTMLElement {
    const current = this.filter.search ?? '';
    return textField(
      'Search',
      'search',
      current,
      { placeholder: 'Words in the task or its outputs', type: 'search' },
      (v) => {
        if (v !== current) this.set({ search: v || undefined });
      },
      SEARCH_DEBOUNCE_MS,
      // ArrowDown goes straight to the rows. Tab goes on to the next control, as everywhere (Filters, the sort headers,
      // then the rows): a search typed and not yet applied is applied once the focus has moved, and the list drawn for
      // it keeps the focus in that control.
      (e, typed, commit) => {
        if (e.shiftKey || e.altKey || e.ctrlKey || e.metaKey) return;
        const pending = typed !== current;
        if (e.key === 'Tab' && pending) setTimeout(commit, 0);
        if (e.key !== 'ArrowDown') return;
        if (pending) {
          e.preventDefault();
          this.memory.focusRowsNext = true;
          commit();
        } else if (this.list.focusCurrent()) e.preventDefault();
      },
    );
  }

  /** "Filters (n)": shows or hides the filters in a narrow view. */
  private filtersToggle(): HTMLElement {
    const hiddenFilters = activeFilterCount(this.filter, ['search']);
    const open = this.memory.filtersOpen;
    const toggle = h(
      'button',
      {
        class: `filters-toggle${hiddenFilters ? ' active' : ''}`,
        'aria-expanded': String(open),
        'aria-controls': 'rollout-filters',
        title: open ? 'Hide the filters' : 'Show the filters',
        'data-filter': 'toggle',
      },
      icon('filter'),
      hiddenFilters ? ` Filters (${hiddenFilters})` : ' Filters',
    );
    toggle.addEventListener('click', () => {
      const nowOpen = (this.memory.filtersOpen = !this.memory.filtersOpen);
      this.element.classList.toggle('filters-open', nowOpen);
      toggle.setAttribute('aria-expanded', String(nowOpen));
      toggle.title = nowOpen ? 'Hide the filters' : 'Show the filters';
    });
    return toggle;
  }

  /** The virtualised rows under `header`, fetching their pages through the view's actions. */
  private rows(header: HTMLElement): VirtualList<RolloutRow> {
    const list: VirtualList<RolloutRow> = new VirtualList<RolloutRow>(
      {
        fetch: async (offset, limit) => {
          const page = await this.actions.load({ ...this.filter, offset, limit });
          const choices = choicesOf(page);
          this.memory.lastChoices = choices;
          if (JSON.stringify(choices) !== this.drawnChoices) this.drawChoices(choices);
          this.last = page;
          this.drawSummary(page);
          return { items: page.items, total: page.total };
        },
        row: (item, index) =>
          rowOf(item, index, (id, active) => this.actions.openRollout(id, { scrollTop: list.element.scrollTop, active }), this.memory.selection),
        placeholder: placeholderRow,
        onTotal: () => {
          if (this.last) this.drawSummary(this.last);
        },
        onError: (err) => {
          this.status.hidden = false;
          mount(this.status, errorState(`Could not load rollouts: ${err.message}`, { retry: () => list.reset(), startDaemon: this.actions.startDaemon }));
        },
      },
      ROW_HEIGHT,
      header,
    );
    return list;
  }

  /** The filter controls with `page`'s choices; the control in use is drawn again and keeps the focus (or takes it, when this drawing is for its change). */
  private drawChoices(page: Choices): void {
    this.drawnChoices = JSON.stringify(page);
    const active = document.activeElement as HTMLElement | null;
    const had = active && this.filters.contains(active) ? active.getAttribute('data-filter') : null;
    const inUse = had ?? (!active || active === document.body ? this.focused : null);
    mount(this.filters, ...filterControls(this.filter, page, this.set));
    if (inUse && this.filters.isConnected) focusControl(this.filters, inUse);
  }

  /** The count, the active filters as chips with how many rollouts they hide, and the empty state. */
  private drawSummary(page: RolloutPage): void {
    const { chips, status } = this;
    this.count.textContent = `${page.total.toLocaleString('en-US')} rollout${page.total === 1 ? '' : 's'}`;
    this.bar.setTotal(page.total);
    const hidden = page.storeTotal - page.total;
    mount(
      chips,
      ...activeFilterChips(this.filter, page, (keys) => this.set(Object.fromEntries(keys.map((k) => [k, undefined])))),
      hidden > 0 ? h('span', { class: 'hidden-count muted' }, `${hidden.toLocaleString('en-US')} hidden by filters`) : null,
      // The rows cannot say it whole in their status column: a queue nothing will take from says so above them.
      page.items.some(waitsForNoRunner)
        ? h(
            'span',
            { class: 'no-runner-note' },
            icon('debug-disconnect'),
            ` queuing: ${NO_RUNNER}: the queued rollouts wait for one (agl runner, or a training run)`,
          )
        : null,
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
  }
}
