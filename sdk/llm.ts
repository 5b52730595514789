/**
 * The `LLM` resource an agent receives: an OpenAI-compatible base URL tied to its attempt (calls
 * through it are recorded and, in training, served by the policy being trained), the model name and
 * sampling params. Point any OpenAI client at it:
 *   new OpenAI({ baseURL: llm.baseUrl, apiKey: llm.apiKey })
 *   new ChatOpenAI({ model: llm.model, apiKey: llm.apiKey, configuration: { baseURL: llm.baseUrl } })
 */
import type { SamplingParams } from '../protocol/store.js';

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
