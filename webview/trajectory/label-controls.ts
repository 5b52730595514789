/**
 * "Your label" in a rollout's summary: a person marks the rollout good or bad, or gives it a score from 0 to 1 (the
 * host stores it as a reward span of source human: protocol/human-label.ts, extension/panels/data.ts). It is never the
 * reward training uses unless a run asks (--use-human-labels); `agl judge check --labels` checks a judge against it.
 * The line beside the buttons says the rollout's current label, and what happened to the last one given.
 */
import { humanLabelOf, type HumanLabel, type StoredHumanLabel } from '../../protocol/human-label.js';
import type { Span } from '../../protocol/store.js';
import { h } from '../shared/dom.js';

export type LabelRollout = (label: HumanLabel) => Promise<StoredHumanLabel>;

/** A stored label in words. */
export function labelText(l: StoredHumanLabel | null): string {
  if (!l) return 'Not labelled: mark it good or bad, or give it a score from 0 to 1.';
  return `Labelled ${l.kind === 'score' ? `with a score of ${l.value}` : l.kind}.`;
}

/** The controls of one attempt (its spans give the current label). */
export function rolloutLabelControls(spans: readonly Span[], label: LabelRollout): HTMLElement {
  const status = h('span', { class: 'label-status muted', 'aria-live': 'polite' }, labelText(humanLabelOf(spans)));
  const score = h('input', {
    class: 'label-score',
    type: 'number',
    min: '0',
    max: '1',
    step: '0.1',
    placeholder: '0-1',
    'aria-label': 'Score from 0 to 1',
  }) as HTMLInputElement;
  const buttons: HTMLElement[] = [];
  const give = async (l: HumanLabel | null) => {
    status.classList.remove('negative');
    if (!l) {
      status.classList.add('negative');
      status.textContent = 'Give a score from 0 to 1.';
      return;
    }
    for (const b of buttons) b.setAttribute('disabled', '');
    status.textContent = 'Saving…';
    try {
      status.textContent = labelText(await label(l));
    } catch (err) {
      status.classList.add('negative');
      status.textContent = `Not labelled: ${(err as Error).message}`;
    } finally {
      for (const b of buttons) b.removeAttribute('disabled');
    }
  };
  const button = (cls: string, icon: string, text: string, l: () => HumanLabel | null) => {
    const b = h('vscode-button', { class: cls, icon, secondary: true }, text);
    b.addEventListener('click', () => void give(l()));
    buttons.push(b);
    return b;
  };
  const scored = (): HumanLabel | null => {
    const v = score.value.trim() === '' ? NaN : Number(score.value);
    return v >= 0 && v <= 1 ? { kind: 'score', score: v } : null;
  };
  return h(
    'div',
    {
      class: 'summary-item wide label-controls',
      title: 'Your label checks an LLM judge (agl judge check --labels); training ignores it unless asked (--use-human-labels)',
    },
    h('span', { class: 'muted' }, 'Your label'),
    h(
      'div',
      { class: 'label-actions' },
      button('label-good', 'thumbsup', 'Good', () => ({ kind: 'good' })),
      button('label-bad', 'thumbsdown', 'Bad', () => ({ kind: 'bad' })),
      score,
      button('label-score-set', 'check', 'Score', scored),
      status,
    ),
  );
}
