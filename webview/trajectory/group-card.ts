/**
 * One card of the GRPO group view: a final answer and the samples (rollouts) that gave it. Identical
 * answers with the same reward merge into one card with a count (the view can unmerge them). A card shows
 * the reward, the advantages exactly as the trainer stored them, the steps of its first sample in order
 * (LLM calls with their credit and advantage, tool steps as `name(input) → output`), errors, and the answer.
 */
import type { GroupSample } from '../../protocol/webview-trajectory.js';
import type { Span } from '../../protocol/store.js';
import { agentNames, spanKind } from '../../protocol/span-reading.js';
import { fmtNumber, fmtSigned, h, icon, shortId, signClass } from '../shared/dom.js';
import { chatBubble, codeLink, type DetailActions } from './call-detail.js';
import { llmCall, messageText, toolStepLine, toolSteps } from './model.js';
import { runStatusPill } from './outcome.js';

export interface CardActions extends DetailActions {
  openRollout(rolloutId: string, spanId?: string): void;
}

/** Samples that gave the same final answer with the same reward. */
export interface AnswerCard {
  answer: string;
  reward: number | null;
  samples: GroupSample[];
}

function lastCall(sample: GroupSample): Span | undefined {
  return sample.spans
    .filter((s) => spanKind(s) === 'llm')
    .sort((a, b) => a.startTime - b.startTime)
    .at(-1);
}

/** The sample's final answer as text: its last LLM call's response (empty when it made none). */
export function finalAnswer(sample: GroupSample): string {
  const last = lastCall(sample);
  return last ? llmCall(last).response.map(messageText).join('\n').trim() : '';
}

/** One card per sample, or (merge) one per distinct (answer, reward), in the samples' order. */
export function answerCards(samples: GroupSample[], merge: boolean): AnswerCard[] {
  const cards: AnswerCard[] = [];
  const byKey = new Map<string, AnswerCard>();
  for (const sample of samples) {
    const answer = finalAnswer(sample);
    const key = JSON.stringify([answer, sample.reward, sample.error]);
    const same = merge ? byKey.get(key) : undefined;
    if (same) {
      same.samples.push(sample);
      continue;
    }
    const card = { answer, reward: sample.reward, samples: [sample] };
    byKey.set(key, card);
    cards.push(card);
  }
  return cards;
}

/** The stored advantages of a card's calls, each distinct value once (as the trainer wrote them). */
export function storedAdvantages(card: AnswerCard): number[] {
  return [...new Set(card.samples.flatMap((s) => s.transitions.map((t) => t.advantage)))];
}

/** What sorting by advantage compares: the mean of the card's stored advantages (null: not trained on). */
export function cardAdvantage(card: AnswerCard): number | null {
  const all = card.samples.flatMap((s) => s.transitions.map((t) => t.advantage));
  return all.length ? all.reduce((a, b) => a + b, 0) / all.length : null;
}

/** Error lines of a sample: its attempt's error, exceptions it recorded, and spans that ended in error. */
function sampleErrors(sample: GroupSample): string[] {
  const out = sample.error ? [sample.error] : [];
  for (const s of sample.spans) {
    if (spanKind(s) === 'exception') out.push(`${s.attributes['exception.type'] ?? 'exception'}: ${s.attributes['exception.message'] ?? ''}`);
    else if (s.status.code === 'error' && spanKind(s) !== 'tool') out.push(`${s.name}: ${s.status.message ?? 'error'}`);
  }
  return [...new Set(out)];
}

/** The first sample's LLM calls and tool steps in the order they ran. */
function steps(sample: GroupSample, actions: CardActions): HTMLElement[] {
  const bySpan = new Map(sample.transitions.map((t) => [t.spanId, t]));
  const names = agentNames(sample.spans);
  const tools = toolSteps(sample.spans);
  let callIndex = 0;
  return [...sample.spans]
    .sort((a, b) => a.startTime - b.startTime || a.sequenceId - b.sequenceId)
    .flatMap((span) => {
      const kind = spanKind(span);
      if (kind === 'tool') {
        const tool = tools.get(span.spanId)!;
        const row = h(
          'div',
          { class: `tool-row${tool.ok ? '' : ' failed'}`, 'data-span-id': span.spanId, title: 'Tool step: open it in the rollout' },
          icon(tool.ok ? 'tools' : 'error'),
          h('span', { class: 'mono tool-text' }, toolStepLine(tool)),
        );
        row.addEventListener('click', () => actions.openRollout(sample.rollout.id, span.spanId));
        return [row];
      }
      if (kind !== 'llm') return [];
      const call = llmCall(span, names.get(span.spanId) ?? null);
      const t = bySpan.get(span.spanId);
      const row = h(
        'div',
        { class: 'call-row', 'data-span-id': span.spanId },
        icon('sparkle'),
        h('span', { class: 'call-name', title: call.agentName ?? 'LLM call' }, `${call.agentName ?? 'call'} #${++callIndex}`),
        call.code ? codeLink(call.code, actions, true) : null,
        // The two numbers stay together: in a narrow card they move to the next line as a pair.
        h(
          'span',
          { class: 'call-chips' },
          h(
            'span',
            { class: `chip credit ${signClass(t?.credit)}`, title: 'Credit: the reward the credit assignment gave this call' },
            `credit ${t ? fmtNumber(t.credit, 2) : '—'}`,
          ),
          h(
            'span',
            {
              class: `chip advantage ${signClass(t?.advantage)}`,
              'data-advantage': t ? String(t.advantage) : null,
              title: 'GRPO advantage, as the trainer stored it',
            },
            `A ${t ? fmtSigned(t.advantage) : '—'}`,
          ),
        ),
      );
      row.addEventListener('click', (e) => {
        if (!(e.target as HTMLElement).closest('a')) actions.openRollout(sample.rollout.id, span.spanId);
      });
      return [row];
    });
}

function rolloutLink(sample: GroupSample, actions: CardActions): HTMLElement {
  const link = h(
    'a',
    { href: '#', class: 'open-rollout', 'data-rollout-id': sample.rollout.id, title: `Open rollout ${sample.rollout.id}` },
    icon('link-external'),
    ` ${shortId(sample.rollout.id)}`,
  );
  link.addEventListener('click', (e) => {
    e.preventDefault();
    actions.openRollout(sample.rollout.id);
  });
  return link;
}

export function answerCard(card: AnswerCard, index: number, maxAbsAdvantage: number, actions: CardActions): HTMLElement {
  const [first] = card.samples;
  const advantages = storedAdvantages(card);
  const mean = cardAdvantage(card);
  const bar = h('div', { class: `adv-bar ${signClass(mean)}` });
  const frac = mean === null || maxAbsAdvantage === 0 ? 0 : Math.abs(mean) / maxAbsAdvantage;
  bar.style.width = `${frac * 50}%`;
  bar.style.left = mean !== null && mean < 0 ? `${50 - frac * 50}%` : '50%';
  const errors = sampleErrors(first);
  const statuses = [...new Set(card.samples.map((s) => s.rollout.status))];
  const count = card.samples.length;
  const last = lastCall(first);
  return h(
    'div',
    { class: 'sample-card', 'data-rollout-id': first.rollout.id, 'data-count': count },
    h(
      'div',
      { class: 'sample-head' },
      h('span', { class: 'sample-index' }, `#${index + 1}`),
      count > 1 ? h('span', { class: 'chip merged-count', title: `${count} samples gave this answer with this reward` }, `×${count}`) : null,
      rolloutLink(first, actions),
      h('div', { class: 'spacer' }),
      ...statuses.map(runStatusPill),
    ),
    h(
      'div',
      { class: 'sample-numbers' },
      h(
        'div',
        { class: 'metric' },
        h('div', { class: 'metric-label' }, 'Reward'),
        h('div', { class: `metric-value reward ${signClass(card.reward)}` }, fmtNumber(card.reward)),
      ),
      h(
        'div',
        {
          class: 'metric',
          title: advantages.length > 1 ? 'Its calls got different advantages (their credits differ)' : 'GRPO advantage, as the trainer stored it',
        },
        h('div', { class: 'metric-label' }, 'Advantage'),
        h('div', { class: `metric-value advantage ${signClass(mean)}` }, advantages.length ? advantages.map((a) => fmtSigned(a)).join(' / ') : '—'),
      ),
    ),
    h('div', { class: 'adv-track', title: 'Advantage relative to the group' }, h('div', { class: 'adv-zero' }), bar),
    h('div', { class: 'sample-calls' }, ...steps(first, actions)),
    errors.length ? h('div', { class: 'sample-errors' }, ...errors.map((e) => h('div', { class: 'error-line' }, icon('error'), h('span', {}, ` ${e}`)))) : null,
    last
      ? h(
          'div',
          { class: 'final-answer' },
          h('div', { class: 'metric-label' }, 'Final answer'),
          ...llmCall(last).response.map((m) => chatBubble(m, 'response compact')),
        )
      : h('div', { class: 'muted' }, 'No LLM call.'),
    count > 1 ? h('div', { class: 'merged-samples muted' }, 'Same answer: ', ...card.samples.slice(1).map((s) => rolloutLink(s, actions))) : null,
  );
}
