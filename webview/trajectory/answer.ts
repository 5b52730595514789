/**
 * An episode's answer as the viewer shows it (protocol/span-reading.ts episodeAnswer: what the agent returned or
 * emitted as its result, never an LLM reply): an object's fields one per line, anything else as text, a long one folded
 * after 10 lines (shared/fold.ts); its kind as the agent wrote it (`sql.final`); an episode that recorded none says so. Also the output the agent emitted as what it scored against, shown beside a group's samples.
 */
import type { EpisodeAnswer } from '../../protocol/span-reading.js';
import { h } from '../shared/dom.js';
import { foldable } from '../shared/fold.js';

/** A value as text: strings as they are, anything else as JSON. */
export function valueText(v: unknown): string {
  return typeof v === 'string' ? v : (JSON.stringify(v, null, 1) ?? String(v));
}

/** An answer's value: an object as `key value` lines (each value wrapped, folded after 10 lines), anything else as one text. */
export function answerValue(value: unknown): HTMLElement {
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    return h(
      'dl',
      { class: 'answer-fields' },
      ...Object.entries(value).flatMap(([k, v]) => [h('dt', {}, k), h('dd', { class: 'mono', 'data-field': k }, foldable(h('div', {}, valueText(v))))]),
    );
  }
  return foldable(h('div', { class: 'answer-text mono' }, valueText(value)));
}

/** Where an answer came from, in words (a tooltip). */
export function answerSource(a: EpisodeAnswer): string {
  if (a.source === 'returned') return 'What the agent function returned';
  if (a.source === 'emitted') return `The object the agent emitted as its result${a.kind ? ` (agl.object.kind ${a.kind})` : ''}`;
  return 'The agent recorded no answer: it returned only its reward and emitted no result object';
}

/**
 * The answer block: a label, and the value or a note that there is none. `notRun`: why there is none because the
 * rollout never ran (queued), said instead of blaming the agent.
 */
export function answerBlock(a: EpisodeAnswer, label = 'Answer', notRun: string | null = null): HTMLElement {
  return h(
    'div',
    { class: `answer answer-${a.source}`, 'data-answer-key': a.key, title: answerSource(a) },
    h('div', { class: 'metric-label' }, label, a.kind ? h('span', { class: 'answer-kind' }, ` · ${a.kind}`) : null),
    a.source === 'none' && notRun
      ? h('div', { class: 'muted no-answer not-run' }, notRun)
      : a.source === 'none'
        ? h(
            'div',
            { class: 'muted no-answer' },
            'No answer recorded: the agent returned only its reward and emitted no result. ',
            h('span', { class: 'hint' }, "Return it, or emitObject(answer, { 'agl.object.kind': 'final' }), to see it here."),
          )
        : answerValue(a.value),
  );
}

/**
 * What the agent emitted as the output it scored the samples against (kind `expected` / `<name>.expected`: sql's gold
 * query and rows), shown under the task, whose expected fields the task block already marks: a field the task shows
 * with the same value (sql's gold query) is named, not shown again.
 */
export function expectedBlock(emitted: EpisodeAnswer, taskFields: { key: string; value: unknown }[] = []): HTMLElement {
  const object = emitted.value && typeof emitted.value === 'object' && !Array.isArray(emitted.value) ? (emitted.value as Record<string, unknown>) : null;
  const inTask = (v: unknown) => taskFields.find((f) => valueText(f.value) === valueText(v));
  const repeated = object ? Object.entries(object).filter(([, v]) => inTask(v)) : [];
  const value = object && repeated.length ? Object.fromEntries(Object.entries(object).filter(([, v]) => !inTask(v))) : emitted.value;
  const keys = object ? Object.keys(object) : [];
  const same = repeated.map(([k, v]) => `its ${k} is the task's ${inTask(v)!.key} above`).join('; ');
  return h(
    'div',
    { class: 'expected-output' },
    h(
      'div',
      { class: 'expected-emitted', title: `What the agent emitted as the output it scored against${emitted.kind ? ` (${emitted.kind})` : ''}` },
      h(
        'div',
        { class: 'metric-label' },
        keys.includes('result') ? 'Expected result' : 'Expected output',
        h('span', { class: 'answer-kind' }, ` · ${emitted.kind}`),
      ),
      same ? h('div', { class: 'muted expected-same' }, `(${same})`) : null,
      answerValue(value),
    ),
  );
}
