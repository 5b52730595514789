/**
 * The lineage tree: every candidate under the parent it came from (a merge under its first parent, naming the other),
 * with its origin, the prompt it edited, its status as an icon and a word (accepted, rejected, refused, proposed: told
 * apart without colour), its val mean and a star when it is on the Pareto front. A tree for the keyboard too (one Tab
 * stop; Up/Down, Home/End move, Enter or Space shows the candidate), the selected row marked.
 */
import type { OptimizationView } from '../../protocol/webview-optimize.js';
import { h, icon, mount } from '../shared/dom.js';
import { fmtScore, label, lineageRows, ORIGIN_WORDS, STATUS_LOOK } from './model.js';

/** Moves the focus among `items` (one Tab stop: the focused one has tabindex 0) with the arrow keys, Home and End. */
export function roving(
  container: HTMLElement,
  items: () => HTMLElement[],
  keys: { next: string; prev: string } = { next: 'ArrowDown', prev: 'ArrowUp' },
): void {
  container.addEventListener('keydown', (e) => {
    const all = items();
    const at = all.indexOf(document.activeElement as HTMLElement);
    if (at < 0) return;
    const to = e.key === keys.next ? at + 1 : e.key === keys.prev ? at - 1 : e.key === 'Home' ? 0 : e.key === 'End' ? all.length - 1 : null;
    if (to === null || to < 0 || to >= all.length) return;
    e.preventDefault();
    all[at]!.tabIndex = -1;
    all[to]!.tabIndex = 0;
    all[to]!.focus();
  });
}

export class LineageTree {
  readonly root: HTMLElement;
  private readonly tree = h('div', { class: 'lineage', role: 'tree', 'aria-label': 'Candidates by lineage' });

  constructor(private readonly select: (candidateId: string) => void) {
    this.root = h('section', { class: 'card lineage-card' }, h('h2', {}, 'Lineage'), this.tree);
    roving(this.tree, () => [...this.tree.querySelectorAll<HTMLElement>('.lineage-row')]);
  }

  /** Draws the tree; the row with the keyboard's focus keeps it across a redraw. */
  draw(view: OptimizationView, selected: string | null): void {
    const focused = (document.activeElement as HTMLElement | null)?.closest<HTMLElement>('.lineage-row')?.dataset.candidate;
    const front = new Set(view.front);
    const rows = lineageRows(view.candidates).map(({ candidate: c, depth, alsoFrom, children }) => {
      const look = STATUS_LOOK[c.status];
      const row = h(
        'div',
        {
          class: `lineage-row status-${c.status}${c.id === selected ? ' selected' : ''}`,
          role: 'treeitem',
          'aria-level': depth + 1,
          'aria-selected': String(c.id === selected),
          ...(children ? { 'aria-expanded': 'true' } : {}),
          'data-candidate': c.id,
          tabindex: -1,
          title: c.reason ? `${look.word}: ${c.reason}` : look.title,
        },
        h('span', { class: 'indent', 'aria-hidden': 'true' }, depth ? '└' : ''),
        h('span', { class: 'cand-label' }, label(c)),
        h('span', { class: `status status-${c.status}` }, icon(look.icon), ` ${look.word}`),
        h('span', { class: 'origin muted' }, ORIGIN_WORDS[c.origin], c.component ? ` · ${c.component}` : ''),
        alsoFrom.length ? h('span', { class: 'muted merge-of' }, `+ ${alsoFrom.map(label).join(', ')}`) : null,
        h('span', { class: 'spacer' }),
        c.valMean !== null ? h('span', { class: 'val', title: 'mean val score' }, fmtScore(c.valMean)) : null,
        front.has(c.id) ? h('span', { class: 'front-mark', title: 'on the per-task Pareto front' }, icon('star-full'), ' front') : null,
      );
      row.style.setProperty('--depth', String(depth));
      row.addEventListener('click', () => this.select(c.id));
      row.addEventListener('keydown', (e) => {
        if (e.target !== row || (e.key !== 'Enter' && e.key !== ' ')) return;
        e.preventDefault();
        this.select(c.id);
      });
      return row;
    });
    mount(this.tree, ...rows);
    const tabStop = rows.find((r) => r.dataset.candidate === (focused ?? selected)) ?? rows[0];
    if (tabStop) tabStop.tabIndex = 0;
    if (focused && tabStop?.dataset.candidate === focused) tabStop.focus();
  }
}
