/**
 * One card of the GRPO group view: an answer and the samples (rollouts) that gave it. The answer is the episode's
 * (what the agent returned or emitted as its result: protocol/span-reading.ts episodeAnswer, served by the daemon),
 * never an LLM reply; identical answers with the same reward merge into one card with a count (the view can unmerge
 * them). A card shows the reward, the advantages exactly as the trainer stored them, the steps of its first sample in
 * order (LLM calls with their number, role, policy and version, credit and advantage or why they were not trained;
 * tool steps as `name(input) → output`), errors, and the answer.
 */
import type { CallInfo } from '../../protocol/call-roles.js';
import type { GroupSample } from '../../protocol/webview-trajectory.js';
import { spanKind } from '../../protocol/span-reading.js';
import { activatable, fmtNumber, fmtSigned, h, icon, shortId, signClass } from '../shared/dom.js';
import { foldable } from '../shared/fold.js';
import { answerBlock } from './answer.js';
import { codeLink, policyChip, type DetailActions } from './call-detail.js';
import { judgeReason } from './judge-view.js';
import { llmCall, toolStepLine, toolSteps } from './model.js';
import { runStatusPill } from './outcome.js';

export interface CardActions extends DetailActions {
  openRollout(rolloutId: string, spanId?: string): void;
}

/** Samples that gave the same answer with the same reward. */
export interface AnswerCard {
  /** The answer's canonical key ('' when the samples recorded none). */
  answer: string;
  reward: number | null;
  samples: GroupSample[];
}

/** One card per sample, or (merge) one per distinct (answer, reward, error), in the samples' order. */
export function answerCards(samples: GroupSample[], merge: boolean): AnswerCard[] {
  const cards: AnswerCard[] = [];
  const byKey = new Map<string, AnswerCard>();
  for (const sample of samples) {
    const answer = sample.answer.key;
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

/** The credit and advantage of a trained call, or why it was not trained (never "can be trained" for a role the run leaves out). */
function trainingChips(info: CallInfo | undefined): HTMLElement {
  const t = info?.transition ?? null;
  if (info && !t && info.training !== 'pending')
    return h('span', { class: 'call-chips' }, h('span', { class: `chip untrained training-${info.training}`, title: info.why }, 'not trained'));
  return h(
    'span',
    { class: 'call-chips' },
    h(
      'span',
      { class: `chip credit ${signClass(t?.credit)}`, title: t ? 'Credit: the reward the credit assignment gave this call' : (info?.why ?? '') },
      `credit ${t ? fmtNumber(t.credit, 2) : '—'}`,
    ),
    h(
      'span',
      {
        class: `chip advantage ${signClass(t?.advantage)}`,
        'data-advantage': t ? String(t.advantage) : null,
        title: t ? `GRPO advantage, as the trainer stored it. ${info?.why ?? ''}`.trim() : (info?.why ?? ''),
      },
      `A ${t ? fmtSigned(t.advantage) : '—'}`,
    ),
  );
}

/** Lines of a tool step shown in a card before "show all" (its whole output is in the rollout, and often in the answer). */
const TOOL_LINES = 3;

/** The first sample's LLM calls and tool steps in the order they ran. */
function steps(sample: GroupSample, actions: CardActions): HTMLElement[] {
  const calls = new Map(sample.calls.map((c) => [c.spanId, c]));
  const tools = toolSteps(sample.spans);
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
          foldable(h('span', { class: 'mono tool-text' }, toolStepLine(tool)), TOOL_LINES),
        );
        return [activatable(row, () => actions.openRollout(sample.rollout.id, span.spanId))];
      }
      if (kind !== 'llm') return [];
      const info = calls.get(span.spanId);
      const call = llmCall(span, info?.role ?? null);
      const row = h(
        'div',
        {
          class: `call-row${info && !info.transition && info.training !== 'pending' ? ' untrained' : ''}`,
          'data-span-id': span.spanId,
          'data-call': info?.number ?? null,
          'data-role': info?.role ?? null,
          'data-training': info?.training ?? null,
        },
        icon('sparkle'),
        h('span', { class: 'call-name', title: info?.why ?? call.agentName ?? 'LLM call' }, `${info?.role ?? 'call'} #${info?.number ?? '?'}`),
        info ? policyChip(info) : null,
        call.code ? codeLink(call.code, actions, true) : null,
        // The two numbers stay together: in a narrow card they move to the next line as a pair.
        trainingChips(info),
      );
      return [activatable(row, () => actions.openRollout(sample.rollout.id, span.spanId))];
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
      ...statuses.map((s) => runStatusPill(s)),
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
    // An LLM judge's reward: its words under the number.
    judgeReason(first.spans),
    h('div', { class: 'adv-track', title: 'Advantage relative to the group' }, h('div', { class: 'adv-zero' }), bar),
    h('div', { class: 'sample-calls' }, ...steps(first, actions)),
    errors.length ? h('div', { class: 'sample-errors' }, ...errors.map((e) => h('div', { class: 'error-line' }, icon('error'), h('span', {}, ` ${e}`)))) : null,
    answerBlock(first.answer),
    count > 1 ? h('div', { class: 'merged-samples muted' }, 'Same answer: ', ...card.samples.slice(1).map((s) => rolloutLink(s, actions))) : null,
  );
}
