/**
 * A span sink that batches: spans are collected and sent together after a short delay or when the
 * batch is full, so an agent emitting thousands of spans makes few requests. Delivery failures are
 * kept and thrown from flush(), so the runner can fail the attempt instead of losing data silently.
 * Spans are batched once on their way to the store: in the agent's process (the runner's JS worker, or
 * an agent using the SDK directly); the runner forwards each of those batches as it is (`forward`).
 */
import type { SpanInput } from '../../protocol/store.js';
import type { SpanSink } from '../context.js';

export class BatchingSink implements SpanSink {
  private buffer: SpanInput[] = [];
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> = Promise.resolve();
  private failure: Error | null = null;

  constructor(
    private readonly send: (spans: SpanInput[]) => Promise<void>,
    private readonly opts: { maxBatch?: number; delayMs?: number } = {},
  ) {}

  add(span: SpanInput): void {
    this.buffer.push(span);
    if (this.buffer.length >= (this.opts.maxBatch ?? 500)) this.ship();
    else if (!this.timer) {
      this.timer = setTimeout(() => this.ship(), this.opts.delayMs ?? 20);
      this.timer.unref?.();
    }
  }

  /** Sends a batch made upstream now, in order after what was sent before (no second wait for more spans). */
  forward(spans: SpanInput[]): void {
    this.buffer.push(...spans);
    this.ship();
  }

  private ship(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.buffer.length === 0) return;
    const batch = this.buffer;
    this.buffer = [];
    this.inFlight = this.inFlight
      .then(() => this.send(batch))
      .catch((err: Error) => {
        this.failure ??= err;
      });
  }

  async flush(): Promise<void> {
    this.ship();
    await this.inFlight;
    if (this.failure) {
      const f = this.failure;
      this.failure = null;
      throw f;
    }
  }
}
