/**
 * One candidate in full: where it came from (origin, parents, the minibatch it was proposed from and the scores it was
 * decided on), its status and why, each of its prompts as a diff against its parent's (the edited prompt first; lines
 * and words marked by sign and by a background, an unchanged prompt folded) with the reflection or critique the
 * optimizer wrote beside it, and what to do with it: its rollouts in the trajectory viewer, Apply (the editor asks
 * first: a file seed opens in VS Code's diff editor, a string seed is promoted).
 */
import type { DiffLine } from '../../protocol/text-diff.js';
import type { OptimizationCandidate, OptimizationView } from '../../protocol/webview-optimize.js';
import { foldable } from '../shared/fold.js';
import { h, icon } from '../shared/dom.js';
import { fmtScore, label, ORIGIN_WORDS, promptChanges, reflectionProse, STATUS_LOOK, type PromptChange } from './model.js';

export interface CandidateActions {
  select(candidateId: string): void;
  openRollouts(candidateId: string): void;
  apply(candidateId: string): void;
}

/** A diff line: its sign (+, -, or a space) and its text, the changed words of a replaced line marked. */
function diffLine(line: DiffLine): HTMLElement {
  const sign = line.op === 'add' ? '+' : line.op === 'del' ? '-' : ' ';
  const words = line.parts ? line.parts.map((p) => (p.changed ? h(line.op === 'add' ? 'ins' : 'del', { class: 'word' }, p.text) : p.text)) : [line.text || ' '];
  return h('div', { class: `diff-line ${line.op}` }, h('span', { class: 'sign', 'aria-hidden': 'true' }, sign), h('span', { class: 'text' }, ...words));
}

function promptBlock(p: PromptChange, component: string | null): HTMLElement {
  const status = p.parentText === null ? 'its text' : p.changed ? 'changed' : 'unchanged';
  const body =
    p.changed && p.diff.length
      ? h('div', { class: 'diff', role: 'group', 'aria-label': `${p.name}: the parent's lines marked -, this candidate's +` }, ...p.diff.map(diffLine))
      : foldable(h('pre', { class: 'prompt-text' }, p.text), p.changed || p.parentText === null ? 12 : 3);
  return h(
    'div',
    { class: `prompt-change${p.changed ? ' changed' : ''}`, 'data-prompt': p.name },
    h('h3', {}, icon('note'), ` ${p.name} `, h('span', { class: 'muted' }, `· ${status}${p.name === component ? ' · the prompt this proposal edited' : ''}`)),
    body,
  );
}

/** Its lineage and decision in a line: "reflection on system from #2 · minibatch 0.33 → 0.67 on 3 tasks". */
function provenance(c: OptimizationCandidate, candidates: readonly OptimizationCandidate[], selectParent: (id: string) => void): HTMLElement {
  const parents = c.parents.map((id) => {
    const p = candidates.find((x) => x.id === id);
    const a = h('a', { class: 'parent-link', href: '#', 'data-candidate': id }, p ? label(p) : id);
    a.addEventListener('click', (e) => {
      e.preventDefault();
      selectParent(id);
    });
    return a;
  });
  const mb = c.scores.minibatch;
  return h(
    'div',
    { class: 'provenance' },
    h('span', {}, ORIGIN_WORDS[c.origin], c.component ? ` on ${c.component}` : ''),
    parents.length ? h('span', {}, ' from ', ...parents.flatMap((a, i) => (i ? [' and ', a] : [a]))) : null,
    mb
      ? h('span', { class: 'minibatch' }, ` · minibatch ${fmtScore(mb.parent)} → ${fmtScore(mb.child)}${c.minibatch ? ` on ${c.minibatch.length} tasks` : ''}`)
      : null,
    c.minibatch?.length ? h('span', { class: 'muted', title: c.minibatch.join(', ') }, ` (${c.minibatch.join(', ')})`) : null,
  );
}

/** What the optimizer wrote, without its fences, and its raw answer one click away (a <details>). */
function reflectionAside(thinking: string, c: OptimizationCandidate): HTMLElement {
  const raw = c.reflection!;
  const prose = reflectionProse(raw, c.prompts);
  return h(
    'aside',
    { class: 'reflection' },
    h('h3', {}, icon('comment'), ` ${thinking}`),
    foldable(h('div', { class: 'reflection-text' }, prose), 24),
    prose === raw ? null : h('details', { class: 'raw-answer' }, h('summary', {}, "The optimizer's raw answer"), h('pre', { class: 'raw-text' }, raw)),
  );
}

/** The panel of `c`; `best` is the run's best candidate (named as such). */
export function candidatePanel(c: OptimizationCandidate, view: OptimizationView, best: string | null, actions: CandidateActions): HTMLElement {
  const look = STATUS_LOOK[c.status];
  const onFront = view.front.includes(c.id);
  const changes = promptChanges(c, view.candidates);
  const thinking = c.reflection ? (c.origin === 'edit' ? 'Critique' : 'Reflection') : null;
  const rollouts = h(
    'vscode-button',
    { class: 'open-rollouts', secondary: true, title: `List the ${c.rollouts} rollouts of ${label(c)} in the trajectory viewer` },
    `Rollouts (${c.rollouts})`,
  );
  rollouts.addEventListener('click', () => actions.openRollouts(c.id));
  const decided = c.status === 'accepted' || c.status === 'rejected';
  const apply = h(
    'vscode-button',
    {
      class: 'apply',
      disabled: !decided,
      title: decided
        ? 'Use this candidate: a file seed opens in the diff editor, a string seed is promoted; you are asked first'
        : `${look.word}: not scored, nothing to apply`,
    },
    'Apply…',
  );
  apply.addEventListener('click', () => decided && actions.apply(c.id));
  return h(
    'section',
    { class: 'card candidate-card', 'data-candidate': c.id, 'aria-label': `Candidate ${label(c)}` },
    h(
      'div',
      { class: 'candidate-head' },
      h('h2', {}, `Candidate ${label(c)}`),
      h('span', { class: `status status-${c.status}`, title: look.title }, icon(look.icon), ` ${look.word}`),
      c.id === best ? h('span', { class: 'pill best-pill' }, icon('star-full'), ' best') : null,
      onFront ? h('span', { class: 'front-mark', title: 'on the per-task Pareto front' }, icon('star-full'), ' front') : null,
      h('span', { class: 'kpi' }, 'val ', h('b', {}, fmtScore(c.valMean))),
      c.scores.test !== null ? h('span', { class: 'kpi' }, 'test ', h('b', {}, fmtScore(c.scores.test))) : null,
      h('span', { class: 'spacer' }),
      // Together, so a narrow card wraps them as one (Apply never alone on a line of its own).
      h('span', { class: 'candidate-actions' }, rollouts, apply),
    ),
    provenance(c, view.candidates, actions.select),
    c.reason ? h('p', { class: `reason status-${c.status}` }, icon('info'), ` ${c.reason}`) : null,
    h(
      'div',
      { class: `candidate-body${thinking ? ' with-reflection' : ''}` },
      h('div', { class: 'prompt-changes' }, ...changes.map((p) => promptBlock(p, c.component))),
      thinking ? reflectionAside(thinking, c) : null,
    ),
  );
}
