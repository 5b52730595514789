/**
 * The Proposer: asks the optimizer's model (any OpenAI-compatible endpoint, through daemon/llm-calls' ChatCaller and
 * so the real `openai` client, as the judge asks its model) for a reflection, a critique, an edit or a merge, and reads
 * its answer. A call that fails (429, 5xx, a timeout, a dropped connection, an empty or unusable answer) is tried again
 * after a backoff (the server's retry-after when it gives one), up to `retries` times; then the proposal is dropped with
 * its reason and the run goes on. A call the endpoint refuses outright (400, 401, 403, 404, 422: a wrong key or model)
 * stops the run: every later call would fail the same way.
 * Every call is stored (OptimizerCall: request, answer or error, attempts, tokens, cost) before its answer is used,
 * numbered in the run's deterministic order; a resumed run asking call `seq` with the same request gets the stored
 * answer without calling (asking something else is an error: the run cannot be continued the same way).
 */
import { createHash } from 'node:crypto';
import type { OptimizerCall, OptimizerCallInput } from '../../protocol/prompts.js';
import { ChatCaller, ModelRefused } from '../llm-calls/chat-caller.js';
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

export class Proposer {
  private seq = 0;
  private readonly caller: ChatCaller;
  private readonly stored: Map<number, OptimizerCall>;
  /** Calls made or replayed, and their tokens and cost (the run's summary). */
  readonly totals = { calls: 0, promptTokens: 0, completionTokens: 0, cost: 0 };

  constructor(private readonly o: ProposerOptions) {
    this.caller = new ChatCaller({ ...o, settingsSaid: '--optimizer-url, --optimizer-model and the key in --optimizer-key-env' });
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

  /** The call through the ChatCaller (tried until an answer reads or the tries run out), stored either way. */
  private async call(
    seq: number,
    purpose: OptimizerPurpose,
    messages: Message[],
    requestHash: string,
    read: (a: string) => ReadAnswer,
  ): Promise<OptimizerCall> {
    const got = await this.caller
      .call(
        messages,
        (answer) => {
          const r = read(answer);
          return 'text' in r ? { value: answer } : r;
        },
        `optimizer call ${seq} (${purpose})`,
      )
      .catch((e: unknown) => {
        throw e instanceof ModelRefused ? new OptimizerRefused(`the optimizer's endpoint ${e.message}`) : e;
      });
    const record: OptimizerCall = {
      runId: this.o.runId,
      seq,
      purpose,
      model: this.o.model,
      requestHash,
      messages,
      response: got.value,
      error: got.error,
      attempts: got.attempts,
      promptTokens: got.promptTokens,
      completionTokens: got.completionTokens,
      cost: got.cost,
      ms: got.ms,
      createdAt: Date.now(),
    };
    const { createdAt: _createdAt, ...input } = record;
    await this.o.record(input);
    return record;
  }
}
