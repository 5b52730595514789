/**
 * Pure derivations the trajectory viewer draws from a rollout's spans: the span tree (with broken
 * parentage repaired), what kind each span is, LLM calls as chat messages, rewards, and the semantic
 * variables after each step (the "states" of the Agent Lightning paper's Figure 1).
 * No DOM here, so it reads top to bottom and is easy to test.
 */
import {
  agentNames,
  isFinalRewardSpan,
  llmCallNumbers,
  numberArrayAttr,
  ownAgentName,
  repairedParents,
  rewardOfSpan,
  spanKind,
} from '../../protocol/span-reading.js';
import { AGL, GENAI } from '../../protocol/spans.js';
import type { Span, Transition } from '../../protocol/store.js';
import {
  callMessages,
  compactPayload,
  messageText,
  parseJsonValue as parseJson,
  toolStepLine,
  toolSteps,
  type ChatMessage,
} from '../../protocol/episode-text.js';

// The reading of messages and tool steps is the judge's too (protocol/episode-text.ts): what a judge scored is what the viewer shows.
export { compactPayload, messageText, toChatMessage, toolStepLine, toolSteps, type ChatMessage, type ToolStep } from '../../protocol/episode-text.js';

export interface SpanNode {
  span: Span;
  depth: number;
  children: SpanNode[];
}

/**
 * Roots and children ordered by start time, parents repaired as every reader repairs them
 * (protocol/span-reading.ts): a span whose parent never arrived, or in a cycle, hangs under the rollout's root.
 */
export function buildSpanTree(spans: Span[]): SpanNode[] {
  const byId = new Map<string, SpanNode>();
  const sorted = [...spans].sort((a, b) => a.startTime - b.startTime || a.sequenceId - b.sequenceId);
  for (const span of sorted) byId.set(span.spanId, { span, depth: 0, children: [] });
  const parents = repairedParents(sorted);
  const roots: SpanNode[] = [];
  for (const node of byId.values()) {
    const parentId = parents.get(node.span.spanId);
    const parent = parentId ? byId.get(parentId) : undefined;
    if (parent) parent.children.push(node);
    else roots.push(node);
  }
  const setDepth = (node: SpanNode, depth: number): void => {
    node.depth = depth;
    for (const child of node.children) setDepth(child, depth + 1);
  };
  for (const root of roots) setDepth(root, 0);
  return roots;
}

/** Depth-first order, skipping the children of collapsed spans. */
export function flattenTree(roots: SpanNode[], collapsed: Set<string> = new Set()): SpanNode[] {
  const out: SpanNode[] = [];
  const walk = (node: SpanNode): void => {
    out.push(node);
    if (!collapsed.has(node.span.spanId)) node.children.forEach(walk);
  };
  roots.forEach(walk);
  return out;
}

export function timeRange(spans: Span[]): { start: number; end: number } {
  if (spans.length === 0) return { start: 0, end: 1 };
  const start = Math.min(...spans.map((s) => s.startTime));
  const end = Math.max(...spans.map((s) => s.endTime ?? s.startTime));
  return { start, end: end > start ? end : start + 1 };
}

/** The reward a reward span carries (ours or agent-lightning v0's shape), null for other spans. */
export function rewardValue(span: Span): number | null {
  return rewardOfSpan(span)?.value ?? null;
}

export interface LlmCall {
  span: Span;
  prompt: ChatMessage[];
  response: ChatMessage[];
  model: string | null;
  inputTokens: number | null;
  outputTokens: number | null;
  latencyMs: number | null;
  agentName: string | null;
  finishReasons: string[];
  code: { filepath: string; lineno: number | null } | null;
  /** Token ids recorded for training (null when the gateway could not get them). */
  promptTokenIds: number | null;
  completionTokenIds: number | null;
  /** Mean log-prob of the completion under the policy that sampled it. */
  meanLogprob: number | null;
}

/**
 * Where the agent itself is defined, from a rollout's agent spec (`path/file.ts#exportName` or the Python
 * `package.module:function`): the fallback for "jump to code" when a call carries no code.filepath.
 */
export function agentSource(agent: string | null): { filepath: string; symbol: string } | null {
  if (!agent) return null;
  const hash = agent.lastIndexOf('#');
  if (hash > 0) return { filepath: agent.slice(0, hash), symbol: agent.slice(hash + 1) };
  const colon = agent.lastIndexOf(':');
  if (colon > 0 && !/^[a-z]:[\\/]/i.test(agent)) {
    const module = agent.slice(0, colon);
    return { filepath: module.endsWith('.py') ? module : `${module.replace(/\./g, '/')}.py`, symbol: agent.slice(colon + 1) };
  }
  return { filepath: agent, symbol: '' };
}

export function llmCall(span: Span, inheritedAgentName: string | null = null): LlmCall {
  const a = span.attributes;
  const num = (k: string): number | null => (typeof a[k] === 'number' ? (a[k] as number) : null);
  const str = (k: string): string | null => (typeof a[k] === 'string' ? (a[k] as string) : null);
  const finish = a[GENAI.responseFinishReasons];
  const filepath = str(AGL.codeFilepath);
  return {
    span,
    ...callMessages(span),
    model: str(GENAI.responseModel) ?? str(GENAI.requestModel),
    // Usage when the server reported it, else the token ids the gateway recorded.
    inputTokens: num(GENAI.usageInputTokens) ?? numberArrayAttr(a[AGL.promptTokenIds])?.length ?? null,
    outputTokens: num(GENAI.usageOutputTokens) ?? numberArrayAttr(a[AGL.completionTokenIds])?.length ?? null,
    latencyMs: num(AGL.latencyMs) ?? (span.endTime !== null ? span.endTime - span.startTime : null),
    agentName: ownAgentName(span) ?? inheritedAgentName,
    finishReasons: Array.isArray(finish) ? finish.map(String) : typeof finish === 'string' ? [finish] : [],
    code: filepath ? { filepath, lineno: num(AGL.codeLineno) } : null,
    promptTokenIds: numberArrayAttr(a[AGL.promptTokenIds])?.length ?? null,
    completionTokenIds: numberArrayAttr(a[AGL.completionTokenIds])?.length ?? null,
    meanLogprob: ((lp) => (lp && lp.length ? lp.reduce((x, y) => x + y, 0) / lp.length : null))(numberArrayAttr(a[AGL.completionLogprobs])),
  };
}

/** The transition for a span, from the newest training step that used it. */
export function transitionsBySpan(transitions: Transition[]): Map<string, Transition> {
  const out = new Map<string, Transition>();
  for (const t of [...transitions].sort((a, b) => a.step - b.step)) out.set(t.spanId, t);
  return out;
}

// --- states (Figure 1) -------------------------------------------------------------------------------

export type VariableKind = 'input' | 'llm' | 'tool' | 'object' | 'reward';
export interface StateVariable {
  id: string;
  label: string;
  kind: VariableKind;
  value: string;
}
export interface StateStep {
  label: string;
  kind: VariableKind;
  span: Span | null;
  writes: string[];
  reads: string[];
}
export interface StatesTable {
  variables: StateVariable[];
  steps: StateStep[];
}

/** The rollout's task: the root span's `agl.task`, else the rollout input given by the caller. */
function taskText(spans: Span[], input: unknown): string {
  const root = spans.find((s) => spanKind(s) === 'agent' && typeof s.attributes['agl.task'] === 'string');
  const raw = root ? parseJson(root.attributes['agl.task']) : input;
  return typeof raw === 'string' ? raw : JSON.stringify(raw ?? null);
}

/** Pieces of a variable's value long enough to recognise when a later prompt quotes them. */
function fingerprints(value: string): string[] {
  const parsed = parseJson(value);
  const leaves: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') leaves.push(v);
    else if (typeof v === 'number') leaves.push(String(v));
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(parsed);
  return leaves.map((s) => s.trim()).filter((s) => s.length >= 3);
}

/**
 * Each step (LLM call, tool result, emitted object, reward) in time order, which semantic variables it
 * wrote, and which earlier variables an LLM call read (its prompt quotes their value). A variable is
 * empty before the step that writes it and filled after.
 */
export function deriveStates(spans: Span[], input: unknown): StatesTable {
  const variables: StateVariable[] = [{ id: 'task', label: 'task input', kind: 'input', value: taskText(spans, input) }];
  const steps: StateStep[] = [];
  const toolResultsSeen = new Set<string>();
  const tools = toolSteps(spans);
  const ordered = [...spans].sort((a, b) => (a.endTime ?? a.startTime) - (b.endTime ?? b.startTime) || a.sequenceId - b.sequenceId);
  // Columns go in the order steps ended; a call keeps its one number (started order) as every view names it.
  const numbers = llmCallNumbers(spans);
  let toolIndex = 0;
  const names = agentNames(spans);
  const readsOf = (promptText: string): string[] => variables.filter((v) => fingerprints(v.value).some((f) => promptText.includes(f))).map((v) => v.id);
  const addTool = (label: string, name: string, value: string, span: Span | null): void => {
    const id = `tool-${++toolIndex}`;
    variables.push({ id, label: `tool result ${name}`.trim(), kind: 'tool', value });
    steps.push({ label, kind: 'tool', span, writes: [id], reads: [] });
  };

  for (const span of ordered) {
    const kind = spanKind(span);
    if (kind === 'llm') {
      const call = llmCall(span, names.get(span.spanId) ?? null);
      // Tool results the agent fed back (role "tool") without a tool span of their own: steps before this call.
      const toolNames = new Map(
        call.prompt
          .flatMap((p) => p.toolCalls)
          .filter((c) => c.id)
          .map((c) => [c.id!, c]),
      );
      for (const m of call.prompt.filter((p) => p.role === 'tool')) {
        const key = m.toolCallId ?? m.text;
        if (toolResultsSeen.has(key)) continue;
        toolResultsSeen.add(key);
        const requested = m.toolCallId ? toolNames.get(m.toolCallId) : undefined;
        const name = m.name ?? requested?.name ?? '';
        addTool(`${name || 'tool'}(${requested ? compactPayload(requested.args) : ''}) → ${m.text}`, name, m.text, null);
      }
      const promptText = call.prompt.map(messageText).join('\n');
      const reads = readsOf(promptText);
      const n = numbers.get(span.spanId)!;
      const id = `llm-${n - 1}`; // 0-based, as before: the label carries the number
      const who = call.agentName ?? 'LLM';
      variables.push({ id, label: `${who} output #${n}`, kind: 'llm', value: call.response.map(messageText).join('\n') });
      steps.push({ label: `${who} call #${n}`, kind: 'llm', span, writes: [id], reads });
    } else if (kind === 'tool') {
      const tool = tools.get(span.spanId)!;
      toolResultsSeen.add(tool.callId ?? tool.output ?? span.spanId);
      addTool(toolStepLine(tool), tool.name, tool.ok ? (tool.output ?? '') : `error: ${tool.error ?? 'failed'}`, span);
    } else if (kind === 'object') {
      const id = `object-${span.spanId}`;
      variables.push({
        id,
        label: `object ${variables.filter((v) => v.kind === 'object').length + 1}`,
        kind: 'object',
        value: String(span.attributes[AGL.objectJson] ?? ''),
      });
      steps.push({ label: 'emit object', kind: 'object', span, writes: [id], reads: [] });
    } else if (kind === 'reward') {
      const id = `reward-${span.spanId}`;
      const name = String(span.attributes[AGL.rewardName] ?? 'reward');
      const value = rewardValue(span);
      // "reward" is the default name, not said twice: the column reads "final reward", or "reward judge".
      const what = isFinalRewardSpan(span) ? 'final reward' : 'reward';
      variables.push({ id, label: name, kind: 'reward', value: String(value ?? '') });
      steps.push({ label: `${what}${name !== 'reward' ? ` ${name}` : ''}`, kind: 'reward', span, writes: [id], reads: [] });
    }
  }
  return { variables, steps };
}

/** Whether `variableId` holds a value after step `stepIndex` (the task input always does). */
export function isFilled(table: StatesTable, variableId: string, stepIndex: number): boolean {
  if (variableId === 'task') return true;
  return table.steps.slice(0, stepIndex + 1).some((s) => s.writes.includes(variableId));
}
