/**
 * The candidate x val-task grid: a row per candidate scored on val, a column per val task, each cell its score on that
 * task (shaded by it, and bold where it is the task's best); the rows on the Pareto front marked with a star and the
 * word "front". A cell's tooltip is the grader's feedback; Enter or a click on it opens its rollout in the trajectory
 * viewer, a click on a row's label shows the candidate. The grid is one Tab stop (the arrow keys, Home and End move
 * between cells); wide grids scroll sideways under a fixed first column.
 */
import type { OptimizationView } from '../../protocol/webview-optimize.js';
import { h, icon, mount } from '../shared/dom.js';
import { roving } from './lineage.js';
import { fmtScore, gridCandidates, label, taskBests } from './model.js';

export class ScoreGrid {
  readonly root: HTMLElement;
  private readonly body = h('div', { class: 'grid-scroll' });
  private readonly note = h('p', { class: 'muted grid-note' });

  constructor(
    private readonly select: (candidateId: string) => void,
    private readonly openRollout: (rolloutId: string) => void,
  ) {
    this.root = h('section', { class: 'card grid-card' }, h('h2', {}, 'Val scores by task'), this.note, this.body);
    roving(this.body, () => this.rowCells(0), { next: 'ArrowRight', prev: 'ArrowLeft' });
    this.body.addEventListener('keydown', (e) => this.moveRow(e));
  }

  /** The focusable cells of the row holding the focus (offset rows up or down). */
  private rowCells(offset: number): HTMLElement[] {
    const rows = [...this.body.querySelectorAll<HTMLElement>('tbody tr')];
    const at = rows.findIndex((r) => r.contains(document.activeElement));
    return at < 0 ? [] : [...(rows[at + offset]?.querySelectorAll<HTMLElement>('[data-cell]') ?? [])];
  }

  private moveRow(e: KeyboardEvent): void {
    if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
    const here = this.rowCells(0);
    const col = here.indexOf(document.activeElement as HTMLElement);
    const there = this.rowCells(e.key === 'ArrowDown' ? 1 : -1);
    if (col < 0 || !there.length) return;
    e.preventDefault();
    here[col]!.tabIndex = -1;
    const to = there[Math.min(col, there.length - 1)]!;
    to.tabIndex = 0;
    to.focus();
  }

  draw(view: OptimizationView, selected: string | null): void {
    const focused = (document.activeElement as HTMLElement | null)?.dataset.cell;
    const front = new Set(view.front);
    const bests = taskBests(view);
    const rows = gridCandidates(view.candidates);
    mount(
      this.note,
      `${rows.length} candidates scored on ${view.valTasks.length} val tasks; `,
      icon('star-full'),
      ' front: no other candidate is at least as good on every task and better on one. Bold: the best score on that task.',
    );
    const head = h(
      'tr',
      {},
      h('th', { scope: 'col', class: 'corner' }, 'candidate'),
      ...view.valTasks.map((t) => h('th', { scope: 'col', class: 'task', title: t }, t)),
      h('th', { scope: 'col', class: 'mean' }, 'mean'),
    );
    const body = rows.map((c) => {
      const name = h(
        'th',
        { scope: 'row', class: `cand${front.has(c.id) ? ' on-front' : ''}`, 'data-cell': `${c.id}|`, tabindex: -1, title: `Show candidate ${label(c)}` },
        label(c),
        front.has(c.id) ? h('span', { class: 'front-mark' }, ' ', icon('star-full'), ' front') : null,
      );
      name.addEventListener('click', () => this.select(c.id));
      name.addEventListener('keydown', (e) => (e.key === 'Enter' || e.key === ' ') && (e.preventDefault(), this.select(c.id)));
      const cells = view.valTasks.map((t) => {
        const s = c.val[t];
        if (!s) return h('td', { class: 'score missing', title: 'not scored on this task' }, '·');
        const best = s.score === bests.get(t);
        const td = h(
          'td',
          {
            class: `score${best ? ' task-best' : ''}`,
            'data-cell': `${c.id}|${t}`,
            tabindex: -1,
            title: `${label(c)} on ${t}: ${fmtScore(s.score)}${s.feedback ? `\n${s.feedback}` : ''}\nEnter: open its rollout`,
          },
          fmtScore(s.score),
        );
        td.style.setProperty('--score', String(Math.max(0, Math.min(1, s.score))));
        td.addEventListener('click', () => this.openRollout(s.rolloutId));
        td.addEventListener('keydown', (e) => (e.key === 'Enter' || e.key === ' ') && (e.preventDefault(), this.openRollout(s.rolloutId)));
        return td;
      });
      return h('tr', { class: c.id === selected ? 'selected' : '', 'data-candidate': c.id }, name, ...cells, h('td', { class: 'mean' }, fmtScore(c.valMean)));
    });
    mount(
      this.body,
      rows.length
        ? h('table', { class: 'score-grid' }, h('thead', {}, head), h('tbody', {}, ...body))
        : h('p', { class: 'muted' }, 'No candidate is scored on val yet.'),
    );
    const cells = [...this.body.querySelectorAll<HTMLElement>('[data-cell]')];
    const stop = cells.find((x) => x.dataset.cell === focused) ?? cells[0];
    if (stop) stop.tabIndex = 0;
    if (focused && stop?.dataset.cell === focused) stop.focus();
  }
}
