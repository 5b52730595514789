/**
 * The span tree beside its waterfall, for one attempt: rows in tree order with a bar for when each span
 * ran, a time axis with labelled tick marks, a span-name column the user can widen or narrow (drag the
 * handle, or focus it and press the arrow keys), and keyboard navigation as in VS Code's trees:
 * Up/Down move, Right expands (or enters), Left collapses (or goes to the parent), Home/End jump,
 * Enter or Space opens the span's detail.
 */
import type { Span } from '../../protocol/store.js';
import { spanKind } from '../../protocol/span-reading.js';
import { fmtDuration, h, icon, mount } from '../shared/dom.js';
import { buildSpanTree, flattenTree, timeRange, type SpanNode } from './model.js';

export const KIND_ICON: Record<ReturnType<typeof spanKind>, string> = {
  agent: 'robot',
  llm: 'sparkle',
  tool: 'tools',
  reward: 'star-full',
  object: 'json',
  message: 'comment',
  exception: 'error',
  prompt: 'note',
  judge: 'law',
  operation: 'symbol-event',
};

/** The span-name column's width in px once the user has set it: the caller keeps it across redraws of the view. */
export interface SpanTreeLayout {
  nameColumnPx: number | null;
}

export interface SpanTreeOptions {
  spans: Span[];
  layout: SpanTreeLayout;
  label(span: Span): string;
  chips(span: Span): HTMLElement[];
  selectedId: string | undefined;
  /** Enter, Space or a click on a row. */
  open(span: Span): void;
}

const MIN_NAME_PX = 120;
const MIN_WATERFALL_PX = 80;

/** The next "nice" step after `step`: 1 -> 2 -> 5 -> 10 times a power of ten. */
function nextNiceStep(step: number): number {
  const magnitude = 10 ** Math.floor(Math.log10(step) + 1e-9);
  const norm = Math.round(step / magnitude);
  return (norm < 2 ? 2 : norm < 5 ? 5 : 10) * magnitude;
}

/**
 * Evenly spaced "nice" tick values (1, 2 or 5 times a power of ten, in ms) from 0 to `durationMs`, about
 * `target` of them; with `widthPx`, the step grows until neighbouring ticks are `minGapPx` apart.
 */
export function axisTicks(durationMs: number, target = 5, widthPx = 0, minGapPx = 0): { step: number; ticks: number[] } {
  if (!(durationMs > 0)) return { step: 1, ticks: [0] };
  const raw = durationMs / Math.max(1, target);
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const norm = raw / magnitude;
  let step = (norm < 1.5 ? 1 : norm < 3.5 ? 2 : norm < 7.5 ? 5 : 10) * magnitude;
  // Wider steps while ticks are too close, but always two ticks at least (0 and one more).
  while (widthPx > 0 && (widthPx * step) / durationMs < minGapPx && nextNiceStep(step) <= durationMs) step = nextNiceStep(step);
  const ticks: number[] = [];
  for (let i = 0; i * step <= durationMs * (1 + 1e-9); i++) ticks.push(Math.round(i * step * 1e6) / 1e6);
  return { step, ticks };
}

/** A tick's label: ms below a second, else seconds with as many decimals as the step needs. */
export function tickLabel(ms: number, step: number): string {
  if (ms === 0) return '0';
  if (ms < 1000 && step < 1000) return `${+ms.toFixed(3)} ms`;
  const decimals = step >= 1000 ? 0 : step >= 100 ? 1 : step >= 10 ? 2 : 3;
  return `${(ms / 1000).toFixed(decimals)} s`;
}

/** Room each tick label needs, so that labels never overlap however wide the waterfall column is. */
const PX_PER_TICK = 90;

/** The time axis above the waterfall; its ticks are (re)laid out for the width it has (`fill`). */
function axis(range: { start: number; end: number }): { el: HTMLElement; fill(widthPx: number): void } {
  const duration = range.end - range.start;
  const el = h('div', { class: 'waterfall axis', title: `0 to ${fmtDuration(duration)}` });
  let shown = -1;
  const fill = (widthPx: number): void => {
    const target = widthPx > 0 ? Math.max(2, Math.min(10, Math.floor(widthPx / PX_PER_TICK))) : 4;
    const { step, ticks } = axisTicks(duration, target, widthPx, PX_PER_TICK);
    if (step === shown) return;
    shown = step;
    mount(
      el,
      ...ticks.map((t) => {
        const at = (t / duration) * 100;
        const tick = h(
          'span',
          { class: `tick${at > 88 ? ' end' : t === 0 ? ' start' : ''}`, 'data-ms': t },
          h('span', { class: 'tick-label' }, tickLabel(t, step)),
        );
        tick.style.left = `${at}%`;
        return tick;
      }),
    );
  };
  return { el, fill };
}

/** The handle between the name column and the waterfall. */
function columnResizer(pane: HTMLElement, layout: SpanTreeLayout): HTMLElement {
  const handle = h('div', {
    class: 'col-resizer',
    role: 'separator',
    'aria-orientation': 'vertical',
    'aria-label': 'Resize the span name column',
    tabindex: 0,
    title: 'Drag (or focus and press ←/→) to resize',
  });
  const setWidth = (px: number): void => {
    const max = pane.clientWidth - MIN_WATERFALL_PX;
    layout.nameColumnPx = Math.round(Math.max(MIN_NAME_PX, Math.min(px, max)));
    pane.style.setProperty('--name-col', `${layout.nameColumnPx}px`);
    handle.setAttribute('aria-valuenow', String(layout.nameColumnPx));
  };
  const current = (): number =>
    layout.nameColumnPx ?? (pane.querySelector('.span-row.header .span-name') as HTMLElement | null)?.getBoundingClientRect().width ?? 240;
  handle.addEventListener('pointerdown', (e) => {
    e.preventDefault();
    handle.setPointerCapture(e.pointerId);
    const left = pane.getBoundingClientRect().left;
    const move = (ev: PointerEvent): void => setWidth(ev.clientX - left);
    const up = (): void => {
      handle.removeEventListener('pointermove', move);
      handle.removeEventListener('pointerup', up);
    };
    handle.addEventListener('pointermove', move);
    handle.addEventListener('pointerup', up);
  });
  handle.addEventListener('click', (e) => e.stopPropagation());
  handle.addEventListener('keydown', (e) => {
    if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') {
      e.preventDefault();
      e.stopPropagation();
      setWidth(current() + (e.key === 'ArrowRight' ? 16 : -16));
    }
  });
  return handle;
}

/** Draws the tree into `pane` (role tree); `select` marks a span chosen elsewhere (the States view). */
export function renderSpanTree(pane: HTMLElement, opts: SpanTreeOptions): { select(spanId: string): void } {
  const tree = new SpanTree(pane, opts);
  tree.draw(false);
  return { select: (spanId) => tree.select(spanId) };
}

/** The tree of one attempt's spans in its pane: which nodes are collapsed, which is selected and which has the focus. */
class SpanTree {
  private readonly tree: SpanNode[];
  private readonly range: { start: number; end: number };
  private readonly parentOf = new Map<string, SpanNode | null>();
  private readonly collapsed = new Set<string>();
  // The axis follows the waterfall column's width (window resized, name column dragged).
  private axisObserver: ResizeObserver | null = null;
  private selectedId: string | undefined;
  private focusedId: string | undefined;

  constructor(
    private readonly pane: HTMLElement,
    private readonly opts: SpanTreeOptions,
  ) {
    this.tree = buildSpanTree(opts.spans);
    this.range = timeRange(opts.spans);
    const index = (node: SpanNode, parent: SpanNode | null): void => {
      this.parentOf.set(node.span.spanId, parent);
      node.children.forEach((c) => index(c, node));
    };
    this.tree.forEach((r) => index(r, null));
    this.selectedId = opts.selectedId;
    this.focusedId = this.selectedId ?? this.tree[0]?.span.spanId;
    pane.setAttribute('role', 'tree');
    pane.setAttribute('aria-label', 'Spans');
    if (opts.layout.nameColumnPx !== null) pane.style.setProperty('--name-col', `${opts.layout.nameColumnPx}px`);
    pane.addEventListener('keydown', (e) => this.onKey(e));
  }

  select(spanId: string): void {
    this.selectedId = spanId;
    this.focusedId = spanId;
    this.draw(false);
  }

  draw(keepFocus: boolean): void {
    const { pane } = this;
    const visible = flattenTree(this.tree, this.collapsed);
    if (!visible.some((n) => n.span.spanId === this.focusedId)) this.focusedId = visible[0]?.span.spanId;
    const rows = visible.map((node) => this.row(node));
    const timeAxis = axis(this.range);
    timeAxis.fill(timeAxis.el.clientWidth);
    mount(pane, h('div', { class: 'span-row header' }, h('div', { class: 'span-name' }, 'Span', columnResizer(pane, this.opts.layout)), timeAxis.el), ...rows);
    this.axisObserver?.disconnect();
    this.axisObserver = new ResizeObserver(() => timeAxis.fill(timeAxis.el.clientWidth));
    this.axisObserver.observe(timeAxis.el);
    if (keepFocus) (pane.querySelector(`.span-row[tabindex="0"]`) as HTMLElement | null)?.focus();
  }

  /** A node's row: its name (twisty, kind, label, chips) indented by depth, and its bar on the waterfall. */
  private row(node: SpanNode): HTMLElement {
    const { range, collapsed, selectedId, focusedId } = this;
    const s = node.span;
    const kind = spanKind(s);
    const left = ((s.startTime - range.start) / (range.end - range.start)) * 100;
    const width = Math.max(0.4, (((s.endTime ?? s.startTime) - s.startTime) / (range.end - range.start)) * 100);
    const label = this.opts.label(s);
    const bar = h('div', { class: `bar kind-${kind}`, title: `${label} · ${fmtDuration(s.endTime !== null ? s.endTime - s.startTime : null)}` });
    bar.style.left = `${left}%`;
    bar.style.width = `${Math.min(width, 100 - left)}%`;
    const hasChildren = node.children.length > 0;
    const twisty = hasChildren ? icon(collapsed.has(s.spanId) ? 'chevron-right' : 'chevron-down', 'twisty') : h('span', { class: 'twisty' });
    twisty.addEventListener('click', (e) => {
      e.stopPropagation();
      this.toggle(node);
    });
    const name = h(
      'div',
      { class: 'span-name' },
      twisty,
      icon(KIND_ICON[kind], `kind-icon kind-${kind}`),
      h('span', { class: 'label', title: label }, label),
      ...this.opts.chips(s),
    );
    name.style.paddingLeft = `${node.depth * 14 + 4}px`;
    const row = h(
      'div',
      {
        class: `span-row kind-${kind}${s.spanId === selectedId ? ' selected' : ''}${s.spanId === focusedId ? ' focused' : ''}`,
        role: 'treeitem',
        'data-span-id': s.spanId,
        'data-kind': kind,
        tabindex: s.spanId === focusedId ? 0 : -1,
        'aria-level': node.depth + 1,
        'aria-selected': s.spanId === selectedId ? 'true' : 'false',
        'aria-expanded': hasChildren ? String(!collapsed.has(s.spanId)) : null,
      },
      name,
      h('div', { class: 'waterfall' }, bar),
    );
    row.addEventListener('click', () => {
      this.focusedId = s.spanId;
      this.open(s);
    });
    return row;
  }

  private toggle(node: SpanNode, open?: boolean): void {
    const id = node.span.spanId;
    const willOpen = open ?? this.collapsed.has(id);
    if (willOpen) this.collapsed.delete(id);
    else this.collapsed.add(id);
    this.draw(true);
  }

  private open(s: Span): void {
    this.selectedId = s.spanId;
    this.draw(true);
    this.opts.open(s);
  }

  private moveTo(n: SpanNode | null | undefined): void {
    if (!n) return;
    this.focusedId = n.span.spanId;
    this.draw(true);
  }

  /** Keys as in VS Code's trees. */
  private onKey(e: KeyboardEvent): void {
    if ((e.target as HTMLElement).closest('.col-resizer')) return;
    const visible = flattenTree(this.tree, this.collapsed);
    const at = visible.findIndex((n) => n.span.spanId === this.focusedId);
    const node = visible[at];
    if (!node) return;
    const open = node.children.length > 0 && !this.collapsed.has(node.span.spanId);
    switch (e.key) {
      case 'ArrowDown':
        this.moveTo(visible[at + 1]);
        break;
      case 'ArrowUp':
        this.moveTo(visible[at - 1]);
        break;
      case 'Home':
        this.moveTo(visible[0]);
        break;
      case 'End':
        this.moveTo(visible[visible.length - 1]);
        break;
      case 'ArrowRight':
        if (node.children.length && !open) this.toggle(node, true);
        else if (open) this.moveTo(node.children[0]);
        break;
      case 'ArrowLeft':
        if (open) this.toggle(node, false);
        else this.moveTo(this.parentOf.get(node.span.spanId));
        break;
      case 'Enter':
      case ' ':
        this.open(node.span);
        break;
      default:
        return;
    }
    e.preventDefault();
  }
}
