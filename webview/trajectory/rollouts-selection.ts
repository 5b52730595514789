/**
 * Selecting rollouts in the list, for Add to dataset: a checkbox in each row's first cell, Space on the current row,
 * or Ctrl/Cmd+click on a row toggles it (a selected row is marked, `aria-selected`); the list's header then offers
 * "Add N selected to dataset…" and "Clear", and without a selection "Add all N to dataset…": every rollout the
 * filter shows. The selection lasts while the filter does (another filter starts none).
 */
import type { RolloutFilter } from '../../protocol/webview-trajectory.js';
import { h, mount } from '../shared/dom.js';
import { runAdd, type AddToDataset } from './dataset-controls.js';

export class RolloutSelection {
  readonly ids = new Set<string>();
  /** The filter the selection was made under. */
  key = '';
  private readonly listeners = new Set<() => void>();

  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Starts again (empty) when the filter is another one. */
  forFilter(key: string): void {
    if (key !== this.key) this.ids.clear();
    this.key = key;
  }

  toggle(id: string): void {
    if (!this.ids.delete(id)) this.ids.add(id);
    for (const fn of this.listeners) fn();
  }

  clear(): void {
    this.ids.clear();
    for (const fn of this.listeners) fn();
  }

  /** Marks a drawn row selected or not (its checkbox, aria-selected). */
  mark(row: HTMLElement, id: string): void {
    const on = this.ids.has(id);
    row.setAttribute('aria-selected', String(on));
    row.classList.toggle('selected', on);
    const box = row.querySelector<HTMLInputElement>('input.select-row');
    if (box) box.checked = on;
  }

  /** A row's checkbox, and its keys and clicks that toggle it. */
  wire(row: HTMLElement, id: string): void {
    const box = h('input', { type: 'checkbox', class: 'select-row', tabindex: -1, 'aria-label': `Select rollout ${id}` }) as HTMLInputElement;
    box.addEventListener('click', (e) => {
      e.stopPropagation();
      this.toggle(id);
      this.mark(row, id);
    });
    row.querySelector('.col-id')?.prepend(box);
    row.addEventListener(
      'click',
      (e) => {
        if (!e.ctrlKey && !e.metaKey) return;
        e.stopImmediatePropagation();
        this.toggle(id);
        this.mark(row, id);
      },
      { capture: true },
    );
    row.addEventListener('keydown', (e) => {
      if (e.key !== ' ' || e.target !== row) return; // Space on the checkbox itself clicks it
      e.preventDefault();
      this.toggle(id);
      this.mark(row, id);
    });
    this.mark(row, id);
  }
}

/** The list header's Add to dataset: the selection's, else the filter's (`total` rollouts, once known). */
export class DatasetBar {
  readonly element = h('div', { class: 'dataset-bar' });
  private readonly status = h('span', { class: 'dataset-status muted', 'aria-live': 'polite' });
  private total: number | null = null;

  constructor(
    private readonly selection: RolloutSelection,
    private readonly filter: RolloutFilter,
    private readonly add: AddToDataset,
  ) {
    const off = selection.onChange(() => (this.element.isConnected ? this.draw() : off()));
    this.draw();
  }

  setTotal(total: number): void {
    if (total === this.total) return;
    this.total = total;
    this.draw();
  }

  private draw(): void {
    const n = this.selection.ids.size;
    const label = n ? `Add ${n} selected to dataset…` : `Add all ${this.total === null ? '' : `${this.total.toLocaleString('en-US')} `}to dataset…`;
    const button = h('vscode-button', { class: 'add-to-dataset', icon: 'beaker', secondary: true, disabled: !n && !this.total }, label);
    button.title = n
      ? 'Add the selected rollouts, their recorded answers as expected'
      : 'Add every rollout the filter shows, their recorded answers as expected';
    button.addEventListener('click', () =>
      runAdd(button, this.status, this.add, () =>
        this.selection.ids.size ? { kind: 'selection', rolloutIds: [...this.selection.ids] } : { kind: 'filter', filter: this.filter },
      ),
    );
    const clear = h('vscode-button', { class: 'clear-selection', secondary: true }, 'Clear');
    clear.title = 'Clear the selection';
    clear.addEventListener('click', () => this.selection.clear());
    mount(this.element, button, n ? clear : null, this.status);
  }
}
