/**
 * The decoder-only transformer, two families behind one config (read it like nanoGPT's model.py):
 * - 'gpt':   learned positions, LayerNorm, GELU MLP, fused qkv, tied head (GPT-2 layout and tensor names)
 * - 'llama': RoPE, RMSNorm, grouped-query attention, SwiGLU, optional qkv bias (Qwen2), tied or untied head
 *            (Hugging Face Llama/Qwen2 tensor names).
 * Linear weights are held as [in, out] so every projection is one plain 2-D matmul (fast on wasm); HF
 * Llama checkpoints store [out, in] and are transposed when loaded and saved (model-folder.ts).
 * Sequences in a batch are left-padded: `leftPad[b]` pad slots come first, positions start after them and
 * an additive mask hides them, so generation, scoring and training all share one layout.
 */
import * as tf from '@tensorflow/tfjs';
import { embed, gelu, layerNorm, linear, matmul, rmsNorm, silu } from './ops.js';

export interface TransformerConfig {
  family: 'gpt' | 'llama';
  vocabSize: number;
  contextLength: number;
  dModel: number;
  nLayers: number;
  nHeads: number;
  nKvHeads: number;
  dFF: number;
  normEps: number;
  ropeTheta: number;
  tieEmbeddings: boolean;
  qkvBias: boolean;
}

export type Params = Map<string, tf.Variable>;
export interface LayerCache {
  k: tf.Tensor;
  v: tf.Tensor;
} // [B, nKvHeads, Tpast, headDim]

/** Built-in GPT sizes used by the calc demo and the benchmark. */
export const GPT_PRESETS: Record<string, Partial<TransformerConfig>> = {
  '0.8m': { dModel: 128, nLayers: 4, nHeads: 4 },
  '5m': { dModel: 256, nLayers: 6, nHeads: 8 },
};

export function gptConfig(vocabSize: number, contextLength: number, size: Partial<TransformerConfig>): TransformerConfig {
  const d = size.dModel ?? 128;
  return {
    family: 'gpt',
    vocabSize,
    contextLength,
    dModel: d,
    nLayers: size.nLayers ?? 4,
    nHeads: size.nHeads ?? 4,
    nKvHeads: size.nHeads ?? 4,
    dFF: size.dFF ?? 4 * d,
    normEps: 1e-5,
    ropeTheta: 0,
    tieEmbeddings: true,
    qkvBias: true,
  };
}

/** Tensor names and shapes of a config (internal [in, out] layout for linears). */
export function paramShapes(c: TransformerConfig): Map<string, number[]> {
  const s = new Map<string, number[]>();
  const d = c.dModel,
    hd = d / c.nHeads,
    kv = c.nKvHeads * hd;
  if (c.family === 'gpt') {
    s.set('transformer.wte.weight', [c.vocabSize, d]);
    s.set('transformer.wpe.weight', [c.contextLength, d]);
    for (let i = 0; i < c.nLayers; i++) {
      const p = `transformer.h.${i}.`;
      s.set(`${p}ln_1.weight`, [d]);
      s.set(`${p}ln_1.bias`, [d]);
      s.set(`${p}attn.c_attn.weight`, [d, 3 * d]);
      s.set(`${p}attn.c_attn.bias`, [3 * d]);
      s.set(`${p}attn.c_proj.weight`, [d, d]);
      s.set(`${p}attn.c_proj.bias`, [d]);
      s.set(`${p}ln_2.weight`, [d]);
      s.set(`${p}ln_2.bias`, [d]);
      s.set(`${p}mlp.c_fc.weight`, [d, c.dFF]);
      s.set(`${p}mlp.c_fc.bias`, [c.dFF]);
      s.set(`${p}mlp.c_proj.weight`, [c.dFF, d]);
      s.set(`${p}mlp.c_proj.bias`, [d]);
    }
    s.set('transformer.ln_f.weight', [d]);
    s.set('transformer.ln_f.bias', [d]);
    return s;
  }
  s.set('model.embed_tokens.weight', [c.vocabSize, d]);
  for (let i = 0; i < c.nLayers; i++) {
    const p = `model.layers.${i}.`;
    s.set(`${p}input_layernorm.weight`, [d]);
    s.set(`${p}self_attn.q_proj.weight`, [d, d]);
    s.set(`${p}self_attn.k_proj.weight`, [d, kv]);
    s.set(`${p}self_attn.v_proj.weight`, [d, kv]);
    if (c.qkvBias) {
      s.set(`${p}self_attn.q_proj.bias`, [d]);
      s.set(`${p}self_attn.k_proj.bias`, [kv]);
      s.set(`${p}self_attn.v_proj.bias`, [kv]);
    }
    s.set(`${p}self_attn.o_proj.weight`, [d, d]);
    s.set(`${p}post_attention_layernorm.weight`, [d]);
    s.set(`${p}mlp.gate_proj.weight`, [d, c.dFF]);
    s.set(`${p}mlp.up_proj.weight`, [d, c.dFF]);
    s.set(`${p}mlp.down_proj.weight`, [c.dFF, d]);
  }
  s.set('model.norm.weight', [d]);
  if (!c.tieEmbeddings) s.set('lm_head.weight', [d, c.vocabSize]);
  return s;
}

let modelCounter = 0;
let currentPrefix = 'm0/';
/** Starts a new model's variable namespace (TF.js variable names are global to the process). */
export function newVariableScope(): void {
  currentPrefix = `m${++modelCounter}/`;
}
/** A trainable variable holding a copy of `t`, named uniquely for this process. */
export function makeVariable(name: string, t: tf.Tensor): tf.Variable {
  return tf.variable(t, true, `${currentPrefix}${name}`);
}

/** GPT-2 style init: N(0, 0.02), residual output projections scaled by 1/sqrt(2 * nLayers), norms 1, biases 0. */
export function initParams(c: TransformerConfig, seed = 1234): Params {
  const params: Params = new Map();
  newVariableScope();
  let k = 0;
  for (const [name, shape] of paramShapes(c)) {
    k++;
    const t = tf.tidy(() => {
      if (/(ln_\d|ln_f|layernorm|norm)\.weight$/.test(name)) return tf.ones(shape);
      if (name.endsWith('.bias')) return tf.zeros(shape);
      const residual = /(c_proj|o_proj|down_proj)\.weight$/.test(name);
      return tf.randomNormal(shape, 0, residual ? 0.02 / Math.sqrt(2 * c.nLayers) : 0.02, 'float32', seed + k);
    });
    params.set(name, makeVariable(name, t));
    t.dispose();
  }
  return params;
}

/** Additive attention mask [B, 1, T, past+T]: 0 where query t may see key j (causal, not a pad), else -1e9. */
function attentionBias(leftPad: number[], past: number, T: number): tf.Tensor4D {
  const B = leftPad.length,
    Tk = past + T;
  const m = new Float32Array(B * T * Tk).fill(-1e9);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      const row = (b * T + t) * Tk;
      for (let j = leftPad[b]; j <= past + t; j++) m[row + j] = 0;
    }
  }
  return tf.tensor4d(m, [B, 1, T, Tk]);
}

/** Positions of the T new slots of each row: slot index minus that row's left padding (pads get 0). */
export function positionsFor(leftPad: number[], past: number, T: number): number[][] {
  return leftPad.map((p) => Array.from({ length: T }, (_, t) => Math.max(0, past + t - p)));
}

/** cos/sin [B, 1, T, headDim] for HF's rotate_half RoPE. */
function ropeTables(positions: number[][], headDim: number, theta: number): [tf.Tensor, tf.Tensor] {
  const B = positions.length,
    T = positions[0].length,
    half = headDim / 2;
  const cos = new Float32Array(B * T * headDim),
    sin = new Float32Array(B * T * headDim);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      for (let i = 0; i < half; i++) {
        const invFreq = 1 / theta ** ((2 * i) / headDim);
        const a = Math.fround(positions[b][t] * Math.fround(invFreq));
        const o = (b * T + t) * headDim;
        cos[o + i] = cos[o + i + half] = Math.cos(a);
        sin[o + i] = sin[o + i + half] = Math.sin(a);
      }
    }
  }
  return [tf.tensor4d(cos, [B, 1, T, headDim]), tf.tensor4d(sin, [B, 1, T, headDim])];
}

function applyRope(x: tf.Tensor, cos: tf.Tensor, sin: tf.Tensor): tf.Tensor {
  const half = x.shape[3]! / 2;
  const [x1, x2] = tf.split(x, [half, half], 3);
  return x.mul(cos).add(tf.concat([x2.neg(), x1], 3).mul(sin));
}

export interface ForwardResult {
  hidden: tf.Tensor3D;
  cache: LayerCache[];
}

/** The shapes of one forward pass: batch B, new positions T after `past` cached ones, H query heads over Hkv kv heads of hd. */
interface PassShape {
  B: number;
  T: number;
  past: number;
  H: number;
  Hkv: number;
  hd: number;
}

type Weight = (name: string) => tf.Tensor;

/** Layer i's queries, keys and values of the normed input, as heads [B, heads, T, hd] (RoPE not yet applied). */
function projectQkv(c: TransformerConfig, w: Weight, x: tf.Tensor, i: number, s: PassShape): [tf.Tensor, tf.Tensor, tf.Tensor] {
  const { B, T, H, Hkv, hd } = s;
  if (c.family === 'gpt') {
    const p = `transformer.h.${i}.`;
    const h = layerNorm(x, w(`${p}ln_1.weight`), w(`${p}ln_1.bias`), c.normEps);
    // [B*T, 3, d] -> [3, B*T, d], then contiguous slices: splitting the last axis, and 5-D transposes, are slow on wasm.
    const qkv = linear(h, w(`${p}attn.c_attn.weight`), w(`${p}attn.c_attn.bias`))
      .reshape([B * T, 3, c.dModel])
      .transpose([1, 0, 2]);
    // One new token per row (decoding): [B, 1, H, hd] -> [B, H, 1, hd] is a plain reshape.
    const [q, k, v] = [0, 1, 2].map((j) => {
      const part = qkv.slice([j, 0, 0], [1, B * T, c.dModel]);
      return T === 1 ? part.reshape([B, H, 1, hd]) : part.reshape([B, T, H, hd]).transpose([0, 2, 1, 3]);
    });
    return [q, k, v];
  }
  const p = `model.layers.${i}.self_attn.`;
  const h = rmsNorm(x, w(`model.layers.${i}.input_layernorm.weight`), c.normEps);
  const heads = (t: tf.Tensor, n: number) => (T === 1 ? t.reshape([B, n, 1, hd]) : t.reshape([B, T, n, hd]).transpose([0, 2, 1, 3]));
  const proj = (name: string) => linear(h, w(`${p}${name}.weight`), c.qkvBias ? w(`${p}${name}.bias`) : undefined);
  return [heads(proj('q_proj'), H), heads(proj('k_proj'), Hkv), heads(proj('v_proj'), Hkv)];
}

/** Attention of q over k/v (past and new positions, Tk of them) with the padding/causal bias: [B, T, d]. */
function attend(c: TransformerConfig, q: tf.Tensor, k: tf.Tensor, v: tf.Tensor, bias: tf.Tensor, s: PassShape): tf.Tensor {
  const { B, T, H, Hkv, hd } = s;
  const rep = H / Hkv;
  const Tk = s.past + T;
  // Grouped-query attention without copying k/v: the rep query heads sharing a kv head are stacked along time.
  const qg = q.mul(1 / Math.sqrt(hd)).reshape([B * Hkv, rep * T, hd]) as tf.Tensor3D;
  const kT = k.transpose([0, 1, 3, 2]).reshape([B * Hkv, hd, Tk]) as tf.Tensor3D;
  const scores = matmul(qg, kT).reshape([B, H, T, Tk]).add(bias);
  const att = tf.softmax(scores, -1).reshape([B * Hkv, rep * T, Tk]) as tf.Tensor3D;
  const yh = matmul(att, v.reshape([B * Hkv, Tk, hd]) as tf.Tensor3D).reshape([B, H, T, hd]);
  return (T === 1 ? yh : yh.transpose([0, 2, 1, 3])).reshape([B, T, c.dModel]);
}

/** Layer i's residual stream after its attention output y: the output projection, then the MLP. */
function residualAndMlp(c: TransformerConfig, w: Weight, x: tf.Tensor, y: tf.Tensor, i: number): tf.Tensor {
  if (c.family === 'gpt') {
    const p = `transformer.h.${i}.`;
    const x1 = x.add(linear(y, w(`${p}attn.c_proj.weight`), w(`${p}attn.c_proj.bias`)));
    const m = layerNorm(x1, w(`${p}ln_2.weight`), w(`${p}ln_2.bias`), c.normEps);
    const ff = gelu(linear(m, w(`${p}mlp.c_fc.weight`), w(`${p}mlp.c_fc.bias`)));
    return x1.add(linear(ff, w(`${p}mlp.c_proj.weight`), w(`${p}mlp.c_proj.bias`)));
  }
  const p = `model.layers.${i}.`;
  const x1 = x.add(linear(y, w(`${p}self_attn.o_proj.weight`)));
  const m = rmsNorm(x1, w(`${p}post_attention_layernorm.weight`), c.normEps);
  const ff = silu(linear(m, w(`${p}mlp.gate_proj.weight`))).mul(linear(m, w(`${p}mlp.up_proj.weight`)));
  return x1.add(linear(ff, w(`${p}mlp.down_proj.weight`)));
}

/**
 * Runs the blocks on `ids` [B, T] (int32) after `cache` (past keys/values, or none) and returns the final
 * normed hidden states [B, T, d] and the extended cache. The caller owns the returned tensors.
 */
export function forward(c: TransformerConfig, P: Params, ids: tf.Tensor2D, leftPad: number[], cache: LayerCache[] | null): ForwardResult {
  const [B, T] = ids.shape;
  const past = cache ? cache[0].k.shape[2]! : 0;
  const shape: PassShape = { B, T, past, H: c.nHeads, Hkv: c.nKvHeads, hd: c.dModel / c.nHeads };
  const w: Weight = (n) => {
    const v = P.get(n);
    if (!v) throw new Error(`missing weight ${n}`);
    return v;
  };
  const bias = attentionBias(leftPad, past, T);
  const positions = positionsFor(leftPad, past, T);
  const posIds = tf.tensor2d(positions.flat(), [B, T], 'int32');
  const rope = c.family === 'llama' ? ropeTables(positions, shape.hd, c.ropeTheta) : null;
  const newCache: LayerCache[] = [];

  let x =
    c.family === 'gpt' ? embed(w('transformer.wte.weight'), ids).add(embed(w('transformer.wpe.weight'), posIds)) : embed(w('model.embed_tokens.weight'), ids);

  for (let i = 0; i < c.nLayers; i++) {
    let [q, k, v] = projectQkv(c, w, x, i, shape);
    if (rope) {
      q = applyRope(q, rope[0], rope[1]);
      k = applyRope(k, rope[0], rope[1]);
    }
    if (cache) {
      k = tf.concat([cache[i].k, k], 2);
      v = tf.concat([cache[i].v, v], 2);
    }
    newCache.push({ k, v });
    x = residualAndMlp(c, w, x, attend(c, q, k, v, bias, shape), i);
  }
  const hidden = (
    c.family === 'gpt' ? layerNorm(x, w('transformer.ln_f.weight'), w('transformer.ln_f.bias'), c.normEps) : rmsNorm(x, w('model.norm.weight'), c.normEps)
  ) as tf.Tensor3D;
  return { hidden, cache: newCache };
}

/** Next-token logits [N, V] of hidden states [N, d]. */
export function lmHead(c: TransformerConfig, P: Params, hidden2d: tf.Tensor): tf.Tensor2D {
  if (!c.tieEmbeddings) return matmul(hidden2d, P.get('lm_head.weight')!) as tf.Tensor2D;
  const table = P.get(c.family === 'gpt' ? 'transformer.wte.weight' : 'model.embed_tokens.weight')!;
  return matmul(hidden2d, table.transpose()) as tf.Tensor2D;
}

export function countParams(P: Params): number {
  let n = 0;
  for (const v of P.values()) n += v.size;
  return n;
}
