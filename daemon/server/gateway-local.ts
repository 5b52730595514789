/**
 * Local backend: serves chat and text completions from the daemon's policy model. Chats are rendered
 * with the tokenizer's chat template (tools included), concurrent requests are batched into one
 * generate() (gateway-batching.ts), tool calls are parsed from the output, and the exact prompt /
 * completion token ids and log-probs are returned for the span.
 */
import { randomBytes } from 'node:crypto';
import type { ChatMessage, Generation, PolicyModel, ToolSpec } from '../model/policy-contract.js';
import { type Backend, type CallRequest, type CallResult, GatewayError, type OpenAiBody } from './gateway-backend.js';
import { type BatchOptions, GenerateBatcher } from './gateway-batching.js';
import { TOOL_CALL_OPEN, parseToolCalls, safeStreamLength } from './gateway-toolcalls.js';

export type PolicyProvider = (model: string) => PolicyModel | null | undefined | Promise<PolicyModel | null | undefined>;

type Chunk = Record<string, unknown>;

function textOf(content: unknown): string | null {
  if (content === null || content === undefined) return null;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p === 'object' && 'text' in p ? String((p as { text: unknown }).text) : '')).join('');
  return String(content);
}

function chatMessages(body: OpenAiBody): ChatMessage[] {
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    throw new GatewayError(400, "'messages' must be a non-empty array of chat messages", 'invalid_request_error', 'messages');
  return (body.messages as Record<string, unknown>[]).map((m, i) => {
    const role = m.role === 'developer' ? 'system' : m.role;
    if (!['system', 'user', 'assistant', 'tool'].includes(role as string))
      throw new GatewayError(
        400,
        `messages[${i}].role '${String(m.role)}' is not one of system, developer, user, assistant, tool`,
        'invalid_request_error',
        `messages[${i}].role`,
      );
    return { role, content: textOf(m.content), name: m.name, tool_calls: m.tool_calls, tool_call_id: m.tool_call_id } as ChatMessage;
  });
}

function stopList(stop: unknown): string[] | undefined {
  if (typeof stop === 'string') return [stop];
  if (Array.isArray(stop) && stop.length) return stop.map(String);
  return undefined;
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

export class LocalBackend implements Backend {
  private readonly batchers = new WeakMap<PolicyModel, GenerateBatcher>();

  constructor(private readonly getPolicy: PolicyProvider) {}

  /** The batcher of a loaded model (exposed for benchmarks and tests that check batching happened). */
  batcherFor(model: PolicyModel): GenerateBatcher {
    let b = this.batchers.get(model);
    if (!b) {
      b = new GenerateBatcher(model);
      this.batchers.set(model, b);
    }
    return b;
  }

  private async policy(req: CallRequest): Promise<PolicyModel> {
    const model = await this.getPolicy(req.resource.model);
    if (!model)
      throw new GatewayError(
        503,
        `no local policy model '${req.resource.model}' is loaded in the daemon (start it with a model, or publish an upstream LLM resource)`,
        'model_not_loaded',
      );
    return model;
  }

  private prepare(req: CallRequest, model: PolicyModel) {
    const { body } = req;
    const sp = req.resource.samplingParams ?? {};
    const tok = model.tokenizer;
    let prompts: number[][];
    let tools: ToolSpec[] | undefined;
    if (req.kind === 'chat') {
      tools = Array.isArray(body.tools) && body.tools.length && body.tool_choice !== 'none' ? (body.tools as ToolSpec[]) : undefined;
      prompts = [tok.encode(tok.applyChatTemplate(chatMessages(body), { addGenerationPrompt: true, tools }))];
    } else {
      const p = body.prompt;
      if (typeof p === 'string') prompts = [tok.encode(p)];
      else if (Array.isArray(p) && p.length && p.every((x) => typeof x === 'string')) prompts = (p as string[]).map((x) => tok.encode(x));
      else if (Array.isArray(p) && p.length && p.every((x) => Number.isInteger(x))) prompts = [p as number[]];
      else if (Array.isArray(p) && p.length && p.every((x) => Array.isArray(x))) prompts = p as number[][];
      else throw new GatewayError(400, "'prompt' must be a string, an array of strings, or token ids", 'invalid_request_error', 'prompt');
    }
    const n = num(body.n) ?? 1;
    if (!Number.isInteger(n) || n < 1 || n > 64) throw new GatewayError(400, "'n' must be an integer from 1 to 64", 'invalid_request_error', 'n');
    const longest = Math.max(...prompts.map((p) => p.length));
    const room = model.contextLength - longest;
    if (room < 1)
      throw new GatewayError(
        400,
        `the prompt has ${longest} tokens; the model's context is ${model.contextLength} tokens`,
        'context_length_exceeded',
        'messages',
      );
    const maxTokens = Math.min(num(body.max_completion_tokens) ?? num(body.max_tokens) ?? sp.maxTokens ?? 256, room);
    const stop = stopList(body.stop) ?? sp.stop;
    const opts: BatchOptions = {
      maxTokens,
      temperature: num(body.temperature) ?? sp.temperature ?? 1,
      topP: num(body.top_p) ?? sp.topP,
      topK: num(body.top_k) ?? sp.topK,
      seed: num(body.seed) ?? sp.seed,
      ...(stop ? { stop } : {}),
    };
    // One job per (prompt, sample): choice index = prompt * n + sample, as OpenAI orders them.
    const jobs = prompts.flatMap((ids) => Array.from({ length: n }, () => ids));
    return { jobs, opts, tools, prompts, stop: stop ?? [] };
  }

  private finish(
    req: CallRequest,
    model: PolicyModel,
    prompts: number[][],
    jobs: number[][],
    gens: Generation[],
    id: string,
    created: number,
    toolsOn: boolean,
  ): CallResult {
    const { body } = req;
    const tok = model.tokenizer;
    const choices = gens.map((g, index) => {
      const logprobs = body.logprobs
        ? { content: g.tokenIds.map((t, i) => ({ token: tok.decode([t]), logprob: g.logprobs[i], bytes: null, top_logprobs: [] })) }
        : null;
      const extra = body.return_token_ids ? { token_ids: g.tokenIds } : {};
      if (req.kind === 'completion')
        return {
          index,
          text: g.text,
          finish_reason: g.finishReason,
          logprobs: body.logprobs ? { tokens: g.tokenIds.map((t) => tok.decode([t])), token_logprobs: g.logprobs } : null,
          ...extra,
        };
      const parsed = toolsOn ? parseToolCalls(g.text) : { content: g.text, toolCalls: [] };
      const message = { role: 'assistant', content: parsed.content, ...(parsed.toolCalls.length ? { tool_calls: parsed.toolCalls } : {}) };
      return { index, message, finish_reason: parsed.toolCalls.length ? 'tool_calls' : g.finishReason, logprobs, ...extra };
    });
    const promptTokens = jobs.reduce((s, p, i) => s + (i % (jobs.length / prompts.length) === 0 ? p.length : 0), 0);
    const completionTokens = gens.reduce((s, g) => s + g.tokenIds.length, 0);
    const response = {
      id,
      object: req.kind === 'chat' ? 'chat.completion' : 'text_completion',
      created,
      model: req.resource.model,
      choices,
      usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
      ...(body.return_token_ids ? { prompt_token_ids: prompts[0] } : {}),
    };
    return {
      response,
      promptTokenIds: prompts[0],
      completionTokenIds: gens.map((g) => g.tokenIds),
      completionLogprobs: gens.map((g) => g.logprobs),
      local: true,
    };
  }

  async call(req: CallRequest): Promise<CallResult> {
    const model = await this.policy(req);
    const { jobs, opts, tools, prompts } = this.prepare(req, model);
    const batcher = this.batcherFor(model);
    const gens = await Promise.all(jobs.map((ids) => batcher.submit(ids, opts)));
    const id = `${req.kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomBytes(12).toString('hex')}`;
    return this.finish(req, model, prompts, jobs, gens, id, Math.floor(Date.now() / 1000), !!tools);
  }

  async stream(req: CallRequest, _signal: AbortSignal, onChunk: (chunk: Chunk) => void): Promise<CallResult> {
    const model = await this.policy(req);
    const { jobs, opts, tools, prompts, stop } = this.prepare(req, model);
    const tok = model.tokenizer;
    const chat = req.kind === 'chat';
    const id = `${chat ? 'chatcmpl' : 'cmpl'}-${randomBytes(12).toString('hex')}`;
    const created = Math.floor(Date.now() / 1000);
    const base = { id, object: chat ? 'chat.completion.chunk' : 'text_completion', created, model: req.resource.model };
    const holdBack = tools ? [TOOL_CALL_OPEN, ...stop] : stop;
    const sent = jobs.map(() => 0);
    const ids: number[][] = jobs.map(() => []);
    const emitText = (index: number, text: string) => {
      if (!text) return;
      onChunk({
        ...base,
        choices: [chat ? { index, delta: { content: text }, finish_reason: null, logprobs: null } : { index, text, finish_reason: null, logprobs: null }],
      });
    };
    if (chat)
      jobs.forEach((_, index) => onChunk({ ...base, choices: [{ index, delta: { role: 'assistant', content: '' }, finish_reason: null, logprobs: null }] }));
    const batcher = this.batcherFor(model);
    const gens = await Promise.all(
      jobs.map((promptIds, index) =>
        batcher.submit(promptIds, opts, (tokenId) => {
          ids[index].push(tokenId);
          const text = tok.decode(ids[index]);
          const safe = safeStreamLength(text, holdBack);
          if (safe > sent[index]) {
            emitText(index, text.slice(sent[index], safe));
            sent[index] = safe;
          }
        }),
      ),
    );
    const result = this.finish(req, model, prompts, jobs, gens, id, created, !!tools);
    const choices = result.response.choices as Record<string, unknown>[];
    choices.forEach((c, index) => {
      const finalText = chat ? ((c.message as { content: string | null }).content ?? '') : (c.text as string);
      emitText(index, finalText.slice(sent[index]));
      const toolCalls = chat ? (c.message as { tool_calls?: unknown[] }).tool_calls : undefined;
      if (toolCalls?.length)
        onChunk({
          ...base,
          choices: [{ index, delta: { tool_calls: toolCalls.map((t, i) => ({ index: i, ...(t as object) })) }, finish_reason: null, logprobs: null }],
        });
      onChunk({
        ...base,
        choices: [
          chat ? { index, delta: {}, finish_reason: c.finish_reason, logprobs: null } : { index, text: '', finish_reason: c.finish_reason, logprobs: null },
        ],
      });
    });
    if ((req.body.stream_options as { include_usage?: boolean } | undefined)?.include_usage) onChunk({ ...base, choices: [], usage: result.response.usage });
    return result;
  }
}
