/**
 * The detail of one span: for an LLM call its number, role, the policy and version that served it, whether its
 * training run trained on it and why (protocol/call-roles.ts, served by the daemon), the prompt and the response as a
 * chat, its numbers (tokens, latency, reward, credit, GRPO advantage; an LLM judge's explanation beside the reward) and
 * a link to the agent code that made it; for any other span its attributes and events (a reward's feedback, a judge
 * call's score, place shown, tokens, cost and answer).
 */
import type { CallInfo } from '../../protocol/call-roles.js';
import { AGL } from '../../protocol/spans.js';
import type { Span, Transition } from '../../protocol/store.js';
import { fmtDuration, fmtNumber, fmtSigned, h, icon, signClass } from '../shared/dom.js';
import { spanKind } from '../../protocol/span-reading.js';
import { judgeReason, judgeSpanDetail } from './judge-view.js';
import { agentSource, llmCall, rewardValue, toolStepLine, type ChatMessage, type ToolStep } from './model.js';

export interface DetailActions {
  openCode(filepath: string, lineno: number | null, symbol?: string): void;
  openGroup?(rolloutId: string): void;
}

const ROLE_ICON: Record<string, string> = { system: 'settings-gear', user: 'account', assistant: 'hubot', tool: 'tools' };

/** Long texts (system prompts, retrieved documents) start folded, with a link to show them whole. */
const FOLD_AT = 1200;

function chatText(text: string): HTMLElement {
  if (text.length <= FOLD_AT) return h('div', { class: 'chat-text' }, text);
  const body = h('div', { class: 'chat-text folded' }, text.slice(0, FOLD_AT) + '…');
  const toggle = h('a', { href: '#', class: 'fold-toggle' }, `Show all ${text.length.toLocaleString()} characters`);
  toggle.addEventListener('click', (e) => {
    e.preventDefault();
    const folded = body.classList.toggle('folded');
    body.textContent = folded ? text.slice(0, FOLD_AT) + '…' : text;
    toggle.textContent = folded ? `Show all ${text.length.toLocaleString()} characters` : 'Show less';
  });
  return h('div', {}, body, toggle);
}

export function chatBubble(m: ChatMessage, extraClass = ''): HTMLElement {
  return h(
    'div',
    { class: `chat-msg role-${m.role} ${extraClass}`.trim() },
    h(
      'div',
      { class: 'chat-role' },
      icon(ROLE_ICON[m.role] ?? 'comment'),
      ` ${m.role}${m.name ? ` · ${m.name}` : ''}${m.toolCallId ? ` · ${m.toolCallId}` : ''}`,
    ),
    m.text ? chatText(m.text) : null,
    ...m.toolCalls.map((c) => h('div', { class: 'chat-tool-call' }, icon('symbol-method'), h('span', { class: 'mono' }, ` ${c.name}(${c.args})`))),
  );
}

/** The policy and version that served a call ("writer v3"), when the gateway recorded them. */
export function policyChip(info: CallInfo): HTMLElement | null {
  if (!info.policy) return null;
  const version = info.policyVersion === null ? '' : ` v${info.policyVersion}`;
  const title =
    `Served by policy ${info.policy}` +
    (info.policyVersion === null ? ' (never trained: the default policy)' : ` at version ${info.policyVersion} (its updates so far when it answered)`);
  return h('span', { class: 'chip policy', 'data-policy': info.policy, 'data-version': info.policyVersion ?? null, title }, `${info.policy}${version}`);
}

/** Trained or not, in one chip, with the reason as its tooltip. */
export function trainingChip(info: CallInfo): HTMLElement {
  const text = info.training === 'trained' ? `trained · step ${info.transition!.step}` : info.training === 'pending' ? 'not trained yet' : 'not trained';
  return h('span', { class: `chip training training-${info.training}`, title: info.why }, text);
}

function metric(label: string, value: string, cls = '', title = ''): HTMLElement {
  return h(
    'div',
    { class: `metric ${cls}`.trim(), title: title || null },
    h('div', { class: 'metric-label' }, label),
    h('div', { class: 'metric-value' }, value),
  );
}

/** A link that asks the extension to open the agent code at the line that made the call (`compact`: line only). */
export function codeLink(code: { filepath: string; lineno: number | null }, actions: DetailActions, compact = false): HTMLElement {
  const name = compact ? '' : (code.filepath.split(/[\\/]/).pop() ?? code.filepath);
  const line = code.lineno ? `${compact ? 'L' : ':'}${code.lineno}` : '';
  const link = h(
    'a',
    { href: '#', class: 'code-link', title: `Open ${code.filepath}${code.lineno ? `:${code.lineno}` : ''}` },
    icon('go-to-file'),
    ` ${name}${line}`,
  );
  link.addEventListener('click', (e) => {
    e.preventDefault();
    actions.openCode(code.filepath, code.lineno);
  });
  return link;
}

function attributesTable(span: Span): HTMLElement {
  const entries = Object.entries(span.attributes);
  return h(
    'table',
    { class: 'attrs' },
    h('tbody', {}, ...entries.map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', { class: 'mono' }, typeof v === 'string' ? v : JSON.stringify(v))))),
  );
}

/** "Open the agent function" when a call carries no code location of its own. */
export function agentLink(agent: string | null, actions: DetailActions): HTMLElement {
  const src = agentSource(agent);
  if (!src) return h('span', { class: 'muted', title: 'The span has no code.filepath attribute' }, 'no source location');
  const name = src.filepath.split(/[\\/]/).pop() ?? src.filepath;
  const link = h(
    'a',
    { href: '#', class: 'code-link agent-link', title: `The call has no code.filepath: open the agent ${src.symbol || name} in ${src.filepath}` },
    icon('go-to-file'),
    ` ${name}${src.symbol ? `#${src.symbol}` : ''}`,
  );
  link.addEventListener('click', (e) => {
    e.preventDefault();
    actions.openCode(src.filepath, null, src.symbol || undefined);
  });
  return link;
}

/** A tool step's input and output (or error), each whole and wrapped, above the span's attributes. */
function toolIo(tool: ToolStep): HTMLElement {
  return h(
    'div',
    { class: 'tool-io' },
    h('div', { class: 'tool-line mono' }, icon('tools'), ` ${toolStepLine(tool)}`),
    h('h3', {}, 'Input'),
    h('div', { class: 'chat-text mono tool-input' }, tool.input ?? '(none recorded)'),
    h('h3', {}, tool.ok ? 'Output' : 'Error'),
    h(
      'div',
      { class: `chat-text mono tool-output${tool.ok ? '' : ' negative'}` },
      tool.ok ? (tool.output ?? '(none recorded)') : (tool.error ?? tool.output ?? 'failed'),
    ),
  );
}

/** Any span but an LLM call: kind, duration, status, reward; a tool's input and output; its code, attributes and events. */
function otherSpanDetail(span: Span, kind: ReturnType<typeof spanKind>, actions: DetailActions, tool: ToolStep | undefined): HTMLElement {
  const duration = span.endTime !== null ? span.endTime - span.startTime : null;
  const reward = rewardValue(span);
  const feedback = span.attributes[AGL.rewardFeedback];
  return h(
    'section',
    { class: `detail detail-${kind}` },
    h('h2', {}, span.name),
    h(
      'div',
      { class: 'metrics' },
      metric('Kind', kind),
      metric('Duration', fmtDuration(duration)),
      metric('Status', span.status.code + (span.status.message ? `: ${span.status.message}` : ''), span.status.code === 'error' ? 'negative' : ''),
      reward !== null ? metric('Reward', fmtNumber(reward), signClass(reward)) : null,
    ),
    reward !== null && typeof feedback === 'string' && feedback
      ? h('div', { class: 'reward-feedback' }, h('span', { class: 'muted' }, 'Feedback: '), feedback)
      : null,
    ...(kind === 'judge' ? judgeSpanDetail(span, metric) : []),
    tool ? toolIo(tool) : null,
    typeof span.attributes[AGL.codeFilepath] === 'string'
      ? codeLink({ filepath: span.attributes[AGL.codeFilepath] as string, lineno: (span.attributes[AGL.codeLineno] as number) ?? null }, actions)
      : null,
    h('h3', {}, 'Attributes'),
    attributesTable(span),
    span.events.length ? h('h3', {}, 'Events') : null,
    ...span.events.map((e) => h('div', { class: 'event mono' }, `${e.name} ${JSON.stringify(e.attributes)}`)),
  );
}

type LlmCall = ReturnType<typeof llmCall>;

/** A call's title line: its role and number, policy, trained or not, the code that made it, and its GRPO group. */
function callTitle(
  span: Span,
  call: LlmCall,
  info: CallInfo | undefined,
  transition: Transition | undefined,
  agent: string | null,
  actions: DetailActions,
): HTMLElement {
  let group: HTMLElement | null = null;
  if (transition && actions.openGroup) {
    group = h('vscode-button', { secondary: true, class: 'open-group', icon: 'organization' }, 'GRPO group');
    group.addEventListener('click', () => actions.openGroup!(span.rolloutId));
  }
  return h(
    'div',
    { class: 'detail-title' },
    h('h2', {}, icon('sparkle'), ` ${call.agentName ?? 'LLM call'}`, info ? h('span', { class: 'muted call-number' }, ` · call #${info.number}`) : null),
    info ? policyChip(info) : null,
    info ? trainingChip(info) : null,
    h('div', { class: 'spacer' }),
    call.code ? codeLink(call.code, actions) : agentLink(agent, actions),
    group,
  );
}

/**
 * A call's numbers: model, tokens, latency, reward, credit, advantage, finish, token ids, mean log-prob. `untrained`
 * says why the training numbers are empty, when they are; `trained`: a training run trained on the call.
 */
function callMetrics(call: LlmCall, transition: Transition | undefined, reward: number | null, untrained: string, trained: boolean): HTMLElement {
  return h(
    'div',
    { class: 'metrics' },
    metric('Model', call.model ?? '—'),
    metric('Prompt tokens', fmtNumber(call.inputTokens ?? transition?.promptTokens ?? null)),
    metric('Completion tokens', fmtNumber(call.outputTokens ?? transition?.completionTokens ?? null)),
    metric('Latency', fmtDuration(call.latencyMs)),
    metric('Reward', fmtNumber(reward ?? null), `reward ${signClass(reward)}`),
    metric(
      'Credit',
      transition ? fmtNumber(transition.credit) : '—',
      `credit ${signClass(transition?.credit)}`,
      transition ? 'Reward the credit assignment gave this call' : untrained,
    ),
    metric(
      'Advantage',
      transition ? fmtSigned(transition.advantage) : '—',
      `advantage ${signClass(transition?.advantage)}`,
      transition ? `GRPO advantage at training step ${transition.step} (group ${transition.groupId})` : untrained,
    ),
    call.finishReasons.length ? metric('Finish', call.finishReasons.join(', ')) : null,
    metric(
      'Token ids',
      call.completionTokenIds !== null ? `${call.promptTokenIds ?? 0} + ${call.completionTokenIds}` : 'none',
      call.completionTokenIds !== null ? '' : 'warning-metric',
      call.completionTokenIds === null
        ? 'No token ids recorded (e.g. an upstream server that does not return them): the trainer skips this call'
        : trained
          ? 'Prompt + completion token ids recorded: what the trainer trained on'
          : `Prompt + completion token ids recorded. ${untrained}`,
    ),
    call.meanLogprob !== null
      ? metric('Mean logprob', fmtNumber(call.meanLogprob), '', 'Mean log-probability of the completion under the sampling policy')
      : null,
  );
}

export function renderSpanDetail(
  span: Span,
  transition: Transition | undefined,
  rolloutReward: number | null,
  actions: DetailActions,
  agent: string | null = null,
  agentName: string | null = null,
  tool?: ToolStep,
  info?: CallInfo,
  rolloutSpans: readonly Span[] = [],
): HTMLElement {
  const kind = spanKind(span);
  if (kind !== 'llm') return otherSpanDetail(span, kind, actions, tool);
  const call = llmCall(span, info?.role ?? agentName);
  const reward = transition?.reward ?? rolloutReward;
  // Why the numbers are empty, when they are: the run's rule, never "can be trained" for a role it leaves out.
  const untrained = info ? info.why : 'Not used for training: no training run stored a transition for this call';
  const trained = !!transition && (!info || info.training === 'trained');
  return h(
    'section',
    { class: 'detail detail-llm', 'data-call': info?.number ?? null, 'data-role': info?.role ?? null, 'data-training': info?.training ?? null },
    callTitle(span, call, info, transition, agent, actions),
    info ? h('div', { class: `training-note training-${info.training}` }, icon(trained ? 'pass' : 'info'), h('span', {}, ` ${info.why}`)) : null,
    callMetrics(call, transition, reward, untrained, trained),
    // An LLM judge's reward: its words beside the number.
    judgeReason(rolloutSpans),
    h(
      'div',
      { class: 'chat' },
      ...call.prompt.map((m) => chatBubble(m)),
      h('div', { class: 'chat-divider' }, h('span', {}, 'response')),
      ...(call.response.length ? call.response.map((m) => chatBubble(m, 'response')) : [h('div', { class: 'muted' }, 'No response recorded.')]),
    ),
  );
}
