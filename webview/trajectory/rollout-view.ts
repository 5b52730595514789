/**
 * One rollout: a header (status, agent, reward, attempts, its answer, its expected answer to correct and Add to dataset
 * (dataset-controls.ts), the prompt versions it read, the rule of the run that made it), then two tabs. "Timeline": the span tree beside a waterfall of when each span ran, and the selected span's detail (chat,
 * role, policy, trained or not, credit, advantage), scrolled into sight when a call is opened and it is out of sight (a
 * panel beside the editor puts it under the tree). "States": the semantic variables after each step (states-view.ts).
 * Calls are "role #n" everywhere, numbered by protocol/span-reading.ts llmCallNumbers (the daemon's CallInfo).
 */
import type { CallInfo, RunRoles } from '../../protocol/call-roles.js';
import type { PromptReading } from '../../protocol/span-reading.js';
import { NO_RUNNER } from '../../protocol/runner-presence.js';
import { AGL } from '../../protocol/spans.js';
import type { RolloutDetail } from '../../protocol/webview-trajectory.js';
import type { Attempt, Span } from '../../protocol/store.js';
import { fmtDuration, fmtNumber, fmtSigned, fmtTime, h, icon, mount, preview, signClass } from '../shared/dom.js';
import { answerBlock } from './answer.js';
import { expectedStart, rolloutDatasetControls, type AddToDataset } from './dataset-controls.js';
import { rolloutLabelControls } from './label-controls.js';
import type { HumanLabel, StoredHumanLabel } from '../../protocol/human-label.js';
import { renderSpanDetail, type DetailActions } from './call-detail.js';
import { agentNames, expectedTaskFields, finalReward, isFinalRewardSpan, spanKind } from '../../protocol/span-reading.js';
import { llmCall, rewardValue, timeRange, toolStepLine, toolSteps, transitionsBySpan, type ToolStep } from './model.js';
import { isJudgeReward } from '../../protocol/judge-reading.js';
import { judgeReason } from './judge-view.js';
import { resourcesText, resourcesTip, rewardPill, runStatusPill } from './outcome.js';
import { servedModelText, servedNote } from '../../protocol/served-by.js';
import { renderSpanTree, type SpanTreeLayout } from './span-tree.js';
import { renderStatesView } from './states-view.js';

export interface RolloutViewState {
  tab: 'timeline' | 'states';
  selectedSpanId?: string;
}
export interface RolloutViewActions extends DetailActions {
  back(): void;
  /** What Back returns to, for its label ("Back to rollouts", "Back to the GRPO group"). */
  backLabel?: string;
  selectAttempt(attemptId: string): void;
  saveViewState(state: RolloutViewState): void;
  /** Shows the rollouts list of the rollouts that read this prompt version (or text sha). */
  filterByPromptVersion(version: string): void;
  /** Shows the rollouts list of the rollouts a model of this name answered (their latest attempt's calls). */
  filterByModel(name: string): void;
  addToDataset: AddToDataset;
  /** Stores a person's label of the attempt (label-controls.ts). */
  labelRollout(target: { rolloutId: string; attemptId: string; label: HumanLabel }): Promise<StoredHumanLabel>;
}

/** `judged`: an LLM judge's reward is the rollout's final one (the agent's own is then not what it trained on). */
function spanLabel(span: Span, agentName: string | null, tool: ToolStep | undefined, info: CallInfo | undefined, judged = false): string {
  const kind = spanKind(span);
  if (kind === 'llm') {
    const call = llmCall(span, info?.role ?? agentName);
    // "writer #1 · chat warmup" (GenAI's span name for a chat call is "chat {model}").
    const who = `${call.agentName ?? 'call'}${info ? ` #${info.number}` : ''}`;
    return `${who} · chat ${call.model ?? ''}`.trim();
  }
  if (kind === 'tool' && tool) return toolStepLine(tool);
  if (kind === 'reward') {
    if (span.attributes[AGL.rewardSource] === 'judge') return "final reward · judge's";
    if (isFinalRewardSpan(span)) return judged && span.attributes[AGL.rewardLocked] !== true ? "agent's reward · the judge's replaced it" : 'final reward';
    const name = span.attributes['agl.reward.name'];
    return name && name !== 'reward' ? `reward ${name}` : 'reward';
  }
  if (kind === 'message') return `message: ${preview(span.attributes['agl.message'] ?? '', 60)}`;
  if (kind === 'object') return `object ${preview(span.attributes['agl.object.json'] ?? '', 50)}`;
  if (kind === 'exception') return `${span.attributes['exception.type'] ?? 'exception'}: ${span.attributes['exception.message'] ?? ''}`;
  if (kind === 'agent') return String(span.attributes['agl.agent.name'] ?? 'rollout');
  if (kind === 'prompt') return `prompt ${String(span.attributes[AGL.promptName] ?? '?')} · ${String(span.attributes[AGL.promptVersion] ?? '?')}`;
  if (kind === 'judge') return `judge · ${String(span.attributes[AGL.judgeModel] ?? '?')}`;
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
  if (kind === 'judge' && typeof span.attributes[AGL.judgeScore] === 'number')
    out.push(
      h('span', { class: 'chip judge-score', title: "The judge's score of this rollout" }, `score ${fmtNumber(span.attributes[AGL.judgeScore] as number)}`),
    );
  if (span.status.code === 'error') out.push(h('span', { class: 'chip negative' }, 'error'));
  return out;
}

/** The header: Back, the rollout's id, status and reward, and the attempt picker when there are several. */
function rolloutHeader(detail: RolloutDetail, reward: number | null, actions: RolloutViewActions): HTMLElement {
  const backLabel = actions.backLabel ?? 'Back to rollouts';
  const back = h('vscode-toolbar-button', { icon: 'arrow-left', label: backLabel, title: `${backLabel} (Backspace, Alt+Left)`, class: 'back' });
  back.addEventListener('click', actions.back);
  const attemptSelect = h(
    'vscode-single-select',
    { class: 'attempt-select', 'aria-label': 'Attempt' },
    ...detail.attempts.map((a) => h('vscode-option', { value: a.id, selected: a.id === detail.attemptId }, `attempt ${a.sequence} · ${a.status}`)),
  );
  attemptSelect.addEventListener('change', () => actions.selectAttempt((attemptSelect as unknown as { value: string }).value));
  return h(
    'header',
    { class: 'view-header' },
    back,
    h('h1', {}, 'Rollout ', h('span', { class: 'mono' }, detail.rollout.id)),
    runStatusPill(detail.rollout.status, detail.runnerConnected),
    rewardPill(reward),
    h('div', { class: 'spacer' }),
    detail.attempts.length > 1 ? attemptSelect : null,
  );
}

const SOURCE_WORDS: Record<PromptReading['source'], string> = {
  candidate: 'candidate being scored',
  promoted: 'promoted',
  seed: 'seed',
};

/**
 * Which prompt versions the attempt read: per prompt, where its text came from, its version and its text's sha, each a
 * button that lists the rollouts that read the same; the text itself in the button's tooltip.
 */
function promptsBlock(prompts: PromptReading[], actions: RolloutViewActions): HTMLElement | null {
  if (!prompts.length) return null;
  const filterButton = (value: string, label: string, title: string) => {
    const b = h('button', { class: 'link-button mono prompt-filter', title, 'aria-label': title }, label);
    b.addEventListener('click', () => actions.filterByPromptVersion(value));
    return b;
  };
  const rows = prompts.map((p) =>
    h(
      'li',
      { class: 'prompt-reading', 'data-prompt': p.name, title: p.template ?? '' },
      h('span', { class: 'prompt-name' }, p.name),
      h('span', { class: `chip prompt-source source-${p.source}` }, SOURCE_WORDS[p.source]),
      filterButton(p.version, p.version, `List the rollouts that read prompt version ${p.version}`),
      p.sha ? filterButton(p.sha, p.sha, `List the rollouts that read this very text of a prompt (sha ${p.sha})`) : null,
      p.reads > 1 ? h('span', { class: 'muted' }, `read ${p.reads}×`) : null,
      p.file ? h('span', { class: 'muted mono prompt-file', title: p.file }, p.file.split(/[\\/]/).pop() ?? p.file) : null,
    ),
  );
  return h('div', { class: 'summary-item wide rollout-prompts' }, h('span', { class: 'muted' }, 'Prompts'), h('ul', { class: 'prompt-readings' }, ...rows));
}

/** The LLM judge's words about the rollout's reward, beside it in the summary (none when no judge scored it). */
function judgeExplanation(spans: Span[]): HTMLElement | null {
  const reason = judgeReason(spans);
  return reason ? h('div', { class: 'summary-item wide rollout-judge' }, reason) : null;
}

const summaryItem = (label: string, value: HTMLElement, attrs: Record<string, string> = {}): HTMLElement =>
  h('div', { ...attrs, class: `summary-item${attrs.class ? ` ${attrs.class}` : ''}` }, h('span', { class: 'muted' }, label), value);

/**
 * What answered the calls ("calc after 34 updates", "warmup (untrained)"), never the resources version; outside
 * training, whether that was a trained checkpoint or what the daemon serves, and how to change it.
 */
function servedItems(detail: RolloutDetail, actions: RolloutViewActions): (HTMLElement | null)[] {
  const { served } = detail;
  const title = served.map((m) => `${servedModelText(m)}: ${m.calls} call${m.calls === 1 ? '' : 's'}`).join('\n');
  // Each model a button that lists the rollouts it answered (the list's Model filter, by name: any of its versions).
  const names = served.map((m, i) => {
    const tip = `List the rollouts whose latest attempt ${m.upstream ? 'the upstream model' : 'a policy named'} ${m.name} answered`;
    const b = h('button', { class: 'link-button served-filter', title: tip, 'aria-label': tip }, servedModelText(m));
    b.addEventListener('click', () => actions.filterByModel(m.name));
    return i ? [', ', b] : [b];
  });
  const model = summaryItem('Model', h('span', { class: 'served-model' }, ...(served.length ? names.flat() : ['—'])), {
    class: 'served',
    title: title || 'No LLM call of this attempt says what answered it',
  });
  const note = detail.roles === null ? servedNote(served) : null;
  return [model, note ? h('div', { class: 'summary-item wide served-note' }, note) : null];
}

/**
 * The summary under the header: agent, reward, calls, duration, mode, the model that answered, resources, start, task,
 * answer, the prompt versions it read, the training run's rule.
 */
function rolloutSummary(detail: RolloutDetail, reward: number | null, attempt: Attempt | undefined, actions: RolloutViewActions): HTMLElement {
  const { rollout, spans } = detail;
  const range = timeRange(spans);
  const llmCount = spans.filter((s) => spanKind(s) === 'llm').length;
  return h(
    'div',
    { class: 'summary' },
    summaryItem('Agent', h('span', {}, rollout.agent ?? 'default')),
    summaryItem('Reward', h('span', { class: `reward ${signClass(reward)} big` }, fmtNumber(reward))),
    judgeExplanation(spans),
    summaryItem('LLM calls', h('span', {}, String(llmCount))),
    // The attempt's run time, as the rollouts list shows it (the waterfall spans only what was traced).
    summaryItem('Duration', h('span', {}, fmtDuration(attempt && attempt.endedAt !== null ? attempt.endedAt - attempt.startedAt : null)), {
      class: 'duration',
      title: `attempt ran from its start to its end; its spans cover ${fmtDuration(range.end - range.start)}`,
    }),
    summaryItem('Mode', h('span', {}, rollout.mode)),
    ...servedItems(detail, actions),
    summaryItem('Resources', h('span', {}, resourcesText(detail.resourcesVersion)), { class: 'resources', title: resourcesTip(detail.resourcesVersion) }),
    summaryItem('Started', h('span', {}, fmtTime(attempt?.startedAt ?? rollout.createdAt))),
    summaryItem('Task', h('span', { class: 'mono', title: JSON.stringify(rollout.input) }, preview(rollout.input, 120)), { class: 'wide' }),
    h('div', { class: 'summary-item wide rollout-answer' }, answerBlock(detail.answer, 'Answer', notRunWhy(detail))),
    rolloutDatasetControls(rollout.id, detail.answer, actions.addToDataset, expectedStart(detail.answer, expectedTaskFields(rollout.input), reward)),
    detail.attemptId ? rolloutLabelControls(spans, (label) => actions.labelRollout({ rolloutId: rollout.id, attemptId: detail.attemptId!, label })) : null,
    promptsBlock(detail.prompts, actions),
    detail.roles ? runItem(detail.roles) : null,
  );
}

/** Why a rollout that never ran has no answer: it waits in the queue, and for what. */
function notRunWhy(detail: RolloutDetail): string | null {
  const { rollout } = detail;
  if (rollout.attemptCount > 0) return null;
  const waits = detail.runnerConnected ? 'until a runner claims it' : `and ${NO_RUNNER} to claim it (agl runner, or a daemon with workers, runs it)`;
  return `Not run yet: the rollout is ${rollout.status} ${waits}; its answer appears once it has run.`;
}

/** The run that made the rollout: a training run's selection rule, or what an eval or an optimization did (it trains nothing). */
function runItem(roles: RunRoles): HTMLElement {
  const label = roles.kind === 'eval' ? 'Eval' : roles.kind === 'optimize' ? 'Optimization' : 'Training';
  const title = roles.work
    ? `What ${label.toLowerCase()} run ${roles.runId} did, from its recorded config`
    : `The selection rule of training run ${roles.runId}, from its recorded config`;
  return summaryItem(label, h('span', {}, `run ${roles.runId} ${roles.rule}`), { class: 'wide roles-rule', title });
}

/** The "Timeline" and "States" tabs over their panels; switching is saved in the view state. */
function rolloutTabs(
  tab: RolloutViewState['tab'],
  timeline: HTMLElement,
  statesPanel: HTMLElement,
  switched: (tab: RolloutViewState['tab']) => void,
): HTMLElement {
  const tabs = h(
    'vscode-tabs',
    { 'selected-index': tab === 'states' ? 1 : 0, class: 'rollout-tabs' },
    h('vscode-tab-header', { slot: 'header', class: 'tab-timeline' }, 'Timeline'),
    h('vscode-tab-panel', {}, timeline),
    h('vscode-tab-header', { slot: 'header', class: 'tab-states' }, 'States'),
    h('vscode-tab-panel', {}, statesPanel),
  );
  tabs.addEventListener('vsc-tabs-select', (e) => switched((e as CustomEvent<{ selectedIndex: number }>).detail.selectedIndex === 1 ? 'states' : 'timeline'));
  return tabs;
}

/** The selected span's detail in its pane beside (or under) the span tree. */
class SpanDetailPane {
  readonly element = h('div', { class: 'detail-pane' });
  private readonly calls: Map<string, CallInfo>;
  private readonly byTransition: ReturnType<typeof transitionsBySpan>;
  private readonly names: Map<string, string>;
  private readonly tools: Map<string, ToolStep>;
  private readonly judged: boolean;

  constructor(
    private readonly detail: RolloutDetail,
    private readonly reward: number | null,
    private readonly actions: RolloutViewActions,
  ) {
    this.calls = new Map(detail.calls.map((c) => [c.spanId, c]));
    this.byTransition = transitionsBySpan(detail.transitions);
    this.names = agentNames(detail.spans);
    this.tools = toolSteps(detail.spans);
    this.judged = detail.spans.some(isJudgeReward);
  }

  label(s: Span): string {
    return spanLabel(s, this.names.get(s.spanId) ?? null, this.tools.get(s.spanId), this.calls.get(s.spanId), this.judged);
  }

  chips(s: Span): HTMLElement[] {
    return spanChips(s, this.byTransition.get(s.spanId)?.advantage);
  }

  draw(selected: Span | undefined): void {
    if (!selected) {
      mount(this.element, h('div', { class: 'empty-state' }, 'This attempt recorded no spans.'));
      return;
    }
    const id = selected.spanId;
    const { detail } = this;
    mount(
      this.element,
      renderSpanDetail(
        selected,
        this.byTransition.get(id),
        this.reward,
        this.actions,
        detail.rollout.agent,
        this.names.get(id) ?? null,
        this.tools.get(id),
        this.calls.get(id),
        detail.spans,
      ),
    );
  }

  /** A call opened (in the tree, a group card's call row, the states view) shows its detail: scrolled to when out of sight. */
  reveal(treePane: HTMLElement): void {
    requestAnimationFrame(() => {
      const top = this.element.getBoundingClientRect().top;
      const underTree = top >= treePane.getBoundingClientRect().bottom - 1; // beside the tree it is where the eye already is
      if (underTree && (top < 0 || top > window.innerHeight / 2)) this.element.scrollIntoView({ block: 'start' });
    });
  }
}

/** `treeLayout`: the span tree's column width, kept by the caller across redraws. */
export function renderRolloutView(
  root: HTMLElement,
  detail: RolloutDetail,
  state: RolloutViewState,
  actions: RolloutViewActions,
  treeLayout: SpanTreeLayout,
): void {
  const { rollout, spans } = detail;
  const reward = finalReward(spans);
  let selected = spans.find((s) => s.spanId === state.selectedSpanId) ?? spans.find((s) => spanKind(s) === 'llm') ?? spans[0];
  const treePane = h('div', { class: 'span-tree' });
  const detailPane = new SpanDetailPane(detail, reward, actions);
  const statesPanel = h('div', { class: 'states-panel' });
  const tabs = rolloutTabs(state.tab, h('div', { class: 'timeline-layout' }, treePane, detailPane.element), statesPanel, (tab) =>
    actions.saveViewState({ tab, selectedSpanId: selected?.spanId }),
  );
  const attempt = detail.attempts.find((a) => a.id === detail.attemptId);
  mount(
    root,
    rolloutHeader(detail, reward, actions),
    rolloutSummary(detail, reward, attempt, actions),
    attempt?.error ? h('div', { class: 'error-banner' }, icon('error'), ` ${attempt.error.message}`) : null,
    tabs,
  );
  const tree = renderSpanTree(treePane, {
    spans,
    layout: treeLayout,
    selectedId: selected?.spanId,
    label: (s) => detailPane.label(s),
    chips: (s) => detailPane.chips(s),
    open: (s) => {
      selected = s;
      actions.saveViewState({ tab: 'timeline', selectedSpanId: s.spanId });
      detailPane.draw(selected);
      detailPane.reveal(treePane);
    },
  });
  detailPane.draw(selected);
  if (state.selectedSpanId && state.tab !== 'states') detailPane.reveal(treePane);
  renderStatesView(statesPanel, spans, rollout.input, detail.calls, (spanId) => {
    selected = spans.find((s) => s.spanId === spanId) ?? selected;
    (tabs as unknown as { selectedIndex: number }).selectedIndex = 0;
    actions.saveViewState({ tab: 'timeline', selectedSpanId: selected?.spanId });
    if (selected) tree.select(selected.spanId);
    detailPane.draw(selected);
    detailPane.reveal(treePane);
  });
}
