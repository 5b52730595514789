/**
 * An episode as text: how the trajectory viewer and the LLM judge read one attempt's spans, so what a judge scored
 * is what the viewer shows. The reading of an LLM call's messages (OpenAI chat, GenAI parts, or bare completions) and
 * of tool steps (`name(input) → output`, borrowing from the chat around a tool span what it did not record) lives
 * here; the viewer draws them (webview/trajectory/), the judge (daemon/judge/) is sent `renderEpisode`'s text: the
 * task, every LLM call's messages and tool calls in order, tool steps and errors, and the final answer. Rewards, judge
 * spans and the output the agent scored against are never in it (the judge must not see a grade). Pure, no I/O.
 */
import { episodeAnswer, expectedTaskFields, llmCallNumbers, ownAgentName, agentNames, spanKind } from './span-reading.js';
import { AGL, GENAI, SPAN } from './spans.js';
import type { Span } from './store.js';

// ---- an LLM call's messages -------------------------------------------------------------------------------

export interface ChatMessage {
  role: string;
  text: string;
  name?: string;
  toolCalls: { id?: string; name: string; args: string }[];
  toolCallId?: string;
}

function partText(part: unknown): string {
  if (typeof part === 'string') return part;
  if (typeof part !== 'object' || part === null) return '';
  const p = part as Record<string, unknown>;
  if (typeof p.text === 'string') return p.text;
  if (typeof p.content === 'string') return p.content;
  if (p.type === 'image_url') return '[image]';
  return JSON.stringify(p);
}

/** One message in OpenAI chat form, GenAI `parts` form, or a bare string (completions). */
export function toChatMessage(raw: unknown, defaultRole = 'assistant'): ChatMessage {
  if (typeof raw === 'string') return { role: defaultRole, text: raw, toolCalls: [] };
  const m = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const inner = typeof m.message === 'object' && m.message !== null ? (m.message as Record<string, unknown>) : m; // a choice
  const content = inner.content ?? inner.parts ?? inner.text;
  const text = Array.isArray(content) ? content.map(partText).join('\n') : content === null || content === undefined ? '' : partText(content);
  const toolCalls = (Array.isArray(inner.tool_calls) ? inner.tool_calls : []).map((c: Record<string, unknown>) => {
    const fn = (c.function ?? c) as Record<string, unknown>;
    const args = typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? {});
    return { id: typeof c.id === 'string' ? c.id : undefined, name: String(fn.name ?? 'tool'), args };
  });
  return {
    role: typeof inner.role === 'string' ? inner.role : defaultRole,
    text,
    name: typeof inner.name === 'string' ? inner.name : undefined,
    toolCalls,
    toolCallId: typeof inner.tool_call_id === 'string' ? inner.tool_call_id : undefined,
  };
}

/** A JSON string's value; anything else (or a string that is not JSON) as it is. */
export function parseJsonValue(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/** An attribute holding one message or a list of them, as messages. */
export function asMessages(value: unknown, defaultRole: string): ChatMessage[] {
  const parsed = parseJsonValue(value);
  if (parsed === undefined || parsed === null || parsed === '') return [];
  return (Array.isArray(parsed) ? parsed : [parsed]).map((m) => toChatMessage(m, defaultRole));
}

/** An LLM call span's messages: what it was sent (`prompt`) and what it answered (`response`). */
export function callMessages(span: Pick<Span, 'attributes'>): { prompt: ChatMessage[]; response: ChatMessage[] } {
  return { prompt: asMessages(span.attributes[GENAI.inputMessages], 'user'), response: asMessages(span.attributes[GENAI.outputMessages], 'assistant') };
}

/** A message's text and its tool calls as `name(args)`, one per line. */
export function messageText(m: ChatMessage): string {
  return [m.text, ...m.toolCalls.map((c) => `${c.name}(${c.args})`)].filter(Boolean).join('\n');
}

// ---- tool steps -------------------------------------------------------------------------------------------

/** A tool execution as `name(input) → output`, with its status kept apart from its output. */
export interface ToolStep {
  span: Span;
  name: string;
  input: string | null;
  output: string | null;
  ok: boolean;
  error: string | null;
  callId: string | null;
}

/** Attribute namespaces of the conventions: anything else on a tool span is the agent's own (e.g. `calc.expression`). */
const CONVENTION_PREFIXES = ['gen_ai.', 'agl.', 'agentlightning.', 'code.', 'exception.', 'service.'];

/** A payload as short text: a JSON string unwrapped, a one-field object as its value, else compact JSON. */
export function compactPayload(raw: unknown): string {
  const v = parseJsonValue(raw);
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const values = Object.values(v);
    if (values.length === 1 && (typeof values[0] === 'string' || typeof values[0] === 'number')) return String(values[0]);
  }
  return JSON.stringify(v) ?? String(raw);
}

/** `name(input) → output`, or `→ error: message` when the tool failed. */
export function toolStepLine(t: ToolStep): string {
  const result = t.ok ? (t.output ?? '(no result recorded)') : `error: ${t.error ?? t.output ?? 'failed'}`;
  return `${t.name}(${t.input ?? ''}) → ${result}`;
}

/**
 * Every tool span of an attempt read as a step. Input and output come from the span's GenAI attributes
 * (`gen_ai.tool.call.arguments` / `.result`, what the SDK's `operation(..., { tool: true })` writes); a span
 * without them borrows them from the chat around it: the arguments of the matching tool call in the response
 * of the LLM call before it, the result from the role "tool" message answering that call in the prompt of the
 * call after it; failing that, the input is the span's own non-convention attributes.
 */
export function toolSteps(spans: Span[]): Map<string, ToolStep> {
  const ordered = [...spans].sort((a, b) => a.startTime - b.startTime || a.sequenceId - b.sequenceId);
  const calls = ordered.filter((s) => spanKind(s) === 'llm').map((s) => ({ span: s, call: callMessages(s) }));
  const usedCallIds = new Set<string>();
  const out = new Map<string, ToolStep>();
  for (const span of ordered.filter((s) => spanKind(s) === 'tool')) {
    const a = span.attributes;
    const name = String(a[GENAI.toolName] ?? a['agl.operation.name'] ?? span.name);
    let callId = typeof a[GENAI.toolCallId] === 'string' ? (a[GENAI.toolCallId] as string) : null;
    let input = a[GENAI.toolCallArguments] !== undefined ? compactPayload(a[GENAI.toolCallArguments]) : null;
    let output =
      a[GENAI.toolCallResult] !== undefined
        ? compactPayload(a[GENAI.toolCallResult])
        : a['agl.tool.result'] !== undefined
          ? compactPayload(a['agl.tool.result'])
          : null;
    const before = calls.filter((c) => (c.span.endTime ?? c.span.startTime) <= span.startTime).at(-1);
    const requested = before?.call.response
      .flatMap((m) => m.toolCalls)
      .find((c) => (callId ? c.id === callId : c.name === name && !(c.id && usedCallIds.has(c.id))));
    if (requested) {
      callId = callId ?? requested.id ?? null;
      input = input ?? compactPayload(requested.args);
    }
    if (callId) usedCallIds.add(callId);
    if (output === null && callId) {
      const answer = calls
        .filter((c) => c.span.startTime >= (span.endTime ?? span.startTime))
        .flatMap((c) => c.call.prompt)
        .find((m) => m.role === 'tool' && m.toolCallId === callId);
      if (answer) output = answer.text;
    }
    if (input === null) {
      const own = Object.entries(a).filter(([k]) => !CONVENTION_PREFIXES.some((p) => k.startsWith(p)));
      if (own.length) input = own.length === 1 ? compactPayload(own[0]![1]) : JSON.stringify(Object.fromEntries(own));
    }
    const failed = span.status.code === 'error' || a[AGL.toolSucceeded] === false;
    out.set(span.spanId, { span, name, input, output, ok: !failed, error: failed ? (span.status.message ?? null) : null, callId });
  }
  return out;
}

// ---- the episode as the judge reads it ---------------------------------------------------------------------

/** A value as text: strings as they are, anything else as indented JSON. */
const asText = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v, null, 1) ?? String(v)));
/** An answer as text: a short object on its line (`{"answer":"38"}`), a long one indented. */
const answerText = (v: unknown): string => {
  const line = typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v));
  return line.length <= 200 ? line : asText(v);
};

/**
 * The task as the judge reads it: its fields one per line. The fields holding its expected output (answer, gold, ...:
 * span-reading.ts EXPECTED_TASK_KEYS) are left out unless `showExpected`: a judge is for grading without them.
 */
export function renderTask(input: unknown, o: { showExpected?: boolean } = {}): string {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return asText(input);
  const hidden = new Set(o.showExpected ? [] : expectedTaskFields(input).map((f) => f.key));
  const lines = Object.entries(input)
    .filter(([k]) => !hidden.has(k))
    .map(([k, v]) => `${k}: ${asText(v)}`);
  return lines.join('\n');
}

const sameMessage = (a: ChatMessage, b: ChatMessage) => a.role === b.role && messageText(a) === messageText(b);

/** `[role] text` lines of a message (its further lines indented under it), its tool calls as `→ tool call name(args)`. */
function messageLines(m: ChatMessage): string[] {
  const who = m.name ? `${m.role} ${m.name}` : m.role;
  const [first = '', ...rest] = m.text.split('\n');
  return [`[${who}] ${first}`.trimEnd(), ...rest.map((l) => `  ${l}`.trimEnd()), ...m.toolCalls.map((c) => `  → tool call ${c.name}(${c.args})`)];
}

/** Text cut to `max` characters in the middle (the start and the end say most), saying how much was cut. */
export function cutMiddle(text: string, max: number): string {
  if (text.length <= max) return text;
  const keep = Math.max(0, max - 40);
  const head = text.slice(0, Math.ceil(keep / 2));
  const tail = text.slice(text.length - Math.floor(keep / 2));
  return `${head}\n[... ${text.length - head.length - tail.length} characters cut ...]\n${tail}`;
}

/**
 * One attempt's episode as text (give the spans of one attempt), in the order it ran: each LLM call (numbered as every
 * view numbers them, with its role) with the messages it was sent that the conversation so far did not already hold,
 * and its answer; each tool step; each error; then the episode's answer (span-reading.ts episodeAnswer) and, for an
 * attempt that failed, its error. Cut in the middle past `maxChars`.
 */
export function renderEpisode(spans: Span[], o: { maxChars?: number } = {}): string {
  const ordered = [...spans].sort((a, b) => a.startTime - b.startTime || a.sequenceId - b.sequenceId);
  const numbers = llmCallNumbers(spans);
  const names = agentNames(spans);
  const tools = toolSteps(spans);
  const lines: string[] = [];
  let conversation: ChatMessage[] = [];
  for (const span of ordered) {
    const kind = spanKind(span);
    if (kind === 'llm') {
      const { prompt, response } = callMessages(span);
      const continues = conversation.length > 0 && conversation.length <= prompt.length && conversation.every((m, i) => sameMessage(m, prompt[i]!));
      const role = ownAgentName(span) ?? names.get(span.spanId) ?? null;
      lines.push(`LLM call #${numbers.get(span.spanId)}${role ? ` (${role})` : ''}:`);
      for (const m of continues ? prompt.slice(conversation.length) : prompt) lines.push(...messageLines(m).map((l) => `  ${l}`));
      for (const m of response) lines.push(...messageLines(m).map((l) => `  ${l}`));
      conversation = [...prompt, ...response];
    } else if (kind === 'tool') {
      lines.push(`Tool: ${toolStepLine(tools.get(span.spanId)!)}`);
    } else if (kind === 'exception') {
      const type = span.attributes[AGL.exceptionType];
      lines.push(`Error: ${typeof type === 'string' && type ? `${type}: ` : ''}${String(span.attributes[AGL.exceptionMessage] ?? '')}`);
    } else if (kind === 'message') {
      lines.push(`Message: ${String(span.attributes[AGL.message] ?? '')}`);
    }
  }
  const answer = episodeAnswer(spans);
  lines.push(answer.source === 'none' ? 'Final answer: (the agent recorded none)' : `Final answer: ${answerText(answer.value)}`);
  const root = spans.find((s) => s.name === SPAN.agentRun);
  if (root?.status.code === 'error') lines.push(`The run failed: ${root.status.message ?? 'error'}`);
  const text = lines.join('\n');
  return o.maxChars ? cutMiddle(text, o.maxChars) : text;
}
