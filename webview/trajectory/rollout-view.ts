/**
 * One rollout: a header (status, agent, reward, attempts), then two tabs. "Timeline": the span tree
 * beside a waterfall of when each span ran, and the selected span's detail (chat, credit, advantage).
 * "States": the semantic variables after each step (states-view.ts).
 */
import type { Span } from '../../protocol/store.js';
import type { RolloutDetail } from '../../protocol/webview-trajectory.js';
import { fmtDuration, fmtNumber, fmtSigned, fmtTime, h, icon, mount, preview, signClass } from '../shared/dom.js';
import { renderSpanDetail, type DetailActions } from './call-detail.js';
import { agentNames, finalReward, isFinalRewardSpan, spanKind } from '../../protocol/span-reading.js';
import { llmCall, rewardValue, timeRange, toolStepLine, toolSteps, transitionsBySpan, type ToolStep } from './model.js';
import { rewardPill, runStatusPill } from './outcome.js';
import { renderSpanTree } from './span-tree.js';
import { renderStatesView } from './states-view.js';

export interface RolloutViewState {
  tab: 'timeline' | 'states';
  selectedSpanId?: string;
}
export interface RolloutViewActions extends DetailActions {
  back(): void;
  selectAttempt(attemptId: string): void;
  saveViewState(state: RolloutViewState): void;
}

function spanLabel(span: Span, agentName: string | null, tool: ToolStep | undefined): string {
  const kind = spanKind(span);
  if (kind === 'llm') {
    const call = llmCall(span, agentName);
    // GenAI's span name for a chat call is "chat {model}".
    return `${call.agentName ? call.agentName + ' · ' : ''}chat ${call.model ?? ''}`.trim();
  }
  if (kind === 'tool' && tool) return toolStepLine(tool);
  if (kind === 'reward') {
    if (isFinalRewardSpan(span)) return 'final reward';
    const name = span.attributes['agl.reward.name'];
    return name && name !== 'reward' ? `reward ${name}` : 'reward';
  }
  if (kind === 'message') return `message: ${preview(span.attributes['agl.message'] ?? '', 60)}`;
  if (kind === 'object') return `object ${preview(span.attributes['agl.object.json'] ?? '', 50)}`;
  if (kind === 'exception') return `${span.attributes['exception.type'] ?? 'exception'}: ${span.attributes['exception.message'] ?? ''}`;
  if (kind === 'agent') return String(span.attributes['agl.agent.name'] ?? 'rollout');
  return String(span.attributes['agl.operation.name'] ?? span.name);
}

function spanChips(span: Span, advantage: number | undefined): HTMLElement[] {
  const kind = spanKind(span);
  const out: HTMLElement[] = [];
  if (kind === 'llm') {
    const call = llmCall(span);
    if (call.inputTokens !== null || call.outputTokens !== null)
      out.push(h('span', { class: 'chip', title: 'prompt → completion tokens' }, `${call.inputTokens ?? '?'}→${call.outputTokens ?? '?'} tok`));
    if (advantage !== undefined)
      out.push(h('span', { class: `chip advantage ${signClass(advantage)}`, title: 'GRPO advantage' }, `A ${fmtSigned(advantage, 2)}`));
  }
  if (kind === 'reward') {
    const r = rewardValue(span);
    out.push(h('span', { class: `chip reward ${signClass(r)}` }, fmtNumber(r)));
  }
  if (span.status.code === 'error') out.push(h('span', { class: 'chip negative' }, 'error'));
  return out;
}

export function renderRolloutView(root: HTMLElement, detail: RolloutDetail, state: RolloutViewState, actions: RolloutViewActions): void {
  const { rollout, spans } = detail;
  const byTransition = transitionsBySpan(detail.transitions);
  const names = agentNames(spans);
  const reward = finalReward(spans);
  const range = timeRange(spans);
  const tools = toolSteps(spans);
  const firstCall = spans.find((s) => spanKind(s) === 'llm');
  let selected = spans.find((s) => s.spanId === state.selectedSpanId) ?? firstCall ?? spans[0];
  const treePane = h('div', { class: 'span-tree' });
  const detailPane = h('div', { class: 'detail-pane' });

  const drawDetail = (): void => {
    if (!selected) {
      mount(detailPane, h('div', { class: 'empty-state' }, 'This attempt recorded no spans.'));
      return;
    }
    mount(
      detailPane,
      renderSpanDetail(
        selected,
        byTransition.get(selected.spanId),
        reward,
        actions,
        rollout.agent,
        names.get(selected.spanId) ?? null,
        tools.get(selected.spanId),
      ),
    );
  };

  const back = h('vscode-toolbar-button', { icon: 'arrow-left', label: 'Back to rollouts', title: 'Back to rollouts', class: 'back' });
  back.addEventListener('click', actions.back);
  const attemptSelect = h(
    'vscode-single-select',
    { class: 'attempt-select', 'aria-label': 'Attempt' },
    ...detail.attempts.map((a) => h('vscode-option', { value: a.id, selected: a.id === detail.attemptId }, `attempt ${a.sequence} · ${a.status}`)),
  );
  attemptSelect.addEventListener('change', () => actions.selectAttempt((attemptSelect as unknown as { value: string }).value));
  const attempt = detail.attempts.find((a) => a.id === detail.attemptId);

  const timeline = h('div', { class: 'timeline-layout' }, treePane, detailPane);
  const statesPanel = h('div', { class: 'states-panel' });
  const tabs = h(
    'vscode-tabs',
    { 'selected-index': state.tab === 'states' ? 1 : 0, class: 'rollout-tabs' },
    h('vscode-tab-header', { slot: 'header', class: 'tab-timeline' }, 'Timeline'),
    h('vscode-tab-panel', {}, timeline),
    h('vscode-tab-header', { slot: 'header', class: 'tab-states' }, 'States'),
    h('vscode-tab-panel', {}, statesPanel),
  );
  tabs.addEventListener('vsc-tabs-select', (e) => {
    const tab = (e as CustomEvent<{ selectedIndex: number }>).detail.selectedIndex === 1 ? 'states' : 'timeline';
    actions.saveViewState({ tab, selectedSpanId: selected?.spanId });
  });

  const llmCount = spans.filter((s) => spanKind(s) === 'llm').length;
  mount(
    root,
    h(
      'header',
      { class: 'view-header' },
      back,
      h('h1', {}, 'Rollout ', h('span', { class: 'mono' }, rollout.id)),
      runStatusPill(rollout.status),
      rewardPill(reward),
      h('div', { class: 'spacer' }),
      detail.attempts.length > 1 ? attemptSelect : null,
    ),
    h(
      'div',
      { class: 'summary' },
      h('div', { class: 'summary-item' }, h('span', { class: 'muted' }, 'Agent'), h('span', {}, rollout.agent ?? 'default')),
      h('div', { class: 'summary-item' }, h('span', { class: 'muted' }, 'Reward'), h('span', { class: `reward ${signClass(reward)} big` }, fmtNumber(reward))),
      h('div', { class: 'summary-item' }, h('span', { class: 'muted' }, 'LLM calls'), h('span', {}, String(llmCount))),
      // The attempt's run time, as the rollouts list shows it (the waterfall spans only what was traced).
      h(
        'div',
        { class: 'summary-item duration', title: `attempt ran from its start to its end; its spans cover ${fmtDuration(range.end - range.start)}` },
        h('span', { class: 'muted' }, 'Duration'),
        h('span', {}, fmtDuration(attempt && attempt.endedAt !== null ? attempt.endedAt - attempt.startedAt : null)),
      ),
      h('div', { class: 'summary-item' }, h('span', { class: 'muted' }, 'Mode'), h('span', {}, rollout.mode)),
      h(
        'div',
        { class: 'summary-item' },
        h('span', { class: 'muted' }, 'Resources'),
        h('span', {}, detail.resourcesVersion ? `v${detail.resourcesVersion}` : '—'),
      ),
      h('div', { class: 'summary-item' }, h('span', { class: 'muted' }, 'Started'), h('span', {}, fmtTime(attempt?.startedAt ?? rollout.createdAt))),
      h(
        'div',
        { class: 'summary-item wide' },
        h('span', { class: 'muted' }, 'Task'),
        h('span', { class: 'mono', title: JSON.stringify(rollout.input) }, preview(rollout.input, 120)),
      ),
    ),
    attempt?.error ? h('div', { class: 'error-banner' }, icon('error'), ` ${attempt.error.message}`) : null,
    tabs,
  );
  const tree = renderSpanTree(treePane, {
    spans,
    selectedId: selected?.spanId,
    label: (s) => spanLabel(s, names.get(s.spanId) ?? null, tools.get(s.spanId)),
    chips: (s) => spanChips(s, byTransition.get(s.spanId)?.advantage),
    open: (s) => {
      selected = s;
      actions.saveViewState({ tab: 'timeline', selectedSpanId: s.spanId });
      drawDetail();
    },
  });
  drawDetail();
  renderStatesView(statesPanel, spans, rollout.input, (spanId) => {
    selected = spans.find((s) => s.spanId === spanId) ?? selected;
    (tabs as unknown as { selectedIndex: number }).selectedIndex = 0;
    actions.saveViewState({ tab: 'timeline', selectedSpanId: selected?.spanId });
    if (selected) tree.select(selected.spanId);
    drawDetail();
  });
}
