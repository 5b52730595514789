/**
 * The byte tokenizer of built-in models: ids 0-255 are UTF-8 bytes, then a few special tokens. Its chat
 * template is compact (tiny models have short contexts) and role-tagged:
 *
 *   <|system|>You add numbers.\ntools: calc(expression)<|end|><|user|>What is 2+3?<|end|><|assistant|>
 *   <tool_call>{"name":"calc","arguments":{"expression":"2+3"}}</tool_call><|end|><|tool|>5<|end|><|assistant|>5<|end|>
 *
 * Tool calls use the same <tool_call>JSON</tool_call> text as Qwen models, so one parser
 * (parseAssistantText) serves both. Special-token strings in text encode to their single ids.
 */
import type { ChatMessage, Tokenizer, ToolSpec } from './policy-contract.js';

export const BYTE_SPECIALS = ['<|endoftext|>', '<|system|>', '<|user|>', '<|assistant|>', '<|tool|>', '<|end|>', '<tool_call>', '</tool_call>'] as const;
const SPECIAL_RE = new RegExp(BYTE_SPECIALS.map((s) => s.replace(/[|/<>]/g, (c) => `\\${c}`)).join('|'), 'g');

/** Renders one tool as `name(param, ...)`, plus its description when asked (costs context). */
function renderTool(t: ToolSpec, withDescriptions: boolean): string {
  const props = (t.function.parameters as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
  const sig = `${t.function.name}(${Object.keys(props).join(',')})`;
  return withDescriptions && t.function.description ? `${sig}: ${t.function.description}` : sig;
}

export function renderToolCall(call: { function: { name: string; arguments: string } }): string {
  let args: unknown = call.function.arguments;
  try {
    args = JSON.parse(call.function.arguments);
  } catch {
    /* keep the raw string */
  }
  return `<tool_call>${JSON.stringify({ name: call.function.name, arguments: args })}</tool_call>`;
}

export class ByteTokenizer implements Tokenizer {
  readonly vocabSize = 256 + BYTE_SPECIALS.length;
  readonly eosTokenIds: number[];
  private readonly enc = new TextEncoder();
  private readonly dec = new TextDecoder('utf-8', { fatal: false });

  constructor(private readonly toolDescriptions = false) {
    this.eosTokenIds = [this.specialId('<|end|>'), this.specialId('<|endoftext|>')];
  }

  specialId(s: (typeof BYTE_SPECIALS)[number]): number {
    return 256 + BYTE_SPECIALS.indexOf(s);
  }

  encode(text: string): number[] {
    const ids: number[] = [];
    let last = 0;
    for (const m of text.matchAll(SPECIAL_RE)) {
      ids.push(...this.enc.encode(text.slice(last, m.index)));
      ids.push(256 + BYTE_SPECIALS.indexOf(m[0] as (typeof BYTE_SPECIALS)[number]));
      last = m.index! + m[0].length;
    }
    ids.push(...this.enc.encode(text.slice(last)));
    return ids;
  }

  decode(ids: number[]): string {
    let out = '';
    let bytes: number[] = [];
    const flush = () => {
      if (bytes.length) {
        out += this.dec.decode(new Uint8Array(bytes));
        bytes = [];
      }
    };
    for (const id of ids) {
      if (id < 256) bytes.push(id);
      else {
        flush();
        out += BYTE_SPECIALS[id - 256] ?? '';
      }
    }
    flush();
    return out;
  }

  applyChatTemplate(messages: ChatMessage[], opts: { addGenerationPrompt?: boolean; tools?: ToolSpec[] } = {}): string {
    let out = '';
    const tools = opts.tools?.length ? `tools: ${opts.tools.map((t) => renderTool(t, this.toolDescriptions)).join('; ')}` : '';
    const hasSystem = messages[0]?.role === 'system';
    if (tools && !hasSystem) out += `<|system|>${tools}<|end|>`;
    for (const [i, m] of messages.entries()) {
      let body = m.content ?? '';
      if (i === 0 && hasSystem && tools) body = body ? `${body}\n${tools}` : tools;
      if (m.role === 'assistant' && m.tool_calls?.length) body += m.tool_calls.map(renderToolCall).join('');
      out += `<|${m.role}|>${body}<|end|>`;
    }
    if (opts.addGenerationPrompt ?? true) out += '<|assistant|>';
    return out;
  }
}

export interface ParsedAssistant {
  content: string | null;
  tool_calls: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
}

/**
 * Splits generated assistant text into content and tool calls written as <tool_call>{"name", "arguments"}</tool_call>
 * (our byte template and the Qwen templates). Malformed calls stay in the content so nothing is lost.
 */
export function parseAssistantText(text: string, idPrefix = 'call_'): ParsedAssistant {
  const tool_calls: ParsedAssistant['tool_calls'] = [];
  const content = text
    .replace(/<tool_call>([\s\S]*?)(?:<\/tool_call>|$)/g, (whole, inner: string) => {
      try {
        const obj = JSON.parse(inner.trim()) as { name?: unknown; arguments?: unknown };
        if (typeof obj.name !== 'string') return whole;
        const args = typeof obj.arguments === 'string' ? obj.arguments : JSON.stringify(obj.arguments ?? {});
        tool_calls.push({ id: `${idPrefix}${tool_calls.length}`, type: 'function', function: { name: obj.name, arguments: args } });
        return '';
      } catch {
        return whole;
      }
    })
    .trim();
  return { content: content.length ? content : null, tool_calls };
}
