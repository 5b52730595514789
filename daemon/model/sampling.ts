/**
 * Batched generation with a KV cache. Prompts are left-padded into one batch, prefilled once, then one
 * token per step for every unfinished row. Sampling (temperature, top-k, top-p) runs in JS on each row's
 * logits with a per-row seeded PRNG, so a row samples the same tokens alone or in any batch.
 */
import * as tf from '@tensorflow/tfjs';
import type { GenerateOptions, Generation, Tokenizer } from './policy-contract.js';
import { forward, lmHead, type LayerCache, type Params, type TransformerConfig } from './transformer.js';

/** mulberry32: small, fast, good enough for sampling; seeded per (seed, row). */
export function makeRng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
export function rowSeed(seed: number, row: number): number {
  return (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) + Math.imul(row + 1, 0xc2b2ae35)) >>> 0;
}

function logSoftmax(logits: Float32Array | number[]): Float64Array {
  let max = -Infinity;
  for (const x of logits) if (x > max) max = x;
  let sum = 0;
  for (const x of logits) sum += Math.exp(x - max);
  const lse = max + Math.log(sum);
  return Float64Array.from(logits, (x) => x - lse);
}

/** Picks the next token from one row of logits; returns it with its log-prob under the untempered model. */
export function sampleToken(
  logits: Float32Array,
  opts: Pick<GenerateOptions, 'temperature' | 'topK' | 'topP'>,
  rng: () => number,
): { token: number; logprob: number } {
  const logp = logSoftmax(logits);
  const temperature = opts.temperature ?? 1;
  let token = 0;
  if (temperature <= 0) {
    for (let i = 1; i < logits.length; i++) if (logits[i] > logits[token]) token = i;
    return { token, logprob: logp[token] };
  }
  // Candidates sorted by probability; top-k then top-p (nucleus) shrink them; sample from the rest.
  const topP = opts.topP ?? 1;
  const k = opts.topK && opts.topK > 0 ? Math.min(opts.topK, logits.length) : logits.length;
  let order: number[];
  if (k < logits.length && k <= 1024) order = topIndices(logits, k);
  else if (topP < 1) order = Array.from(logits.keys()).sort((a, b) => logits[b] - logits[a]);
  else order = Array.from(logits.keys()); // full distribution: no order needed
  const scaled = logSoftmax(order.map((i) => logits[i] / temperature));
  let probs = Array.from(scaled, Math.exp);
  if (topP < 1) {
    let cum = 0,
      keep = 0;
    while (keep < probs.length && cum < topP) cum += probs[keep++];
    probs = probs.slice(0, Math.max(1, keep));
    order = order.slice(0, probs.length);
  }
  const total = probs.reduce((a, b) => a + b, 0);
  let r = rng() * total;
  let pick = probs.length - 1;
  for (let i = 0; i < probs.length; i++) {
    r -= probs[i];
    if (r <= 0) {
      pick = i;
      break;
    }
  }
  token = order[pick];
  return { token, logprob: logp[token] };
}

/** Indices of the k largest logits, largest first (one pass with a small sorted buffer). */
function topIndices(logits: Float32Array, k: number): number[] {
  const idx: number[] = [];
  for (let i = 0; i < logits.length; i++) {
    if (idx.length === k && logits[i] <= logits[idx[k - 1]]) continue;
    let at = idx.length === k ? k - 1 : idx.length;
    if (idx.length < k) idx.push(i);
    while (at > 0 && logits[idx[at - 1]] < logits[i]) {
      idx[at] = idx[at - 1];
      at--;
    }
    idx[at] = i;
  }
  return idx;
}

export function leftPadBatch(prompts: number[][], padId = 0): { ids: number[][]; leftPad: number[] } {
  const L = Math.max(...prompts.map((p) => p.length));
  return { ids: prompts.map((p) => [...Array(L - p.length).fill(padId), ...p]), leftPad: prompts.map((p) => L - p.length) };
}

function disposeCache(cache: LayerCache[] | null): void {
  for (const l of cache ?? []) {
    l.k.dispose();
    l.v.dispose();
  }
}

/** What one prompt has generated so far. */
interface RowOutput {
  tokenIds: number[];
  logprobs: number[];
  finishReason: 'stop' | 'length';
  done: boolean;
}

/**
 * The running batch: rows[i] = which prompt the i-th row is, with its left padding; finished rows are dropped
 * from the batch (and the KV cache) once they are a quarter of it, so short answers stop costing compute.
 */
interface Batch {
  rows: number[];
  leftPad: number[];
  cache: LayerCache[] | null;
}

function checkPrompts(c: TransformerConfig, prompts: number[][]): number {
  prompts.forEach((p, i) => {
    if (p.length === 0) throw new Error(`prompt ${i} is empty: give at least one token`);
  });
  const longest = Math.max(...prompts.map((p) => p.length));
  if (longest >= c.contextLength) throw new Error(`prompt of ${longest} tokens does not fit the context of ${c.contextLength}`);
  return longest;
}

/** One forward step of the batch over `input`: the logits of each row's last position; the batch's cache grows by it. */
function stepLogits(c: TransformerConfig, P: Params, input: tf.Tensor2D, batch: Batch): tf.Tensor {
  const prev = batch.cache;
  const { logits, next } = (tf.tidy as unknown as <T>(f: () => T) => T)(() => {
    const r = forward(c, P, input, batch.leftPad, prev);
    const T = r.hidden.shape[1];
    const last = r.hidden.slice([0, T - 1, 0], [-1, 1, -1]).reshape([batch.rows.length, c.dModel]);
    for (const l of r.cache) {
      tf.keep(l.k);
      tf.keep(l.v);
    }
    return { logits: lmHead(c, P, last), next: r.cache };
  });
  disposeCache(prev);
  batch.cache = next;
  return logits;
}

/** What sampling a step needs besides the logits: the options, each prompt's PRNG, the end-of-sequence ids, the tokenizer (stop strings). */
interface Sampler {
  opts: GenerateOptions;
  rngs: (() => number)[];
  eos: Set<number>;
  tok: Tokenizer;
}

/** Samples each running row's next token from the step's logits (`data`, V per row) and marks the rows that end; returns the next input ids. */
function sampleRows(data: Float32Array, V: number, batch: Batch, out: RowOutput[], s: Sampler): number[] {
  const nextIds: number[] = [];
  for (const [i, b] of batch.rows.entries()) {
    const o = out[b];
    if (o.done) {
      nextIds.push(0);
      continue;
    }
    const { token, logprob } = sampleToken(data.subarray(i * V, (i + 1) * V), s.opts, s.rngs[b]);
    o.tokenIds.push(token);
    o.logprobs.push(logprob);
    s.opts.onToken?.(b, token, logprob);
    nextIds.push(token);
    if (s.eos.has(token)) {
      o.done = true;
      o.finishReason = 'stop';
      continue;
    }
    if (s.opts.stop?.length) {
      const text = s.tok.decode(o.tokenIds);
      if (s.opts.stop.some((x) => x && text.includes(x))) {
        o.done = true;
        o.finishReason = 'stop';
      }
    }
  }
  return nextIds;
}

/** The next step's input ids, the finished rows dropped from the batch once they are a quarter of it; null when every row finished. */
function nextInput(batch: Batch, out: RowOutput[], nextIds: number[]): number[] | null {
  const keep = batch.rows.map((b, i) => [b, i] as const).filter(([b]) => !out[b].done);
  if (keep.length === 0) return null;
  if (keep.length > batch.rows.length * 0.75) return nextIds;
  const idx = tf.tensor1d(
    keep.map(([, i]) => i),
    'int32',
  );
  const old = batch.cache!;
  batch.cache = old.map((l) => ({ k: tf.gather(l.k, idx), v: tf.gather(l.v, idx) }));
  disposeCache(old);
  idx.dispose();
  batch.leftPad = keep.map(([, i]) => batch.leftPad[i]);
  batch.rows = keep.map(([b]) => b);
  return keep.map(([, i]) => nextIds[i]);
}

/** A row's generation: its text decoded without a final end-of-sequence token and cut at the first stop string. */
function finished(o: RowOutput, s: Sampler): Generation {
  const ids = o.tokenIds.filter((t, i) => !(i === o.tokenIds.length - 1 && s.eos.has(t)));
  let text = s.tok.decode(ids);
  for (const stop of s.opts.stop ?? []) {
    const at = stop ? text.indexOf(stop) : -1;
    if (at >= 0) text = text.slice(0, at);
  }
  return { tokenIds: o.tokenIds, logprobs: o.logprobs, text, finishReason: o.finishReason };
}

export async function generate(
  c: TransformerConfig,
  P: Params,
  tok: Tokenizer,
  prompts: number[][],
  opts: GenerateOptions,
  rowOffset = 0,
): Promise<Generation[]> {
  if (prompts.length === 0) return [];
  const longest = checkPrompts(c, prompts);
  const maxNew = Math.min(opts.maxTokens, c.contextLength - longest);
  const seed = opts.seed ?? Math.floor(Math.random() * 2 ** 31);
  const sampler: Sampler = { opts, rngs: prompts.map((_, i) => makeRng(rowSeed(seed, rowOffset + i))), eos: new Set(tok.eosTokenIds), tok };
  const out: RowOutput[] = prompts.map(() => ({ tokenIds: [], logprobs: [], finishReason: 'length', done: false }));
  const padded = leftPadBatch(prompts);
  const batch: Batch = { rows: prompts.map((_, i) => i), leftPad: padded.leftPad, cache: null };
  let input = tf.tensor2d(padded.ids.flat(), [prompts.length, longest], 'int32');
  try {
    for (let step = 0; step < maxNew; step++) {
      const logits = stepLogits(c, P, input, batch);
      input.dispose();
      const data = (await logits.data()) as Float32Array;
      logits.dispose();
      const ids = nextInput(batch, out, sampleRows(data, c.vocabSize, batch, out, sampler));
      if (ids === null) break;
      input = tf.tensor2d(ids, [batch.rows.length, 1], 'int32');
      // Let the event loop run between steps (wasm reads resolve as microtasks): streamed tokens get
      // flushed and new HTTP requests get queued for the next batch while this one generates.
      await new Promise((resolve) => setImmediate(resolve));
    }
  } finally {
    disposeCache(batch.cache);
    if (!input.isDisposed) input.dispose();
  }
  return out.map((o) => finished(o, sampler));
}
