/**
 * The STATES view, after Figure 1 of the Agent Lightning paper: rows are the rollout's semantic variables
 * (task input, each LLM output, tool results, emitted objects, rewards), columns the steps in time order.
 * A cell is filled once the variable has a value; the step that writes it is marked, and an LLM call
 * marks the variables its prompt read. Hovering a cell shows the value.
 * Column headers stay short: a step whose text is long (a tool's whole result) shows its first characters and a
 * button that puts the whole text in the panel under the table; a variable's name does the same for its value.
 * An LLM call's header names its role and number (the one numbering, protocol/span-reading.ts), the policy that
 * served it and whether it was trained (protocol/call-roles.ts). When the steps do not fit (a panel beside the
 * editor), a line above the table says which steps are in sight and that it scrolls sideways, and its right edge fades.
 */
import type { CallInfo } from '../../protocol/call-roles.js';
import type { Span } from '../../protocol/store.js';
import { activatable, h, icon, mount, preview } from '../shared/dom.js';
import { deriveStates, isFilled } from './model.js';

/** Characters of a step's text shown in its column header. */
export const STEP_LABEL_CHARS = 60;

type StatesTable = ReturnType<typeof deriveStates>;

/** The whole text of a step or a variable, on demand, in a region under the table (the same one again closes it). */
class WholeText {
  readonly element = h('div', { class: 'states-full', hidden: true, role: 'region', 'aria-label': 'Whole text' });
  private shownKey: string | null = null;

  private show(key: string, title: string, text: string): void {
    const full = this.element;
    if (this.shownKey === key) {
      this.hide();
      return;
    }
    this.shownKey = key;
    const close = h('vscode-toolbar-button', { icon: 'close', label: 'Close', title: 'Close', class: 'states-full-close' });
    close.addEventListener('click', () => this.hide());
    mount(
      full,
      h('div', { class: 'states-full-head' }, h('span', { class: 'states-full-title' }, title), h('div', { class: 'spacer' }), close),
      h('div', { class: 'states-full-text mono', 'data-full': key }, text),
    );
    full.hidden = false;
    full.scrollIntoView({ block: 'nearest' });
  }

  private hide(): void {
    this.element.hidden = true;
    this.shownKey = null;
  }

  /** The "…" button that shows `text` whole under the title. */
  button(key: string, title: string, text: string, what: string): HTMLElement {
    const b = h(
      'button',
      { class: 'states-more', title: `Show ${what} whole (${text.length.toLocaleString('en-US')} characters)`, 'aria-label': `Show ${what} whole` },
      icon('ellipsis'),
    );
    b.addEventListener('click', (e) => {
      e.stopPropagation();
      this.show(key, title, text);
    });
    return b;
  }
}

const policyText = (info: CallInfo): string => `${info.policy}${info.policyVersion === null ? '' : ` v${info.policyVersion}`}`;

/** The header row: one column per step, its number, its text (cut), the policy of a call; a step with a span opens it. */
function stepsHeader(table: StatesTable, calls: CallInfo[], whole: WholeText, openSpan: (spanId: string) => void): HTMLElement {
  const byCall = new Map(calls.map((c) => [c.spanId, c]));
  return h(
    'tr',
    {},
    h('th', { class: 'var-col' }, 'Variable'),
    ...table.steps.map((step, i) => {
      const info = step.span ? byCall.get(step.span.spanId) : undefined;
      const long = step.label.length > STEP_LABEL_CHARS;
      const title = [long ? preview(step.label, 300) : step.label, info?.policy ? `policy ${policyText(info)}` : null, info?.why ?? null]
        .filter(Boolean)
        .join('\n');
      const th = h(
        'th',
        {
          class: `step-col kind-${step.kind}${info && !info.transition && info.training !== 'pending' ? ' untrained' : ''}`,
          title,
          'data-step': i + 1,
          'data-call': info?.number ?? null,
        },
        h('div', { class: 'step-num' }, `s${i + 1}`),
        h('div', { class: 'step-label' }, long ? preview(step.label, STEP_LABEL_CHARS) : step.label),
        info?.policy ? h('div', { class: 'step-policy muted' }, policyText(info)) : null,
        long ? whole.button(`step-${i + 1}`, `s${i + 1} · ${step.kind === 'tool' ? 'tool step' : step.kind}`, step.label, 'this step') : null,
      );
      if (step.span) {
        th.classList.add('clickable');
        activatable(th, () => openSpan(step.span!.spanId));
      }
      return th;
    }),
  );
}

/** A variable's row: its name and value, then a cell per step (written, holds a value, empty; read by the call). */
function variableRow(table: StatesTable, v: StatesTable['variables'][number], whole: WholeText): HTMLElement {
  return h(
    'tr',
    { 'data-variable': v.id },
    h(
      'th',
      { class: `var-col kind-${v.kind}`, title: preview(v.value, 300) },
      h('div', { class: 'var-label' }, v.label),
      h('div', { class: 'var-value muted' }, preview(v.value, 48), v.value.length > 48 ? whole.button(`var-${v.id}`, v.label, v.value, 'the value') : null),
    ),
    ...table.steps.map((step, i) => {
      const filled = isFilled(table, v.id, i);
      const written = step.writes.includes(v.id);
      const read = step.reads.includes(v.id);
      const state = written ? 'written' : filled ? 'filled' : 'empty';
      return h(
        'td',
        {
          class: `cell ${state}${read ? ' read' : ''} kind-${v.kind}`,
          'data-state': state,
          'data-read': read ? 'true' : null,
          title: `${v.label} after s${i + 1}: ${filled ? preview(v.value, 200) : '(empty)'}${read ? '\n(read by this call)' : ''}`,
        },
        h('span', { class: 'dot' }),
      );
    }),
  );
}

const legend = (): HTMLElement =>
  h(
    'div',
    { class: 'states-legend' },
    h('span', {}, h('span', { class: 'cell-sample written' }), ' written at this step'),
    h('span', {}, h('span', { class: 'cell-sample filled' }), ' holds a value'),
    h('span', {}, h('span', { class: 'cell-sample empty' }), ' empty'),
    h('span', {}, h('span', { class: 'cell-sample filled read' }), ' read by the LLM call'),
  );

export function renderStatesView(root: HTMLElement, spans: Span[], input: unknown, calls: CallInfo[], openSpan: (spanId: string) => void): void {
  const table = deriveStates(spans, input);
  if (table.steps.length === 0) {
    mount(root, h('div', { class: 'empty-state' }, 'No steps recorded: the agent made no LLM call and emitted nothing.'));
    return;
  }
  const whole = new WholeText();
  const head = stepsHeader(table, calls, whole, openSpan);
  const rows = table.variables.map((v) => variableRow(table, v, whole));
  const tableEl = h('table', { class: 'states-table' }, h('thead', {}, head), h('tbody', {}, ...rows));
  const scroller = h('div', { class: 'states-scroll', tabindex: 0, role: 'region', 'aria-label': 'Steps and variables' }, tableEl);
  const cue = h('div', { class: 'states-cue muted', hidden: true, 'aria-live': 'polite' });
  const updateCue = (): void => scrollCue(scroller, head, cue);
  scroller.addEventListener('scroll', updateCue, { passive: true });
  const resized = new ResizeObserver(() => (scroller.isConnected ? updateCue() : resized.disconnect()));
  resized.observe(scroller);
  mount(root, legend(), cue, scroller, whole.element);
}

/** Which steps are in sight when the table scrolls sideways, and which way the others are ("s1–s3 of 6 steps in sight"). */
function scrollCue(scroller: HTMLElement, head: HTMLElement, cue: HTMLElement): void {
  const more = { left: scroller.scrollLeft > 1, right: scroller.scrollLeft + scroller.clientWidth < scroller.scrollWidth - 1 };
  scroller.classList.toggle('more-right', more.right);
  cue.hidden = !more.left && !more.right;
  if (cue.hidden) return;
  const from = head.querySelector('th.var-col')!.getBoundingClientRect().right - 1;
  const to = scroller.getBoundingClientRect().right + 1;
  const steps = [...head.querySelectorAll<HTMLElement>('th.step-col')];
  const inSight = steps.filter((th) => {
    const r = th.getBoundingClientRect();
    return r.left >= from && r.right <= to;
  });
  const range = inSight.length ? `s${inSight[0]!.dataset.step}–s${inSight.at(-1)!.dataset.step} of ${steps.length} steps in sight` : `${steps.length} steps`;
  const way = more.left && more.right ? 'scroll sideways for the others' : more.right ? 'scroll right for the others →' : '← scroll left for the others';
  mount(cue, icon('arrow-both'), ` ${range}: ${way}`);
}
