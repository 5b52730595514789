/**
 * Training primitives: per-token log-probs of prompt+completion pairs, and one optimizer step (micro-batches,
 * summed gradients, global-norm clipping, AdamW). Layout: prompts left-padded to a common end P, then the
 * completions, right-padded; the hidden state at slot P-1+t predicts completion token t, so the completion
 * log-probs are one plain slice (no gather, whose gradient wasm lacks).
 */
import * as tf from '@tensorflow/tfjs';
import { updateSettings, type OptimizerSettings, type UpdateOptimizerSettings } from '../../protocol/engine.js';
import type { LossInputs } from './loss.js';
import type { SequencePair, TrainStepResult, UpdateSettings } from './policy-contract.js';
import { stopGradient } from './ops.js';
import { forward, lmHead, type Params, type TransformerConfig } from './transformer.js';

interface Batch {
  ids: tf.Tensor2D;
  leftPad: number[];
  promptEnd: number;
  T: number;
  mask: tf.Tensor2D;
  targets: tf.Tensor2D;
}

function buildBatch(c: TransformerConfig, pairs: SequencePair[]): Batch {
  const P = Math.max(...pairs.map((p) => p.promptIds.length));
  const T = Math.max(1, ...pairs.map((p) => p.completionIds.length));
  pairs.forEach((p, i) => {
    if (p.promptIds.length === 0) throw new Error(`pair ${i}: promptIds is empty (need at least one token to predict from)`);
    if (p.promptIds.length + p.completionIds.length > c.contextLength) {
      throw new Error(`pair ${i}: ${p.promptIds.length}+${p.completionIds.length} tokens exceed the context of ${c.contextLength}`);
    }
  });
  // Right pads continue the positions after the completion; keep them inside the context.
  if (P + T - 1 > c.contextLength) {
    throw new Error(
      `batch needs ${P + T - 1} slots (longest prompt ${P} + longest completion ${T}) > context ${c.contextLength}; group sequences of similar length`,
    );
  }
  const L = P + T - 1;
  const ids = new Int32Array(pairs.length * L),
    mask = new Float32Array(pairs.length * T),
    targets = new Int32Array(pairs.length * T);
  const leftPad: number[] = [];
  pairs.forEach((p, b) => {
    const pad = P - p.promptIds.length;
    leftPad.push(pad);
    const seq = [...p.promptIds, ...p.completionIds];
    for (let j = 0; j < Math.min(seq.length, L - pad); j++) ids[b * L + pad + j] = seq[j];
    p.completionIds.forEach((t, j) => {
      targets[b * T + j] = t;
      mask[b * T + j] = 1;
    });
  });
  return {
    ids: tf.tensor2d(ids, [pairs.length, L], 'int32'),
    leftPad,
    promptEnd: P,
    T,
    mask: tf.tensor2d(mask, [pairs.length, T]),
    targets: tf.tensor2d(targets, [pairs.length, T], 'int32'),
  };
}

function disposeBatch(b: Batch): void {
  b.ids.dispose();
  b.mask.dispose();
  b.targets.dispose();
}

/** Differentiable [B, T] log-probs of the completion tokens, and the (non-differentiated) entropy. */
function completionLogprobs(c: TransformerConfig, P: Params, b: Batch, withEntropy: boolean): { logprobs: tf.Tensor2D; entropy: tf.Tensor2D | null } {
  const B = b.leftPad.length;
  const { hidden, cache } = forward(c, P, b.ids, b.leftPad, null);
  for (const l of cache) {
    l.k.dispose();
    l.v.dispose();
  }
  const h = hidden.slice([0, b.promptEnd - 1, 0], [B, b.T, c.dModel]).reshape([B * b.T, c.dModel]);
  const logits = lmHead(c, P, h);
  const logp = tf.logSoftmax(logits, -1);
  const picked = logp.mul(tf.oneHot(b.targets.reshape([-1]) as tf.Tensor1D, c.vocabSize)).sum(-1);
  const logprobs = picked.reshape([B, b.T]) as tf.Tensor2D;
  const entropy = withEntropy ? (stopGradient(logp.exp().mul(logp).sum(-1).neg()).reshape([B, b.T]) as tf.Tensor2D) : null;
  return { logprobs, entropy };
}

export function chunk<T>(xs: T[], n: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += n) out.push(xs.slice(i, i + n));
  return out;
}

/**
 * Consecutive micro-batches of at most `n` pairs, each of which fits the context once padded (longest
 * prompt + longest completion - 1 slots): a long prompt and another pair's long completion, each fine
 * alone, go to different micro-batches. Order is kept, so loss callbacks index pairs by offset.
 */
export function fittingChunks(pairs: SequencePair[], n: number, contextLength: number): SequencePair[][] {
  const out: SequencePair[][] = [];
  let cur: SequencePair[] = [],
    P = 0,
    T = 1;
  for (const p of pairs) {
    const nextP = Math.max(P, p.promptIds.length),
      nextT = Math.max(T, p.completionIds.length);
    if (cur.length > 0 && (cur.length >= n || nextP + nextT - 1 > contextLength)) {
      out.push(cur);
      cur = [];
      P = p.promptIds.length;
      T = Math.max(1, p.completionIds.length);
    } else {
      P = nextP;
      T = nextT;
    }
    cur.push(p);
  }
  if (cur.length) out.push(cur);
  return out;
}

export async function scoreLogprobs(c: TransformerConfig, P: Params, pairs: SequencePair[], microBatchSize: number): Promise<number[][]> {
  const result: number[][] = [];
  for (const group of fittingChunks(pairs, microBatchSize, c.contextLength)) {
    const b = buildBatch(c, group);
    const lp = tf.tidy(() => completionLogprobs(c, P, b, false).logprobs);
    const data = await lp.data();
    lp.dispose();
    disposeBatch(b);
    group.forEach((p, i) => result.push(Array.from(data.subarray(i * b.T, i * b.T + p.completionIds.length))));
  }
  return result;
}

/** AdamW moments per parameter (Adam's m and v) and the step count; saved with checkpoints. */
export class AdamW {
  step = 0;
  readonly firstMoments = new Map<string, tf.Variable>();
  readonly secondMoments = new Map<string, tf.Variable>();
  constructor(
    /** The policy's configured settings (an update's own go with it: trainStep). */
    readonly cfg: OptimizerSettings,
    params: Params,
  ) {
    for (const [name, p] of params) {
      this.firstMoments.set(name, tf.variable(tf.zerosLike(p), false));
      this.secondMoments.set(name, tf.variable(tf.zerosLike(p), false));
    }
  }

  /** Clips `grads` to gradClip global norm, applies one update with `cfg` (this update's settings); returns the norm before clipping. */
  apply(params: Params, grads: Map<string, tf.Tensor>, cfg: UpdateOptimizerSettings): number {
    const { lr, beta1, beta2, eps, weightDecay, gradClip } = cfg;
    const sq = tf.tidy(() => tf.addN([...grads.values()].map((g) => g.square().sum())));
    const norm = Math.sqrt(sq.dataSync()[0]);
    sq.dispose();
    const scale = gradClip > 0 && norm > gradClip ? gradClip / norm : 1;
    this.step++;
    const bc1 = 1 - beta1 ** this.step,
      bc2 = 1 - beta2 ** this.step;
    for (const [name, p] of params) {
      const g0 = grads.get(name);
      if (!g0) continue;
      tf.tidy(() => {
        const g = scale === 1 ? g0 : g0.mul(scale);
        const m = this.firstMoments.get(name)!,
          v = this.secondMoments.get(name)!;
        m.assign(m.mul(beta1).add(g.mul(1 - beta1)));
        v.assign(v.mul(beta2).add(g.square().mul(1 - beta2)));
        const update = m.div(bc1).div(v.div(bc2).sqrt().add(eps));
        // Decoupled weight decay on matrices only (not norms, biases).
        const decay = weightDecay > 0 && p.rank >= 2 ? p.mul(weightDecay) : null;
        p.assign(p.sub((decay ? update.add(decay) : update).mul(lr)));
      });
    }
    return norm;
  }

  dispose(): void {
    for (const t of [...this.firstMoments.values(), ...this.secondMoments.values()]) t.dispose();
  }
}

export async function trainStep(
  c: TransformerConfig,
  P: Params,
  opt: AdamW,
  pairs: SequencePair[],
  lossFn: (inputs: LossInputs) => tf.Scalar,
  settings: UpdateSettings = {},
): Promise<Omit<TrainStepResult, 'stats'>> {
  if (pairs.length === 0) throw new Error('trainStep: no sequences given');
  // The learning rate's hop 3 (of 3): this update's settings over the configured ones, for this update only; the
  // configured settings (opt.cfg, which hold no learning rate) stay as they are. No rate given: refused here.
  const cfg = updateSettings(opt.cfg, settings);
  const started = performance.now();
  const vars = [...P.values()];
  const byVarName = new Map([...P].map(([name, v]) => [v.name, name]));
  const acc = new Map<string, tf.Tensor>();
  let loss = 0,
    tokens = 0,
    offset = 0;
  try {
    for (const group of fittingChunks(pairs, cfg.microBatchSize, c.contextLength)) {
      const b = buildBatch(c, group);
      const indices = group.map((_, i) => offset + i);
      offset += group.length;
      tokens += group.reduce((n, p) => n + p.promptIds.length + p.completionIds.length, 0);
      try {
        const { value, grads } = tf.variableGrads(() => {
          const { logprobs, entropy } = completionLogprobs(c, P, b, true);
          return lossFn({ logprobs, mask: b.mask, entropy: entropy!, indices });
        }, vars);
        loss += (await value.data())[0];
        value.dispose();
        for (const [varName, g] of Object.entries(grads)) {
          const name = byVarName.get(varName)!;
          const prev = acc.get(name);
          if (prev) {
            acc.set(name, prev.add(g));
            prev.dispose();
            g.dispose();
          } else acc.set(name, g);
        }
      } finally {
        disposeBatch(b);
      }
    }
    const gradNorm = opt.apply(P, acc, cfg);
    return { loss, gradNorm, tokens, seconds: (performance.now() - started) / 1000 };
  } finally {
    for (const g of acc.values()) g.dispose();
  }
}
