/**
 * Dynamic batching for the local policy: concurrent requests (the runner's workers calling the
 * gateway at once) are merged into one `generate()` call. A batch starts after a short window (a few ms,
 * small next to generation) so requests arriving together share it; those that arrive while the model is
 * busy (generation can hold the event loop) go together in the next batch, grouped by sampling options
 * (a batch shares temperature / top-p / top-k / stop / seed). After a batch of k requests the next one
 * waits up to 50 ms for k to be queued again: runner workers call in waves (all answered together, all
 * asking again), and the first of a wave should not run alone. Each request keeps its own max_tokens:
 * the batch generates up to the largest and each result is cut back to its own limit.
 */
import type { GenerateOptions, Generation, PolicyModel } from '../model/policy-contract.js';

export type BatchOptions = Omit<GenerateOptions, 'onToken'>;

interface Job {
  promptIds: number[];
  opts: BatchOptions;
  onToken?: (tokenId: number, logprob: number) => void;
  resolve: (g: Generation) => void;
  reject: (e: unknown) => void;
}

function groupKey(o: BatchOptions): string {
  return JSON.stringify([o.temperature ?? null, o.topP ?? null, o.topK ?? null, o.stop ?? null, o.seed ?? null]);
}

export class GenerateBatcher {
  private readonly queue: Job[] = [];
  private busy = false;
  /** Sizes of the batches run so far (observability; the gateway benchmark reads it). */
  readonly batchSizes: number[] = [];

  private lastBatchSize = 1;

  constructor(
    private readonly model: PolicyModel,
    private readonly maxBatch = 64,
    private readonly windowMs = 3,
    private readonly waveWaitMs = 50,
  ) {}

  submit(promptIds: number[], opts: BatchOptions, onToken?: (tokenId: number, logprob: number) => void): Promise<Generation> {
    return new Promise((resolve, reject) => {
      this.queue.push({ promptIds, opts, onToken, resolve, reject });
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      while (this.queue.length > 0) {
        // Let requests already on their way (sockets readable, handlers mid-await) join this batch. When
        // the last batch was larger (workers calling in waves), wait a little longer for as many again.
        const expected = Math.min(this.maxBatch, this.lastBatchSize);
        const deadline = Date.now() + (expected > 1 ? this.waveWaitMs : this.windowMs);
        do await new Promise((r) => setTimeout(r, Math.min(this.windowMs, 2)));
        while (this.queue.length < expected && Date.now() < deadline);
        const key = groupKey(this.queue[0].opts);
        const batch: Job[] = [];
        for (let i = 0; i < this.queue.length && batch.length < this.maxBatch;) {
          if (groupKey(this.queue[i].opts) === key) batch.push(...this.queue.splice(i, 1));
          else i++;
        }
        await this.run(batch);
      }
    } finally {
      this.busy = false;
    }
  }

  private async run(batch: Job[]): Promise<void> {
    this.batchSizes.push(batch.length);
    this.lastBatchSize = batch.length;
    if (this.batchSizes.length > 10_000) this.batchSizes.splice(0, 5_000);
    const maxTokens = Math.max(...batch.map((j) => j.opts.maxTokens));
    const emitted = batch.map(() => 0);
    try {
      const gens = await this.model.generate(
        batch.map((j) => j.promptIds),
        {
          ...batch[0].opts,
          maxTokens,
          onToken: (i, tokenId, logprob) => {
            const job = batch[i];
            if (job?.onToken && emitted[i] < job.opts.maxTokens) {
              emitted[i]++;
              job.onToken(tokenId, logprob);
            }
          },
        },
      );
      gens.forEach((g, i) => batch[i].resolve(this.cut(g, batch[i].opts.maxTokens)));
    } catch (err) {
      for (const j of batch) j.reject(err);
    }
  }

  private cut(g: Generation, maxTokens: number): Generation {
    if (g.tokenIds.length <= maxTokens) return g;
    const tokenIds = g.tokenIds.slice(0, maxTokens);
    return { tokenIds, logprobs: g.logprobs.slice(0, maxTokens), text: this.model.tokenizer.decode(tokenIds), finishReason: 'length' };
  }
}
