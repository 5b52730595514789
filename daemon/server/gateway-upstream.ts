/**
 * Upstream backend: forwards calls unchanged (tools, tool_calls, extra params) to an OpenAI-compatible
 * server (OpenAI, vLLM, Ollama, llama.cpp) with the `openai` client, and picks up token ids and
 * log-probs when the server returns them (vLLM: `return_token_ids`, `logprobs`).
 */
import OpenAI from 'openai';
import type { LlmResource } from '../../protocol/store.js';
import { nodeHttpFetch } from './gateway-fetch.js';
import { type Backend, type CallRequest, type CallResult, GatewayError, StreamAssembler } from './gateway-backend.js';

function tokenData(response: Record<string, unknown>): Pick<CallResult, 'promptTokenIds' | 'completionTokenIds' | 'completionLogprobs'> {
  const choices = (response.choices as Record<string, unknown>[] | undefined) ?? [];
  const ids = choices.map((c) => c.token_ids as number[] | undefined);
  const lps = choices.map((c) => {
    const lp = c.logprobs as { content?: { logprob: number }[]; token_logprobs?: number[] } | null | undefined;
    return lp?.content ? lp.content.map((x) => x.logprob) : lp?.token_logprobs;
  });
  return {
    promptTokenIds: Array.isArray(response.prompt_token_ids) ? (response.prompt_token_ids as number[]) : undefined,
    completionTokenIds: ids.every(Array.isArray) && ids.length ? (ids as number[][]) : undefined,
    completionLogprobs: lps.every(Array.isArray) && lps.length ? (lps as number[][]) : undefined,
  };
}

/**
 * The request body, plus vLLM's token-id and log-prob fields when the resource asks for them. A resource that asks
 * for token ids is a training run's sampler: its sampling parameters fill in what the agent's call leaves out (as
 * the local policy does), so rollouts sample at the training temperature.
 */
function withTokenIds(req: CallRequest): Record<string, unknown> {
  if (!req.resource.requestTokenIds) return req.body;
  const sp = req.resource.samplingParams ?? {};
  const fill: Record<string, unknown> = {};
  if (req.body.temperature === undefined && sp.temperature !== undefined) fill.temperature = sp.temperature;
  if (req.body.top_p === undefined && sp.topP !== undefined) fill.top_p = sp.topP;
  if (req.body.top_k === undefined && sp.topK !== undefined) fill.top_k = sp.topK;
  if (req.body.max_tokens === undefined && req.body.max_completion_tokens === undefined && sp.maxTokens !== undefined) fill.max_tokens = sp.maxTokens;
  return { ...fill, ...req.body, return_token_ids: true, logprobs: req.kind === 'chat' ? true : (req.body.logprobs ?? 1) };
}

function toGatewayError(err: unknown): unknown {
  if (err instanceof OpenAI.APIError && typeof err.status === 'number') {
    const body = err.error as { message?: string; code?: string; param?: string } | undefined;
    return new GatewayError(err.status, `upstream: ${body?.message ?? err.message}`, body?.code ?? 'upstream_error', body?.param ?? null);
  }
  if (err instanceof OpenAI.APIConnectionError)
    return new GatewayError(502, `upstream unreachable: ${err.message} (check the LLM resource's upstreamUrl)`, 'upstream_unreachable');
  return err;
}

/** The key variables an upstream resource may name when the daemon was not told otherwise (`agl serve --upstream` publishes it). */
export const DEFAULT_KEY_ENVS = ['OPENAI_API_KEY'];

export class UpstreamBackend implements Backend {
  private readonly clients = new Map<string, OpenAI>();
  private readonly keyEnvs: ReadonlySet<string>;

  /** `allowedKeyEnvs`: the only environment variables sent as an API key (whoever publishes resources names one). */
  constructor(allowedKeyEnvs: readonly string[] = DEFAULT_KEY_ENVS) {
    this.keyEnvs = new Set(allowedKeyEnvs);
  }

  private client(resource: LlmResource): OpenAI {
    const baseURL = resource.upstreamUrl;
    if (!baseURL)
      throw new GatewayError(500, `the LLM resource for model '${resource.model}' has backend 'upstream' but no upstreamUrl`, 'misconfigured_resource');
    if (resource.apiKeyEnv && !this.keyEnvs.has(resource.apiKeyEnv)) {
      throw new GatewayError(
        403,
        `the LLM resource for model '${resource.model}' names apiKeyEnv '${resource.apiKeyEnv}', which the daemon was not started to allow (agl serve --upstream-key-env ${resource.apiKeyEnv}); the call was not forwarded`,
        'api_key_env_not_allowed',
        'apiKeyEnv',
      );
    }
    const apiKey = (resource.apiKeyEnv ? process.env[resource.apiKeyEnv] : undefined) ?? 'none';
    const key = `${baseURL}\n${apiKey}`;
    let client = this.clients.get(key);
    if (!client) {
      // No retries here: the agent's own client decides whether to retry the call it made.
      client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 10 * 60_000, fetch: nodeHttpFetch });
      this.clients.set(key, client);
    }
    return client;
  }

  async call(req: CallRequest, signal: AbortSignal): Promise<CallResult> {
    const client = this.client(req.resource);
    const body = { ...withTokenIds(req), stream: false } as never;
    try {
      const response = (req.kind === 'chat'
        ? await client.chat.completions.create(body, { signal })
        : await client.completions.create(body, { signal })) as unknown as Record<string, unknown>;
      return { response, ...tokenData(response), local: false };
    } catch (err) {
      throw toGatewayError(err);
    }
  }

  async stream(req: CallRequest, signal: AbortSignal, onChunk: (chunk: Record<string, unknown>) => void): Promise<CallResult> {
    const client = this.client(req.resource);
    const wantsUsage = (req.body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
    // Always ask for usage so the span has it; pass the usage-only chunk on only if the agent asked.
    const body = { ...withTokenIds(req), stream: true, stream_options: { ...(req.body.stream_options as object | undefined), include_usage: true } } as never;
    const assembler = new StreamAssembler(req.kind);
    try {
      const stream = req.kind === 'chat' ? await client.chat.completions.create(body, { signal }) : await client.completions.create(body, { signal });
      for await (const chunk of stream as unknown as AsyncIterable<Record<string, unknown>>) {
        assembler.add(chunk);
        const usageOnly = Array.isArray(chunk.choices) && chunk.choices.length === 0 && chunk.usage;
        if (usageOnly && !wantsUsage) continue;
        if (!wantsUsage && chunk.usage) {
          const { usage: _drop, ...rest } = chunk;
          onChunk(rest);
        } else onChunk(chunk);
      }
    } catch (err) {
      throw toGatewayError(err);
    }
    return assembler.result(false);
  }
}
