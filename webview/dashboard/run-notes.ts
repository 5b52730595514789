/**
 * The dashboard's notes on a run: the diagnosis of a run that cannot learn (protocol/training-health.ts, the same
 * words agl train prints and the editor's notification says), then the steps that taught nothing or little: the
 * notes that say the same thing gathered on one line with their steps, each with the first thing to try about it.
 * A note's step opens its groups.
 */
import { diagnoseLearning, runContext, stepNotes, type LearningDiagnosis, type StepNote } from '../../protocol/training-health.js';
import type { MetricPoint, TrainingRun } from '../../protocol/store.js';
import { h, icon, mount } from '../shared/dom.js';

function diagnosisBlock(diagnosis: LearningDiagnosis): HTMLElement {
  return h(
    'div',
    { class: 'learning-diagnosis', role: 'alert', 'data-kind': diagnosis.kind },
    h('div', { class: 'diagnosis-title' }, icon('warning'), ` ${diagnosis.message}`),
    h('div', {}, h('span', { class: 'muted' }, 'Likely cause: '), diagnosis.cause),
    h('div', { class: 'muted' }, 'What to try:'),
    h('ul', {}, ...diagnosis.advice.map((a) => h('li', {}, a))),
  );
}

/**
 * Draws the notes of `run` from its `points` into `notes`. `notesOpen`: whether the user opened (or closed) a run's
 * notes on steps, kept by the caller across redraws; `openGroups` opens a step's GRPO groups.
 */
export function drawRunNotes(
  notes: HTMLElement,
  run: TrainingRun,
  points: MetricPoint[],
  notesOpen: Map<string, boolean>,
  openGroups: (step: number) => void,
): void {
  const ctx = runContext(run);
  const diagnosis = diagnoseLearning(points, ctx);
  const list = stepNotes(points, ctx);
  const noted = new Set(list.map((n) => n.step)).size;
  const stepLink = (step: number): HTMLElement => {
    const a = h('a', { href: '#', class: 'note-step', 'data-step': step, title: `Open step ${step}'s GRPO groups` }, `step ${step}`);
    a.addEventListener('click', (e) => {
      e.preventDefault();
      openGroups(step);
    });
    return a;
  };
  const alike = new Map<string, StepNote[]>();
  for (const n of list) alike.set(`${n.kind}\u0000${n.text}`, [...(alike.get(`${n.kind}\u0000${n.text}`) ?? []), n]);
  const details = list.length
    ? h(
        'details',
        { class: 'step-notes', open: notesOpen.get(run.id) ?? (!diagnosis && alike.size <= 3) },
        h('summary', {}, icon('info'), ` Notes on ${noted} step${noted === 1 ? '' : 's'} that taught little`),
        h(
          'ul',
          {},
          ...[...alike.values()].map((same) =>
            h(
              'li',
              {
                class: `step-note note-${same[0]!.kind}`,
                'data-step': same[0]!.step,
                'data-steps': same.map((n) => n.step).join(' '),
                'data-kind': same[0]!.kind,
              },
              ...same.flatMap((n, i) => [i ? ', ' : '', stepLink(n.step)]),
              `: ${same[0]!.text}`,
              h('div', { class: 'muted what-to-try' }, `Try first: ${same[0]!.tryFirst}`),
            ),
          ),
        ),
      )
    : null;
  // Opened or closed by the user (a click or Enter on its summary), the notes stay so when new points redraw them.
  details?.querySelector('summary')?.addEventListener('click', () => notesOpen.set(run.id, !(details as HTMLDetailsElement).open));
  mount(notes, diagnosis ? diagnosisBlock(diagnosis) : null, details);
}
