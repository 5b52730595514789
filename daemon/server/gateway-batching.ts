/**
 * Dynamic batching for the local policy: concurrent requests (the runner's workers calling the
 * gateway at once) are merged into one `generate()` call. A batch starts after a short window (a few ms,
 * small next to generation) so requests arriving together share it; those that arrive while the model is
 * busy (generation can hold the event loop) go together in the next batch, grouped by sampling options
 * (a batch shares temperature / top-p / top-k / stop / seed). Each request keeps its own max_tokens:
 * the batch generates up to the largest and each result is cut back to its own limit.
 */
import type { GenerateOptions, Generation, PolicyModel } from '../model/api.js';

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

  constructor(private readonly model: PolicyModel, private readonly maxBatch = 64, private readonly windowMs = 3) {}

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
        // Let requests already on their way (sockets readable, handlers mid-await) join this batch.
        await new Promise((r) => setTimeout(r, this.windowMs));
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
    if (this.batchSizes.length > 10_000) this.batchSizes.splice(0, 5_000);
    const maxTokens = Math.max(...batch.map((j) => j.opts.maxTokens));
    const emitted = batch.map(() => 0);
    try {
      const gens = await this.model.generate(batch.map((j) => j.promptIds), {
        ...batch[0].opts,
        maxTokens,
        onToken: (i, tokenId, logprob) => {
          const job = batch[i];
          if (job?.onToken && emitted[i] < job.opts.maxTokens) { emitted[i]++; job.onToken(tokenId, logprob); }
        },
      });
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
