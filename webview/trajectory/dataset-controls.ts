/**
 * "Add to dataset" in the viewer (the host appends the rows: extension/panels/dataset-add.ts). On one rollout: the
 * expected answer in an editable field, starting from the task's expected value when it has one, else from the
 * recorded answer labelled as such (never from one that scored 0), said beside its label; what the user writes there instead is the
 * corrected answer (a recorded string stays a string; otherwise JSON when it parses, else the text), and the row keeps
 * it. On the list: the rollouts selected (rollouts-selection.ts), else every rollout the filter shows. Each says what
 * was added (or that the user cancelled) in a line beside its button.
 */
import type { EpisodeAnswer } from '../../protocol/span-reading.js';
import { type DatasetAdded, type DatasetTarget, datasetAddedText } from '../../protocol/webview-trajectory.js';
import { h } from '../shared/dom.js';

export type AddToDataset = (target: DatasetTarget) => Promise<DatasetAdded | null>;

/** What was added, in words. */
export function addedText(r: DatasetAdded | null): string {
  return r ? datasetAddedText(r) : 'Not added: no dataset was picked.';
}

/** Runs `add` for the target `make` gives (null: `make` showed why not), showing progress and then what happened in `status`. */
export async function runAdd(button: HTMLElement, status: HTMLElement, add: AddToDataset, make: () => DatasetTarget | null): Promise<void> {
  const target = make();
  if (!target) return;
  button.setAttribute('disabled', '');
  status.classList.remove('negative');
  status.textContent = 'Adding…';
  try {
    status.textContent = addedText(await add(target));
  } catch (err) {
    status.classList.add('negative');
    status.textContent = `Not added: ${(err as Error).message}`;
  } finally {
    button.removeAttribute('disabled');
  }
}

/** The answer as the field shows it: a string as it is, anything else as JSON; '' for none. */
function answerText(a: EpisodeAnswer): string {
  if (a.source === 'none') return '';
  return typeof a.value === 'string' ? a.value : JSON.stringify(a.value);
}

/** The value the field's text stands for (see the header). */
export function expectedValue(text: string, recorded: EpisodeAnswer): unknown {
  if (recorded.source !== 'none' && typeof recorded.value === 'string') return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** What the expected-answer field starts from: the task's expected value, the recorded answer, or nothing. */
export interface ExpectedStart {
  text: string;
  /** `task`: a field of the task holding its expected output; `recorded`: the agent's answer; `none`: empty. */
  from: 'task' | 'recorded' | 'none';
  /** The value it stands for (a task's field as given). */
  value: unknown;
  /** The words beside the field's label: where its text came from. */
  said: string;
}

/**
 * Where the field starts: the task's expected value when it has one (answer, gold, ...); else the recorded answer,
 * labelled as such, unless the rollout scored 0 (its grader failed it: its answer is no expected one); else empty.
 */
export function expectedStart(answer: EpisodeAnswer, taskFields: { key: string; value: unknown }[], reward: number | null): ExpectedStart {
  const field = taskFields[0];
  if (field) return { text: valueText(field.value), from: 'task', value: field.value, said: `the task's ${field.key}` };
  if (answer.source === 'none') return { text: '', from: 'none', value: null, said: 'this rollout recorded none' };
  if (reward === 0) return { text: '', from: 'none', value: null, said: 'its recorded answer scored 0: write the right one' };
  return { text: answerText(answer), from: 'recorded', value: answer.value, said: 'recorded answer: correct it if wrong' };
}

const valueText = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

/** One rollout's expected answer (editable, starting as `expectedStart` says) and its Add to dataset button. */
export function rolloutDatasetControls(rolloutId: string, answer: EpisodeAnswer, add: AddToDataset, start = expectedStart(answer, [], null)): HTMLElement {
  const initial = start.text;
  const field = h('textarea', {
    class: 'expected-answer mono',
    id: 'expected-answer',
    rows: Math.min(6, Math.max(1, initial.split('\n').length)),
    spellcheck: 'false',
    placeholder: 'The answer this task expects',
    title: 'A recorded string stays a string; anything else is read as JSON when it parses, else as text',
  }) as HTMLTextAreaElement;
  field.value = initial;
  const mark = h('span', { class: 'corrected-mark', hidden: true }, ' · corrected');
  field.addEventListener('input', () => (mark.hidden = field.value === initial));
  const status = h('span', { class: 'dataset-status muted', 'aria-live': 'polite' });
  const button = h('vscode-button', { class: 'add-to-dataset', icon: 'beaker', secondary: true }, 'Add to dataset…');
  const target = (): DatasetTarget | null => {
    if (field.value === initial && start.from === 'recorded') return { kind: 'rollout', rolloutId };
    if (field.value === initial && start.from === 'task') return { kind: 'rollout', rolloutId, corrected: { expected: start.value } };
    if (!field.value.trim()) {
      status.textContent = `Write the expected answer first: ${start.said}.`;
      field.focus();
      return null;
    }
    return { kind: 'rollout', rolloutId, corrected: { expected: expectedValue(field.value, answer) } };
  };
  button.addEventListener('click', () => void runAdd(button, status, add, target));
  return h(
    'div',
    { class: 'summary-item wide dataset-controls' },
    h('label', { class: 'muted', for: 'expected-answer' }, 'Expected answer', mark),
    h('span', { class: 'expected-from' }, start.said),
    field,
    h('div', { class: 'dataset-actions' }, button, status),
  );
}
