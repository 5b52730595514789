/**
 * The STATES view, after Figure 1 of the Agent Lightning paper: rows are the rollout's semantic variables
 * (task input, each LLM output, tool results, emitted objects, rewards), columns the steps in time order.
 * A cell is filled once the variable has a value; the step that writes it is marked, and an LLM call
 * marks the variables its prompt read. Hovering a cell shows the value.
 */
import type { Span } from '../../protocol/store.js';
import { h, mount, preview } from '../shared/dom.js';
import { deriveStates, isFilled } from './model.js';

export function renderStatesView(root: HTMLElement, spans: Span[], input: unknown, openSpan: (spanId: string) => void): void {
  const table = deriveStates(spans, input);
  if (table.steps.length === 0) {
    mount(root, h('div', { class: 'empty-state' }, 'No steps recorded: the agent made no LLM call and emitted nothing.'));
    return;
  }
  const head = h(
    'tr',
    {},
    h('th', { class: 'var-col' }, 'Variable'),
    ...table.steps.map((step, i) => {
      const th = h(
        'th',
        { class: `step-col kind-${step.kind}`, title: step.label },
        h('div', { class: 'step-num' }, `s${i + 1}`),
        h('div', { class: 'step-label' }, step.label),
      );
      if (step.span) {
        th.classList.add('clickable');
        th.addEventListener('click', () => openSpan(step.span!.spanId));
      }
      return th;
    }),
  );
  const rows = table.variables.map((v) =>
    h(
      'tr',
      { 'data-variable': v.id },
      h(
        'th',
        { class: `var-col kind-${v.kind}`, title: v.value },
        h('div', { class: 'var-label' }, v.label),
        h('div', { class: 'var-value muted' }, preview(v.value, 48)),
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
            title: `${v.label} after ${step.label}: ${filled ? preview(v.value, 200) : '(empty)'}${read ? '\n(read by this call)' : ''}`,
          },
          h('span', { class: 'dot' }),
        );
      }),
    ),
  );
  mount(
    root,
    h(
      'div',
      { class: 'states-legend' },
      h('span', {}, h('span', { class: 'cell-sample written' }), ' written at this step'),
      h('span', {}, h('span', { class: 'cell-sample filled' }), ' holds a value'),
      h('span', {}, h('span', { class: 'cell-sample empty' }), ' empty'),
      h('span', {}, h('span', { class: 'cell-sample filled read' }), ' read by the LLM call'),
    ),
    h('div', { class: 'states-scroll' }, h('table', { class: 'states-table' }, h('thead', {}, head), h('tbody', {}, ...rows))),
  );
}
