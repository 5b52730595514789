/**
 * One chat call to a model the daemon asks itself (an LLM judge, prompt optimization's optimizer): any
 * OpenAI-compatible endpoint through the real `openai` client, never through the gateway (these calls are nobody's
 * trajectory). A call that fails (429, 5xx, a timeout, a dropped connection) or whose answer the caller cannot use (empty,
 * cut off at the token limit, or unreadable by the caller's `read`) is tried again after a backoff (the server's
 * retry-after when it gives one, else `backoffMs` doubling), up to `retries` times; then it comes back failed with the
 * last reason. A request the endpoint refuses outright (400, 401, 403, 404, 422: a wrong key, model or URL) throws
 * ModelRefused at once: every later call would fail the same way. Every call reports its tries, tokens (all tries
 * together), cost (with both prices) and time; what is stored, and where, is the caller's.
 */
import OpenAI from 'openai';

export interface ChatCallerOptions {
  /** The endpoint (base URL ending in /v1), the model and the API key (its value; '' for none). */
  url: string;
  model: string;
  apiKey: string;
  /** Price per million prompt / completion tokens (cost is null without both). */
  priceIn: number | null;
  priceOut: number | null;
  /** Tries after the first. */
  retries: number;
  /** Per try. */
  timeoutMs: number;
  /** The first backoff; each next one doubles (a server's retry-after wins). */
  backoffMs: number;
  temperature?: number;
  maxTokens?: number | null;
  /** What the flags that set these are called, for the refusal's fix (e.g. `--judge-url, --judge-model, --judge-key-env`). */
  settingsSaid: string;
  log?: (line: string) => void;
  signal?: AbortSignal;
}

export type ChatMessage = { role: 'system' | 'user' | 'assistant'; content: string };

/** What `read` made of an answer: the value the caller wants, or why the answer is unusable (then it is tried again). */
export type ReadAnswer<T> = { value: T } | { unusable: string };

/** A call's outcome: the value read from the answer, or why it failed after its tries; and what it took. */
export interface ChatCallResult<T> {
  value: T | null;
  /** The last answer's text (also an unusable one), null when none came. */
  answer: string | null;
  /** Why the call failed after its tries (null when it answered usably), and what kind of failure the last try's was. */
  error: string | null;
  failure: CallFailure | null;
  attempts: number;
  promptTokens: number;
  completionTokens: number;
  cost: number | null;
  ms: number;
}

/** A try's failure: it timed out, the request failed (429, 5xx, a dropped connection), or the answer was unusable (empty, cut off, unreadable). */
export type CallFailure = 'timeout' | 'error' | 'unusable';

/** Thrown when the endpoint refuses the request itself (a wrong key, model or URL). */
export class ModelRefused extends Error {
  override name = 'ModelRefused';
}

const MAX_BACKOFF_MS = 60_000;
const REFUSED = [400, 401, 403, 404, 422];

type Tried = { answer: string } | { error: string; retryAfterMs: number | null; failure: CallFailure };

export class ChatCaller {
  private readonly client: OpenAI;
  /** The tries in flight: the caller's signal, when it aborts, aborts each (one listener on it for the caller's life). */
  private readonly inFlight = new Set<AbortController>();

  constructor(private readonly o: ChatCallerOptions) {
    this.client = new OpenAI({ baseURL: o.url, apiKey: o.apiKey || 'none', maxRetries: 0, timeout: o.timeoutMs });
    const outer = o.signal;
    outer?.addEventListener('abort', () => this.inFlight.forEach((c) => c.abort(outer.reason)), { once: true });
  }

  get model(): string {
    return this.o.model;
  }

  /** The cost of these tokens at the caller's prices; null without both prices. */
  costOf(promptTokens: number, completionTokens: number): number | null {
    const { priceIn, priceOut } = this.o;
    return priceIn !== null && priceOut !== null ? (promptTokens * priceIn + completionTokens * priceOut) / 1e6 : null;
  }

  /** Asks `messages`, reads the answer with `read`, tries again on a failure or an unusable answer (`label` names the call in the log). */
  async call<T>(messages: ChatMessage[], read: (answer: string) => ReadAnswer<T>, label: string): Promise<ChatCallResult<T>> {
    const started = Date.now();
    const tokens = { prompt: 0, completion: 0 };
    let answer: string | null = null;
    for (let attempts = 1; ; attempts++) {
      const tried = await this.attempt(messages, tokens);
      let error: string, failure: CallFailure;
      if ('answer' in tried) {
        answer = tried.answer;
        const got = read(tried.answer);
        if ('value' in got) return this.result(got.value, answer, null, null, attempts, tokens, started);
        [error, failure] = [`unusable answer: ${got.unusable}`, 'unusable'];
      } else [error, failure] = [tried.error, tried.failure];
      if (attempts > this.o.retries || this.o.signal?.aborted) {
        const failed = `${error} (after ${attempts} tr${attempts > 1 ? 'ies' : 'y'})`;
        return this.result<T>(null, answer, failed, failure, attempts, tokens, started);
      }
      const wait = Math.min(
        MAX_BACKOFF_MS,
        'retryAfterMs' in tried && tried.retryAfterMs !== null ? tried.retryAfterMs : this.o.backoffMs * 2 ** (attempts - 1),
      );
      this.o.log?.(`${label}: ${error}; trying again in ${(wait / 1000).toFixed(1)}s`);
      await new Promise((r) => setTimeout(r, wait));
    }
  }

  private result<T>(
    value: T | null,
    answer: string | null,
    error: string | null,
    failure: CallFailure | null,
    attempts: number,
    tokens: { prompt: number; completion: number },
    started: number,
  ) {
    return {
      value,
      answer,
      error,
      failure,
      attempts,
      promptTokens: tokens.prompt,
      completionTokens: tokens.completion,
      cost: this.costOf(tokens.prompt, tokens.completion),
      ms: Date.now() - started,
    } satisfies ChatCallResult<T>;
  }

  /**
   * One request: the answer, or why it failed (and when the server asks to come back). The client gets a signal of
   * this try's own (in `inFlight` while it runs), aborted when the caller's is: the openai client adds an abort listener
   * to the signal it is given and removes it only when it fires, so handing it the caller's long-lived signal (a whole
   * training run's) would leave one listener per request on it (Node's MaxListenersExceededWarning past 10).
   */
  private async attempt(messages: ChatMessage[], tokens: { prompt: number; completion: number }): Promise<Tried> {
    const own = new AbortController();
    if (this.o.signal?.aborted) own.abort(this.o.signal.reason);
    this.inFlight.add(own);
    try {
      const { temperature, maxTokens } = this.o;
      const res = await this.client.chat.completions.create(
        {
          model: this.o.model,
          messages,
          ...(temperature !== undefined ? { temperature } : {}),
          ...(maxTokens ? { max_tokens: maxTokens } : {}),
        },
        { signal: own.signal },
      );
      tokens.prompt += res.usage?.prompt_tokens ?? 0;
      tokens.completion += res.usage?.completion_tokens ?? 0;
      const choice = res.choices?.[0];
      const answer = choice?.message?.content ?? '';
      if (!answer.trim()) return { error: 'empty answer', retryAfterMs: null, failure: 'unusable' };
      if (choice?.finish_reason === 'length') return { error: 'the answer was cut off at the token limit', retryAfterMs: null, failure: 'unusable' };
      return { answer };
    } catch (e) {
      if (e instanceof OpenAI.APIConnectionTimeoutError)
        return { error: `timed out after ${this.o.timeoutMs / 1000}s`, retryAfterMs: null, failure: 'timeout' };
      if (e instanceof OpenAI.APIConnectionError) return { error: `connection failed: ${e.message}`, retryAfterMs: null, failure: 'error' };
      if (e instanceof OpenAI.APIError && e.status !== undefined && REFUSED.includes(e.status))
        throw new ModelRefused(`${this.o.url} refused the request (${e.status}: ${e.message}): check ${this.o.settingsSaid}`);
      if (e instanceof OpenAI.APIError) {
        const said = e.message.startsWith(String(e.status)) ? e.message : `${e.status ?? 'error'}: ${e.message}`;
        return { error: said, retryAfterMs: retryAfter(e.headers), failure: 'error' };
      }
      return { error: (e as Error).message, retryAfterMs: null, failure: 'error' };
    } finally {
      this.inFlight.delete(own);
    }
  }
}

/** The server's `retry-after-ms` or `retry-after` (seconds or an HTTP date), in ms; null without one. */
export function retryAfter(headers: Headers | undefined): number | null {
  const msText = headers?.get?.('retry-after-ms');
  const ms = Number(msText);
  if (msText && Number.isFinite(ms) && ms >= 0) return ms;
  const v = headers?.get?.('retry-after');
  if (!v) return null;
  const s = Number(v);
  if (Number.isFinite(s)) return Math.max(0, s * 1000);
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : null;
}
