/**
 * Tool calls in local-model output. Chat templates of tool-using models (Qwen2.5/3, Hermes) ask the
 * model to answer `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`; this turns such text into
 * OpenAI `tool_calls`, and tells the streamer how much text is safe to send before a tag may begin.
 */
import { randomBytes } from 'node:crypto';

export const TOOL_CALL_OPEN = '<tool_call>';
const TOOL_CALL_BLOCK = /<tool_call>\s*([\s\S]*?)\s*(?:<\/tool_call>|$)/g;

export interface ParsedToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export function parseToolCalls(text: string): { content: string | null; toolCalls: ParsedToolCall[] } {
  const start = text.indexOf(TOOL_CALL_OPEN);
  if (start < 0) return { content: text, toolCalls: [] };
  const toolCalls: ParsedToolCall[] = [];
  for (const m of text.matchAll(TOOL_CALL_BLOCK)) {
    try {
      const call = JSON.parse(m[1]) as { name?: unknown; arguments?: unknown; parameters?: unknown };
      if (typeof call.name !== 'string') continue;
      const args = call.arguments ?? call.parameters ?? {};
      toolCalls.push({
        id: `call_${randomBytes(12).toString('hex')}`,
        type: 'function',
        function: { name: call.name, arguments: typeof args === 'string' ? args : JSON.stringify(args) },
      });
    } catch {
      /* malformed JSON: the text stays content, as the model wrote it */
    }
  }
  if (toolCalls.length === 0) return { content: text, toolCalls: [] };
  const content = text.slice(0, start).trimEnd();
  return { content: content.trim().length ? content : null, toolCalls };
}

/**
 * Length of the prefix of `text` that can be streamed now: it stops before a `<tool_call>` tag, before
 * any suffix that could still become one of `holdBack` (the tag or a stop string), and before a
 * replacement char from a multi-byte character not yet complete.
 */
export function safeStreamLength(text: string, holdBack: string[]): number {
  const tag = text.indexOf(TOOL_CALL_OPEN);
  let limit = tag >= 0 ? tag : text.length;
  for (const marker of holdBack) {
    const at = text.indexOf(marker);
    if (at >= 0 && at < limit) limit = at;
  }
  for (const marker of holdBack) {
    for (let k = Math.min(marker.length - 1, limit); k > 0; k--) {
      if (text.slice(limit - k, limit) === marker.slice(0, k)) {
        limit -= k;
        break;
      }
    }
  }
  while (limit > 0 && text.charCodeAt(limit - 1) === 0xfffd) limit--;
  return limit;
}
