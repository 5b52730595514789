/**
 * The `LLM` resource an agent receives: an OpenAI-compatible base URL tied to its attempt (calls
 * through it are recorded and, in training, served by the policy being trained), the model name and
 * sampling params. Point any OpenAI client at it:
 *   new OpenAI({ baseURL: llm.baseUrl, apiKey: llm.apiKey })
 *   new ChatOpenAI({ model: llm.model, apiKey: llm.apiKey, configuration: { baseURL: llm.baseUrl } })
 */
import type { SamplingParams } from '../protocol/store.js';
import { HEADERS } from '../protocol/spans.js';
import { currentAgentName } from './context.js';

export interface LLMInit {
  baseUrl: string;
  model: string;
  samplingParams?: SamplingParams;
  apiKey?: string;
}

export class LLM {
  /** Per-attempt OpenAI base URL (ends with /v1). */
  readonly baseUrl: string;
  readonly model: string;
  readonly samplingParams: SamplingParams;
  /** Any string works on the per-attempt URL; kept for clients that insist on a key. */
  readonly apiKey: string;

  constructor(init: LLMInit) {
    this.baseUrl = init.baseUrl;
    this.model = init.model;
    this.samplingParams = init.samplingParams ?? {};
    this.apiKey = init.apiKey ?? 'agl';
  }

  /** Python-style alias (`llm.base_url`), so agents ported from agent-lightning read naturally. */
  get base_url(): string {
    return this.baseUrl;
  }

  /** The sampling params as OpenAI request fields, to spread into a request. */
  get openaiParams(): Record<string, unknown> {
    const p = this.samplingParams;
    return {
      ...(p.temperature !== undefined ? { temperature: p.temperature } : {}),
      ...(p.topP !== undefined ? { top_p: p.topP } : {}),
      ...(p.maxTokens !== undefined ? { max_tokens: p.maxTokens } : {}),
      ...(p.stop !== undefined ? { stop: p.stop } : {}),
      ...(p.seed !== undefined ? { seed: p.seed } : {}),
    };
  }

  toJSON(): LLMInit {
    return { baseUrl: this.baseUrl, model: this.model, samplingParams: this.samplingParams, apiKey: this.apiKey };
  }
}

/**
 * A fetch for an OpenAI client that names each call's role (header x-agl-agent, from the innermost
 * `operation(..., { agentName })`), outside rollouts too: what a daemon serving one policy per role needs to pick the
 * policy (`agl serve --model <checkpoint of a run with policies:>`). Inside a rollout the runner names the role already.
 *   new OpenAI({ baseURL, apiKey, fetch: roleFetch() })
 *   new ChatOpenAI({ model, apiKey, configuration: { baseURL, fetch: roleFetch() } })
 */
export function roleFetch(inner?: typeof fetch): typeof fetch {
  return function fetchWithRole(input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) {
    const send = inner ?? globalThis.fetch;
    const role = currentAgentName();
    if (!role) return send(input, init);
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    if (!headers.has(HEADERS.agent)) headers.set(HEADERS.agent, role);
    return send(input, { ...init, headers });
  } as typeof fetch;
}
