/**
 * The GRPO GROUP view: for one training step, each group (one task) with its n samples side by side:
 * each sample's reward, the advantage GRPO gave it, its LLM calls with their credit, and its final answer.
 * Samples are sorted by reward so the spread the advantage comes from is visible at a glance.
 */
import type { GroupData, GroupPage, GroupSample } from '../../protocol/webview-trajectory.js';
import { fmtNumber, fmtSigned, h, icon, mount, preview, shortId, signClass } from '../shared/dom.js';
import { chatBubble, codeLink, type DetailActions } from './call-detail.js';
import { agentNames, spanKind } from '../../protocol/span-reading.js';
import { llmCall } from './model.js';

export interface GroupViewActions extends DetailActions {
  back(): void;
  openRollout(rolloutId: string, spanId?: string): void;
  selectStep(step: number): void;
  openDashboard(runId: string): void;
}

function mean(xs: number[]): number { return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0; }
function std(xs: number[]): number { const m = mean(xs); return Math.sqrt(mean(xs.map((x) => (x - m) ** 2))); }

function sampleCard(sample: GroupSample, index: number, maxAbsAdvantage: number, actions: GroupViewActions): HTMLElement {
  const calls = sample.spans.filter((s) => spanKind(s) === 'llm').sort((a, b) => a.startTime - b.startTime);
  const bySpan = new Map(sample.transitions.map((t) => [t.spanId, t]));
  const advantage = sample.transitions.length ? mean(sample.transitions.map((t) => t.advantage)) : null;
  const names = agentNames(sample.spans);
  const last = calls.length ? llmCall(calls[calls.length - 1]) : null;
  const bar = h('div', { class: `adv-bar ${signClass(advantage)}` });
  const frac = advantage === null || maxAbsAdvantage === 0 ? 0 : Math.abs(advantage) / maxAbsAdvantage;
  bar.style.width = `${frac * 50}%`;
  bar.style.left = advantage !== null && advantage < 0 ? `${50 - frac * 50}%` : '50%';
  const open = h('a', { href: '#', class: 'open-rollout', title: 'Open this rollout' }, icon('link-external'), ` ${shortId(sample.rollout.id)}`);
  open.addEventListener('click', (e) => { e.preventDefault(); actions.openRollout(sample.rollout.id); });
  return h('div', { class: 'sample-card', 'data-rollout-id': sample.rollout.id },
    h('div', { class: 'sample-head' }, h('span', { class: 'sample-index' }, `#${index + 1}`), open,
      h('div', { class: 'spacer' }), h('span', { class: `pill status-${sample.rollout.status}` }, sample.rollout.status)),
    h('div', { class: 'sample-numbers' },
      h('div', { class: 'metric' }, h('div', { class: 'metric-label' }, 'Reward'), h('div', { class: `metric-value reward ${signClass(sample.reward)}` }, fmtNumber(sample.reward))),
      h('div', { class: 'metric' }, h('div', { class: 'metric-label' }, 'Advantage'), h('div', { class: `metric-value advantage ${signClass(advantage)}` }, fmtSigned(advantage)))),
    h('div', { class: 'adv-track', title: 'Advantage relative to the group' }, h('div', { class: 'adv-zero' }), bar),
    h('div', { class: 'sample-calls' },
      ...calls.map((span, i) => {
        const call = llmCall(span, names.get(span.spanId) ?? null);
        const t = bySpan.get(span.spanId);
        const row = h('div', { class: 'call-row', 'data-span-id': span.spanId },
          icon('sparkle'), h('span', { class: 'call-name' }, ` ${call.agentName ?? 'call'} #${i + 1}`),
          h('span', { class: 'spacer' }),
          h('span', { class: `chip credit ${signClass(t?.credit)}`, title: 'credit assigned' }, `credit ${t ? fmtNumber(t.credit, 2) : '—'}`),
          h('span', { class: `chip advantage ${signClass(t?.advantage)}`, title: 'GRPO advantage' }, `A ${t ? fmtSigned(t.advantage, 2) : '—'}`),
          call.code ? codeLink(call.code, actions, true) : null);
        row.addEventListener('click', (e) => { if (!(e.target as HTMLElement).closest('a')) actions.openRollout(sample.rollout.id, span.spanId); });
        return row;
      })),
    last ? h('div', { class: 'final-answer' }, h('div', { class: 'metric-label' }, 'Final answer'), ...last.response.map((m) => chatBubble(m, 'response compact'))) : h('div', { class: 'muted' }, 'No LLM call.'),
  );
}

function groupSection(group: GroupData, actions: GroupViewActions): HTMLElement {
  const samples = [...group.samples].sort((a, b) => (b.reward ?? -Infinity) - (a.reward ?? -Infinity));
  const rewards = samples.map((s) => s.reward).filter((r): r is number => r !== null);
  const maxAbs = Math.max(0, ...samples.flatMap((s) => s.transitions.map((t) => Math.abs(t.advantage))));
  const zeroVariance = rewards.length > 1 && std(rewards) === 0;
  return h('section', { class: 'group', 'data-group-id': group.groupId },
    h('div', { class: 'group-head' },
      h('h2', {}, icon('organization'), ` Task ${group.groupId}`),
      h('span', { class: 'muted mono task-preview', title: JSON.stringify(group.input) }, preview(group.input, 100)),
      h('div', { class: 'spacer' }),
      h('span', { class: 'chip' }, `n = ${samples.length}`),
      h('span', { class: 'chip' }, `mean ${fmtNumber(mean(rewards))}`),
      h('span', { class: 'chip' }, `std ${fmtNumber(std(rewards))}`),
      zeroVariance ? h('span', { class: 'chip warning', title: 'All samples got the same reward: GRPO advantages are zero, this group teaches nothing' }, 'zero variance') : null),
    h('div', { class: 'samples' }, ...samples.map((s, i) => sampleCard(s, i, maxAbs, actions))));
}

export function renderGroupView(root: HTMLElement, page: GroupPage, actions: GroupViewActions): void {
  const back = h('vscode-toolbar-button', { icon: 'arrow-left', label: 'Back', title: 'Back to rollouts', class: 'back' });
  back.addEventListener('click', actions.back);
  const stepSelect = h('vscode-single-select', { class: 'step-select', 'aria-label': 'Training step' },
    ...page.steps.map((s) => h('vscode-option', { value: String(s), selected: s === page.step }, `step ${s}`)));
  stepSelect.addEventListener('change', () => actions.selectStep(Number((stepSelect as unknown as { value: string }).value)));
  mount(root,
    h('header', { class: 'view-header' }, back,
      h('h1', {}, 'GRPO groups', page.step !== null ? h('span', { class: 'muted' }, ` · step ${page.step}`) : null),
      page.runId ? h('span', { class: 'muted mono' }, page.runId) : null,
      h('div', { class: 'spacer' }),
      page.runId ? (() => {
        const curves = h('a', { href: '#', class: 'open-dashboard', title: 'Open this run in the training dashboard' }, icon('graph-line'), ' Training curves');
        curves.addEventListener('click', (e) => { e.preventDefault(); actions.openDashboard(page.runId!); });
        return curves;
      })() : null,
      page.steps.length > 1 ? stepSelect : null),
    page.groups.length === 0
      ? h('div', { class: 'empty-state' }, icon('info'), h('p', {}, 'No GRPO groups here yet: the algorithm writes them when it trains on these rollouts.'))
      : h('div', { class: 'groups' }, ...page.groups.map((g) => groupSection(g, actions))));
}
