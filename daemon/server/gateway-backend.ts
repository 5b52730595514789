/**
 * What the gateway asks of a backend (the local policy or an upstream OpenAI-compatible server), and
 * the minimal OpenAI wire shapes it handles. Backends return the OpenAI response body plus whatever
 * token-level data they know (exact for the local policy; from upstream only when it returns them).
 */
import type { LlmResource } from '../../protocol/store.js';

export type OpenAiBody = Record<string, unknown> & { model?: string; stream?: boolean };

export interface CallRequest {
  kind: 'chat' | 'completion';
  body: OpenAiBody;
  /** The published LLM resource serving this call (sampling defaults, backend, upstream). */
  resource: LlmResource;
}

export interface CallResult {
  /** The full (non-streaming) OpenAI response body; for streams, assembled from the chunks. */
  response: Record<string, unknown>;
  promptTokenIds?: number[];
  /** Completion token ids of each choice. */
  completionTokenIds?: number[][];
  completionLogprobs?: number[][];
  local: boolean;
}

export interface Backend {
  call(req: CallRequest, signal: AbortSignal): Promise<CallResult>;
  /** Streams OpenAI chunk objects through `onChunk`, resolving with the assembled result. */
  stream(req: CallRequest, signal: AbortSignal, onChunk: (chunk: Record<string, unknown>) => void): Promise<CallResult>;
}

/** An error to return to the client with this HTTP status, in OpenAI's error shape. */
export class GatewayError extends Error {
  constructor(
    public readonly status: number,
    message: string,
    public readonly code: string = 'invalid_request_error',
    public readonly param: string | null = null,
  ) {
    super(message);
  }
}

interface ToolCallDelta {
  index: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

/**
 * Folds streamed chat/completion chunks into the equivalent non-streaming response, so a streamed
 * call is recorded exactly like a plain one (content, tool calls, finish reasons, usage, token ids).
 */
export class StreamAssembler {
  private id = '';
  private model = '';
  private created = 0;
  private usage: unknown = undefined;
  private promptTokenIds: number[] | undefined;
  private readonly choices = new Map<
    number,
    {
      content: string;
      text: string;
      role: string;
      finish: string | null;
      toolCalls: Map<number, { id: string; type: string; name: string; arguments: string }>;
      tokenIds: number[];
      logprobs: number[];
    }
  >();

  constructor(private readonly kind: 'chat' | 'completion') {}

  add(chunk: Record<string, unknown>): void {
    if (typeof chunk.id === 'string') this.id = chunk.id;
    if (typeof chunk.model === 'string') this.model = chunk.model;
    if (typeof chunk.created === 'number') this.created = chunk.created;
    if (chunk.usage) this.usage = chunk.usage;
    if (Array.isArray(chunk.prompt_token_ids)) this.promptTokenIds = chunk.prompt_token_ids as number[];
    for (const raw of (chunk.choices as Record<string, unknown>[] | undefined) ?? []) {
      const index = (raw.index as number) ?? 0;
      let c = this.choices.get(index);
      if (!c) {
        c = { content: '', text: '', role: 'assistant', finish: null, toolCalls: new Map(), tokenIds: [], logprobs: [] };
        this.choices.set(index, c);
      }
      const delta = (raw.delta ?? {}) as Record<string, unknown>;
      if (typeof delta.content === 'string') c.content += delta.content;
      if (typeof raw.text === 'string') c.text += raw.text;
      for (const tc of (delta.tool_calls as ToolCallDelta[] | undefined) ?? []) {
        let t = c.toolCalls.get(tc.index);
        if (!t) {
          t = { id: '', type: 'function', name: '', arguments: '' };
          c.toolCalls.set(tc.index, t);
        }
        if (tc.id) t.id = tc.id;
        if (tc.function?.name) t.name += tc.function.name;
        if (tc.function?.arguments) t.arguments += tc.function.arguments;
      }
      if (raw.finish_reason) c.finish = raw.finish_reason as string;
      if (Array.isArray(raw.token_ids)) c.tokenIds.push(...(raw.token_ids as number[]));
      const lp = raw.logprobs as { content?: { logprob: number }[]; token_logprobs?: number[] } | null | undefined;
      if (lp?.content) c.logprobs.push(...lp.content.map((x) => x.logprob));
      else if (lp?.token_logprobs) c.logprobs.push(...lp.token_logprobs);
    }
  }

  result(local: boolean): CallResult {
    const ordered = [...this.choices.entries()].sort((a, b) => a[0] - b[0]);
    const choices = ordered.map(([index, c]) => {
      if (this.kind === 'completion') return { index, text: c.text, finish_reason: c.finish, logprobs: null };
      const toolCalls = [...c.toolCalls.entries()]
        .sort((a, b) => a[0] - b[0])
        .map(([, t]) => ({ id: t.id, type: t.type, function: { name: t.name, arguments: t.arguments } }));
      return {
        index,
        message: { role: c.role, content: c.content || (toolCalls.length ? null : ''), ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
        finish_reason: c.finish,
      };
    });
    const anyTokens = ordered.some(([, c]) => c.tokenIds.length > 0);
    const anyLogprobs = ordered.some(([, c]) => c.logprobs.length > 0);
    return {
      response: {
        id: this.id,
        object: this.kind === 'chat' ? 'chat.completion' : 'text_completion',
        created: this.created,
        model: this.model,
        choices,
        ...(this.usage ? { usage: this.usage } : {}),
      },
      promptTokenIds: this.promptTokenIds,
      completionTokenIds: anyTokens ? ordered.map(([, c]) => c.tokenIds) : undefined,
      completionLogprobs: anyLogprobs ? ordered.map(([, c]) => c.logprobs) : undefined,
      local,
    };
  }
}
