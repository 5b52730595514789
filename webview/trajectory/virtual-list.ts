/**
 * A virtualised list of fixed-height rows over a paged source: only the rows in view (plus a few either
 * side) exist in the DOM, the pages they fall in are fetched as they come into view, and a spacer gives the
 * scrollbar the height of every row, so a list of 100,000 rollouts scrolls like one of 10. Positions are
 * set through CSSOM (element.style), which the webviews' strict CSP allows.
 *
 * The keyboard moves through it as through one list: the rows are a single Tab stop (the current row has
 * tabindex 0, the others -1), ArrowUp/ArrowDown, PageUp/PageDown, Home and End move the focus row by row,
 * scrolling it into view. Rows are redrawn as new elements whenever the window moves or a page arrives, so
 * each draw hands the focus to the new element of the row that had it: the focus never drops to the page.
 */
import { h, mount } from '../shared/dom.js';

export interface VirtualListSource<T> {
  /** `limit` items from `offset`, and how many there are in all. */
  fetch(offset: number, limit: number): Promise<{ items: T[]; total: number }>;
  row(item: T, index: number): HTMLElement;
  /** A row not fetched yet. */
  placeholder(index: number): HTMLElement;
  /** Called with every total a page reports (the first one, and changes on refresh). */
  onTotal(total: number): void;
  onError(error: Error): void;
}

/** Where the user is in a list: its scroll offset and the current row, to come back to them later. */
export interface ListPosition {
  scrollTop: number;
  /** The current row (the one the keyboard moves from, and Tab lands on). */
  active: number;
}

export class VirtualList<T> {
  readonly element: HTMLElement;
  private readonly spacer: HTMLElement;
  private readonly window: HTMLElement;
  private readonly items = new Map<number, T>();
  private readonly loading = new Set<number>();
  private total: number | null = null;
  /** Bumped by reset/refresh: answers to older requests are dropped. */
  private generation = 0;
  private frame = 0;
  private active = 0;
  /** A position to go back to once the first page says how many rows there are (reset(at)). */
  private restore: (ListPosition & { focus: boolean }) | null = null;

  /** `header` stays on top of the scrolled rows (position: sticky in the stylesheet). */
  constructor(
    private readonly source: VirtualListSource<T>,
    private rowHeight: number,
    private readonly header: HTMLElement | null = null,
    private readonly pageSize = 100,
    private readonly overscan = 8,
  ) {
    this.window = h('div', { class: 'vlist-window', role: 'rowgroup' });
    this.spacer = h('div', { class: 'vlist-spacer' }, this.window);
    this.element = h('div', { class: 'vlist', tabindex: -1 }, header, this.spacer);
    this.element.addEventListener('scroll', () => this.schedule());
    this.element.addEventListener('keydown', (e) => this.onKey(e));
    // A row focused by a click or by Tab becomes the current row.
    this.window.addEventListener('focusin', (e) => {
      const index = this.indexOf(e.target as Element);
      if (index !== null) this.active = index;
    });
    new ResizeObserver(() => this.schedule()).observe(this.element);
  }

  get size(): number | null {
    return this.total;
  }

  /**
   * Forget everything and start again from the top (the filter or sort changed), or from `at` (coming back
   * to this list: the same scroll and current row, focused when `at.focus`).
   */
  reset(at?: ListPosition & { focus: boolean }): void {
    this.generation++;
    this.items.clear();
    this.loading.clear();
    this.total = null;
    this.active = 0;
    this.restore = at ?? null;
    this.element.scrollTop = 0;
    this.spacer.style.height = '0px';
    mount(this.window);
    void this.load(at ? Math.floor(at.active / this.pageSize) : 0);
  }

  /** Rows are this tall from now on (the layout changed): the row at the top of the view stays there. */
  setRowHeight(height: number): void {
    if (height === this.rowHeight) return;
    const top = this.element.scrollTop / this.rowHeight;
    this.rowHeight = height;
    if (this.total !== null) this.spacer.style.height = `${this.total * height}px`;
    this.element.scrollTop = top * height;
    this.schedule();
  }

  /**
   * Focuses the current row (the first one in view when the current row is scrolled away); false when the
   * list has no rows.
   */
  focusCurrent(): boolean {
    if (!this.total) return false;
    const [top, bottom] = this.inView();
    this.moveTo(this.active >= top && this.active < bottom ? this.active : top);
    return true;
  }

  /** Re-read the pages in view, keeping the scroll position (the store changed underneath). */
  refresh(): void {
    this.generation++;
    this.loading.clear();
    const [first, last] = this.range();
    const pages = new Set<number>([Math.floor(first / this.pageSize)]);
    for (let i = first; i < last; i++) pages.add(Math.floor(i / this.pageSize));
    const fresh = this.generation;
    void Promise.all([...pages].map((p) => this.load(p, fresh))).then(() => {
      // Rows outside the pages just read may have moved: forget them, they are fetched again when in view.
      if (fresh !== this.generation) return;
      for (const index of [...this.items.keys()]) if (!pages.has(Math.floor(index / this.pageSize))) this.items.delete(index);
    });
  }

  /** Scrolls so that row `index` is in view. */
  scrollToIndex(index: number): void {
    this.element.scrollTop = Math.max(0, index * this.rowHeight - this.element.clientHeight / 2);
    this.schedule();
  }

  private onKey(e: KeyboardEvent): void {
    if (!this.total || e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
    // Keys typed in a control inside a row (none today) or in the header's buttons are theirs.
    const target = e.target as Element;
    if (target !== this.element && this.indexOf(target) === null) return;
    const page = Math.max(1, Math.floor(this.viewHeight() / this.rowHeight) - 1);
    const moves: Record<string, number> = {
      ArrowDown: this.active + 1,
      ArrowUp: this.active - 1,
      PageDown: this.active + page,
      PageUp: this.active - page,
      Home: 0,
      End: this.total - 1,
    };
    if (!(e.key in moves)) return;
    e.preventDefault();
    this.moveTo(moves[e.key]);
  }

  /** Makes row `index` the current one, scrolls it into view and focuses it (a placeholder until its page arrives). */
  private moveTo(index: number): void {
    const total = this.total ?? 0;
    if (total === 0) return;
    // Kept here: the draw below hands the focus back to the row that had it, which makes that one current again.
    const target = Math.min(total - 1, Math.max(0, index));
    this.active = target;
    const top = target * this.rowHeight;
    if (top < this.element.scrollTop) this.element.scrollTop = top;
    else if (top + this.rowHeight > this.element.scrollTop + this.viewHeight()) this.element.scrollTop = top + this.rowHeight - this.viewHeight();
    // Drawn now, not at the next frame: the row to focus must exist.
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.draw();
    this.rowAt(target)?.focus({ preventScroll: true });
    this.active = target;
  }

  /** The height rows are seen in: the list's, less the sticky header's on top of them. */
  private viewHeight(): number {
    return (this.element.clientHeight || this.rowHeight * 20) - (this.header?.offsetHeight ?? 0);
  }

  /** [first, last) rows fully or partly in view. */
  private inView(): [number, number] {
    const total = this.total ?? 0;
    const first = Math.min(Math.max(0, total - 1), Math.ceil(this.element.scrollTop / this.rowHeight));
    const last = Math.min(total, Math.floor((this.element.scrollTop + this.viewHeight()) / this.rowHeight));
    return [first, Math.max(first + 1, last)];
  }

  private indexOf(el: Element | null): number | null {
    const row = el?.closest<HTMLElement>('[data-index]');
    return row && this.window.contains(row) ? Number(row.dataset.index) : null;
  }

  private rowAt(index: number): HTMLElement | null {
    return this.window.querySelector<HTMLElement>(`:scope > [data-index="${index}"]`);
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  /** [first, last) rows to have in the DOM. */
  private range(): [number, number] {
    const total = this.total ?? 0;
    const top = this.element.scrollTop;
    const height = this.element.clientHeight || this.rowHeight * 20;
    const first = Math.max(0, Math.floor(top / this.rowHeight) - this.overscan);
    const last = Math.min(total, Math.ceil((top + height) / this.rowHeight) + this.overscan);
    return [first, Math.max(first, last)];
  }

  private draw(): void {
    if (this.total === null) return;
    const [first, last] = this.range();
    // The row that has the focus now: its new element takes it over once drawn.
    const focused = this.window.contains(document.activeElement) ? this.indexOf(document.activeElement) : null;
    // The single Tab stop: the current row, or the first one in view while it is scrolled away.
    const stop = this.active >= first && this.active < last ? this.active : this.inView()[0];
    const rows: HTMLElement[] = [];
    for (let i = first; i < last; i++) {
      const item = this.items.get(i);
      if (item === undefined) void this.load(Math.floor(i / this.pageSize));
      const row = item === undefined ? this.source.placeholder(i) : this.source.row(item, i);
      row.setAttribute('aria-rowindex', String(i + 2)); // the header is row 1
      row.dataset.index = String(i);
      row.tabIndex = i === stop ? 0 : -1;
      rows.push(row);
    }
    this.window.style.transform = `translateY(${first * this.rowHeight}px)`;
    mount(this.window, rows);
    if (focused !== null) (this.rowAt(focused) ?? this.element).focus({ preventScroll: true });
  }

  private async load(page: number, generation = this.generation): Promise<void> {
    if (this.loading.has(page)) return;
    this.loading.add(page);
    try {
      const { items, total } = await this.source.fetch(page * this.pageSize, this.pageSize);
      if (generation !== this.generation) return;
      items.forEach((item, i) => this.items.set(page * this.pageSize + i, item));
      const resized = total !== this.total;
      if (resized) {
        this.total = total;
        for (const index of [...this.items.keys()]) if (index >= total) this.items.delete(index);
        this.spacer.style.height = `${total * this.rowHeight}px`;
        if (this.active >= total) this.active = Math.max(0, total - 1);
        this.source.onTotal(total);
      }
      if (this.restore) {
        // Back where the user left this list: its height is known now, so the scroll offset holds.
        const { scrollTop, active, focus } = this.restore;
        this.restore = null;
        this.active = Math.min(Math.max(0, total - 1), active);
        this.element.scrollTop = scrollTop;
        if (focus && total > 0) this.moveTo(this.active);
      }
      // An empty answer inside the old total (rows removed meanwhile) must not start a fetch loop.
      if (items.length || resized) this.schedule();
    } catch (err) {
      if (generation === this.generation) this.source.onError(err as Error);
    } finally {
      if (generation === this.generation) this.loading.delete(page);
    }
  }
}
