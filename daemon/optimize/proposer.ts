/**
 * The Proposer: asks the optimizer's model (any OpenAI-compatible endpoint, through the real `openai` client) for a
 * reflection, a critique, an edit or a merge, and reads its answer. A call that fails (429, 5xx, a timeout, a dropped
 * connection, an empty or unusable answer) is tried again after a backoff (the server's retry-after when it gives
 * one), up to `retries` times; then the proposal is dropped with its reason and the run goes on. A call the endpoint
 * refuses outright (400, 401, 403, 404: a wrong key or model) stops the run: every later call would fail the same way.
 * Every call is stored (OptimizerCall: request, answer or error, attempts, tokens, cost) before its answer is used,
 * numbered in the run's deterministic order; a resumed run asking call `seq` with the same request gets the stored
 * answer without calling (asking something else is an error: the run cannot be continued the same way).
 */
import { createHash } from 'node:crypto';
import OpenAI from 'openai';
import type { OptimizerCall, OptimizerCallInput } from '../../protocol/prompts.js';
import type { ReadAnswer } from './meta.js';

export type OptimizerPurpose = OptimizerCall['purpose'];
type Message = OptimizerCall['messages'][number];

export interface ProposerOptions {
  /** The optimizer's endpoint (base URL ending in /v1), model and API key (its value, read from --optimizer-key-env). */
  url: string;
  model: string;
  apiKey: string;
  runId: string;
  /** Price per million prompt / completion tokens (cost is null without both). */
  priceIn: number | null;
  priceOut: number | null;
  /** Tries after the first. */
  retries: number;
  /** Per attempt. */
  timeoutMs: number;
  /** The first backoff; each next one doubles (a server's retry-after wins). */
  backoffMs: number;
  /** The run's stored calls (a resumed run's), by seq. */
  stored: readonly OptimizerCall[];
  /** Stores a call (before its answer is used). */
  record(call: OptimizerCallInput): Promise<unknown>;
  log?: (line: string) => void;
}

/** An answer read as its purpose needs it (with the whole answer: the reflection), or why the proposal is dropped. */
export type Answer = { text: string; raw: string; seq: number } | { dropped: string; seq: number };

/** Thrown when the endpoint refuses the request itself (a wrong key, model or URL): the run stops. */
export class OptimizerRefused extends Error {
  override name = 'OptimizerRefused';
}

const MAX_BACKOFF_MS = 60_000;

export class Proposer {
  private seq = 0;
  private readonly client: OpenAI;
  private readonly stored: Map<number, OptimizerCall>;
  /** Calls made or replayed, and their tokens and cost (the run's summary). */
  readonly totals = { calls: 0, promptTokens: 0, completionTokens: 0, cost: 0 };

  constructor(private readonly o: ProposerOptions) {
    this.client = new OpenAI({ baseURL: o.url, apiKey: o.apiKey || 'none', maxRetries: 0, timeout: o.timeoutMs });
    this.stored = new Map(o.stored.map((c) => [c.seq, c]));
  }

  /** Asks one thing (a user message), reads the answer with `read`; a stored call of this seq answers instead. */
  async ask(purpose: OptimizerPurpose, content: string, read: (answer: string) => ReadAnswer): Promise<Answer> {
    const seq = this.seq++;
    const messages: Message[] = [{ role: 'user', content }];
    const requestHash = createHash('sha256')
      .update(JSON.stringify({ model: this.o.model, messages }))
      .digest('hex');
    const before = this.stored.get(seq);
    const call = before ? this.replayed(before, requestHash) : await this.call(seq, purpose, messages, requestHash, read);
    this.count(call);
    if (call.response === null) return { dropped: call.error ?? 'the optimizer gave no answer', seq };
    const got = read(call.response);
    return 'text' in got ? { text: got.text, raw: call.response, seq } : { dropped: got.unusable, seq };
  }

  private replayed(call: OptimizerCall, requestHash: string): OptimizerCall {
    if (call.requestHash !== requestHash)
      throw new Error(
        `optimizer call ${call.seq} of run ${this.o.runId} was asked something else before (other meta-prompts, model or task files?): ` +
          'a resumed run must ask what the run asked; start a new run instead',
      );
    return call;
  }

  private count(call: OptimizerCallInput): void {
    const t = this.totals;
    t.calls++;
    t.promptTokens += call.promptTokens ?? 0;
    t.completionTokens += call.completionTokens ?? 0;
    t.cost += call.cost ?? 0;
  }

  /** The call, tried until an answer reads or the tries run out; stored either way. */
  private async call(
    seq: number,
    purpose: OptimizerPurpose,
    messages: Message[],
    requestHash: string,
    read: (a: string) => ReadAnswer,
  ): Promise<OptimizerCall> {
    const started = Date.now();
    const tokens = { prompt: 0, completion: 0 };
    let response: string | null = null;
    let error: string | undefined;
    let attempts = 0;
    for (;;) {
      attempts++;
      const tried = await this.attempt(messages, tokens);
      if ('answer' in tried) {
        const got = read(tried.answer);
        if ('text' in got) {
          response = tried.answer;
          break;
        }
        error = `unusable answer: ${got.unusable}`;
      } else error = tried.error;
      if (attempts > this.o.retries) break;
      const wait = Math.min(
        MAX_BACKOFF_MS,
        'retryAfterMs' in tried && tried.retryAfterMs !== null ? tried.retryAfterMs : this.o.backoffMs * 2 ** (attempts - 1),
      );
      this.o.log?.(`optimizer call ${seq} (${purpose}): ${error}; trying again in ${(wait / 1000).toFixed(1)}s`);
      await new Promise((r) => setTimeout(r, wait));
    }
    const failed = response === null ? `${error} (after ${attempts} attempt${attempts > 1 ? 's' : ''})` : null;
    const { priceIn, priceOut } = this.o;
    const record: OptimizerCall = {
      runId: this.o.runId,
      seq,
      purpose,
      model: this.o.model,
      requestHash,
      messages,
      response,
      error: failed,
      attempts,
      promptTokens: tokens.prompt,
      completionTokens: tokens.completion,
      cost: priceIn !== null && priceOut !== null ? (tokens.prompt * priceIn + tokens.completion * priceOut) / 1e6 : null,
      ms: Date.now() - started,
      createdAt: Date.now(),
    };
    const { createdAt: _createdAt, ...input } = record;
    await this.o.record(input);
    return record;
  }

  /** One request: the answer, or why it failed (and when the server asks to come back). */
  private async attempt(
    messages: Message[],
    tokens: { prompt: number; completion: number },
  ): Promise<{ answer: string } | { error: string; retryAfterMs: number | null }> {
    try {
      const res = await this.client.chat.completions.create({ model: this.o.model, messages });
      tokens.prompt += res.usage?.prompt_tokens ?? 0;
      tokens.completion += res.usage?.completion_tokens ?? 0;
      const choice = res.choices?.[0];
      const answer = choice?.message?.content ?? '';
      if (!answer.trim()) return { error: 'empty answer', retryAfterMs: null };
      if (choice?.finish_reason === 'length') return { error: 'the answer was cut off at the token limit', retryAfterMs: null };
      return { answer };
    } catch (e) {
      if (e instanceof OpenAI.APIConnectionTimeoutError) return { error: `timed out after ${this.o.timeoutMs / 1000}s`, retryAfterMs: null };
      if (e instanceof OpenAI.APIConnectionError) return { error: `connection failed: ${e.message}`, retryAfterMs: null };
      if (e instanceof OpenAI.APIError && e.status !== undefined && [400, 401, 403, 404, 422].includes(e.status))
        throw new OptimizerRefused(
          `the optimizer's endpoint ${this.o.url} refused the request (${e.status}: ${e.message}): check --optimizer-url, --optimizer-model and the key in --optimizer-key-env`,
        );
      if (e instanceof OpenAI.APIError) return { error: `${e.status ?? 'error'}: ${e.message}`, retryAfterMs: retryAfter(e.headers) };
      return { error: (e as Error).message, retryAfterMs: null };
    }
  }
}

/** The server's `retry-after-ms` or `retry-after` (seconds or an HTTP date), in ms; null without one. */
function retryAfter(headers: Headers | undefined): number | null {
  const ms = Number(headers?.get?.('retry-after-ms'));
  if (Number.isFinite(ms) && ms >= 0 && headers?.get?.('retry-after-ms')) return ms;
  const v = headers?.get?.('retry-after');
  if (!v) return null;
  const s = Number(v);
  if (Number.isFinite(s)) return Math.max(0, s * 1000);
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : null;
}
