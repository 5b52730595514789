/**
 * A virtualised list of fixed-height rows over a paged source: only the rows in view (plus a few either
 * side) exist in the DOM, the pages they fall in are fetched as they come into view, and a spacer gives the
 * scrollbar the height of every row, so a list of 100,000 rollouts scrolls like one of 10. Positions are
 * set through CSSOM (element.style), which the webviews' strict CSP allows.
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

  /** `header` stays on top of the scrolled rows (position: sticky in the stylesheet). */
  constructor(
    private readonly source: VirtualListSource<T>,
    private readonly rowHeight: number,
    header: HTMLElement | null = null,
    private readonly pageSize = 100,
    private readonly overscan = 8,
  ) {
    this.window = h('div', { class: 'vlist-window', role: 'rowgroup' });
    this.spacer = h('div', { class: 'vlist-spacer' }, this.window);
    this.element = h('div', { class: 'vlist', tabindex: -1 }, header, this.spacer);
    this.element.addEventListener('scroll', () => this.schedule());
    new ResizeObserver(() => this.schedule()).observe(this.element);
  }

  get size(): number | null {
    return this.total;
  }

  /** Forget everything and start again from the top (the filter or sort changed). */
  reset(): void {
    this.generation++;
    this.items.clear();
    this.loading.clear();
    this.total = null;
    this.element.scrollTop = 0;
    this.spacer.style.height = '0px';
    mount(this.window);
    void this.load(0);
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
    const rows: HTMLElement[] = [];
    for (let i = first; i < last; i++) {
      const item = this.items.get(i);
      if (item === undefined) void this.load(Math.floor(i / this.pageSize));
      const row = item === undefined ? this.source.placeholder(i) : this.source.row(item, i);
      row.setAttribute('aria-rowindex', String(i + 2)); // the header is row 1
      rows.push(row);
    }
    this.window.style.transform = `translateY(${first * this.rowHeight}px)`;
    mount(this.window, rows);
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
        this.source.onTotal(total);
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
