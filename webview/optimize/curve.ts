/**
 * The optimization's curve, drawn with uPlot as the dashboard draws its charts: the best val score so far against the
 * rollouts used (a step line: it holds until a candidate beats it), each rise a point of the candidate that made it,
 * the x axis out to the budget. Below it the rises as buttons ("#3 0.714 after 48 rollouts"), which a keyboard reaches
 * and which select the candidate, as a click on a point does. Colours from the VS Code theme, drawn again when it
 * changes; the plot follows the card's width.
 */
import uPlot from 'uplot';
import type { CurvePoint, OptimizationView } from '../../protocol/webview-optimize.js';
import { runColor } from '../dashboard/chart-options.js';
import { tickLabels } from '../dashboard/format.js';
import { h, mount } from '../shared/dom.js';
import { fmtScore } from './model.js';

const HEIGHT = 180;

function themeColor(variable: string, fallback: string): string {
  return getComputedStyle(document.body).getPropertyValue(variable).trim() || fallback;
}

/** The step line's data: each rise, then the last best held out to the rollouts used. */
export function curveData(view: Pick<OptimizationView, 'curve' | 'rolloutsUsed'>): [number[], (number | null)[], (number | null)[]] {
  const xs: number[] = [];
  const line: (number | null)[] = [];
  const rises: (number | null)[] = [];
  for (const p of view.curve) {
    xs.push(p.rollouts);
    line.push(p.best);
    rises.push(p.best);
  }
  const last = view.curve.at(-1);
  if (last && view.rolloutsUsed > last.rollouts) {
    xs.push(view.rolloutsUsed);
    line.push(last.best);
    rises.push(null);
  }
  return [xs, line, rises];
}

export class BestValChart {
  private plot: uPlot | null = null;
  private view: OptimizationView | null = null;
  private readonly plotBox = h('div', { class: 'plot' });
  private readonly rises = h('div', { class: 'rises', role: 'list', 'aria-label': 'Where the best val score rose' });
  readonly root: HTMLElement;
  private readonly resize = new ResizeObserver(() => this.fit());
  private readonly themeWatch = new MutationObserver(() => this.view && this.draw(this.view, true));

  constructor(private readonly select: (candidateId: string) => void) {
    this.root = h(
      'section',
      { class: 'card curve-card', 'aria-label': 'Best val score against rollouts used' },
      h('h2', {}, 'Best val score'),
      h('div', { class: 'plot-row' }, h('div', { class: 'axis-title y-title' }, 'mean val score'), this.plotBox),
      h('div', { class: 'axis-title x-title' }, 'rollouts used'),
      this.rises,
    );
    this.resize.observe(this.plotBox);
    this.themeWatch.observe(document.documentElement, { attributes: true, attributeFilter: ['style', 'class'] });
    this.themeWatch.observe(document.body, { attributes: true, attributeFilter: ['class', 'data-vscode-theme-kind'] });
  }

  /** Draws the view's curve (again when its points or the theme changed). */
  draw(view: OptimizationView, force = false): void {
    const same =
      this.view &&
      JSON.stringify([this.view.curve, this.view.rolloutsUsed, this.budget(this.view)]) === JSON.stringify([view.curve, view.rolloutsUsed, this.budget(view)]);
    this.view = view;
    this.drawRises(view.curve);
    if (same && !force && this.plot) return;
    this.plot?.destroy();
    this.plot = null;
    if (!view.curve.length) {
      mount(this.plotBox, h('p', { class: 'muted empty-plot' }, 'No candidate is scored on every val task yet: the curve starts with the seed’s score.'));
      return;
    }
    mount(this.plotBox);
    this.plot = new uPlot(this.options(view), curveData(view), this.plotBox);
  }

  destroy(): void {
    this.resize.disconnect();
    this.themeWatch.disconnect();
    this.plot?.destroy();
  }

  private budget(view: OptimizationView): number {
    const b = (view.run.summary as { budget?: unknown }).budget;
    return typeof b === 'number' ? b : view.run.totalSteps;
  }

  private drawRises(curve: CurvePoint[]): void {
    const candidates = new Map(this.view?.candidates.map((c) => [c.id, c]));
    mount(
      this.rises,
      ...curve.map((p) => {
        const c = candidates.get(p.candidateId);
        const b = h(
          'button',
          { class: 'rise link-button', role: 'listitem', 'data-candidate': p.candidateId, title: `Show candidate ${c ? `#${c.ordinal}` : p.candidateId}` },
          `#${c?.ordinal ?? '?'} ${fmtScore(p.best)} after ${p.rollouts} rollouts`,
        );
        b.addEventListener('click', () => this.select(p.candidateId));
        return b;
      }),
    );
  }

  private options(view: OptimizationView): uPlot.Options {
    const fg = themeColor('--vscode-descriptionForeground', '#9d9d9d');
    const grid = themeColor('--vscode-editorWidget-border', '#454545');
    const font = `11px ${themeColor('--vscode-font-family', 'sans-serif')}`;
    const axis = { stroke: fg, grid: { stroke: grid, width: 0.5 }, ticks: { stroke: grid, width: 0.5 }, font };
    const color = runColor(0);
    const maxX = Math.max(this.budget(view), view.rolloutsUsed, 1);
    return {
      width: this.plotBox.clientWidth || 400,
      height: HEIGHT,
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { size: 7 } },
      scales: { x: { time: false, range: () => [0, maxX] }, y: { range: (_u, min, max) => [Math.min(0, min), Math.max(1, max)] } },
      axes: [
        { ...axis, size: 28, values: (_u, splits) => splits.map((v) => String(Math.round(v))) },
        { ...axis, size: 44, values: (_u, splits) => tickLabels(splits) },
      ],
      series: [
        { label: 'rollouts' },
        { label: 'best val', stroke: color, width: 2, paths: uPlot.paths.stepped!({ align: 1 }), points: { show: false } },
        { label: 'rise', stroke: color, width: 0, paths: () => null, points: { show: true, size: 8, fill: color } },
      ],
      hooks: {
        ready: [
          (u) =>
            u.over.addEventListener('click', () => {
              const i = u.cursor.idx;
              const p = i === null || i === undefined ? undefined : view.curve[Math.min(i, view.curve.length - 1)];
              if (p) this.select(p.candidateId);
            }),
        ],
      },
    };
  }

  private fit(): void {
    const width = this.plotBox.clientWidth;
    if (this.plot && width > 0 && Math.abs(this.plot.width - width) > 2) this.plot.setSize({ width, height: HEIGHT });
  }
}
