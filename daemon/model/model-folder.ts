/**
 * Model folders on disk, in Hugging Face layout so other tools can read them:
 *   config.json                 HF config (built-in models: a GPT-2 config + "agl_tokenizer": "bytes")
 *   model.safetensors           weights (or shards + model.safetensors.index.json when loading)
 *   tokenizer.json, tokenizer_config.json   HF models only (copied through on save)
 *   optimizer.safetensors       AdamW moments "m.<name>", "v.<name>" in their weights' on-disk layout; metadata: step,
 *                               optimizer config, "layout": "disk" (files without it hold Llama moments as in memory)
 * Built-in GPT weights use GPT-2 names and [in, out] layout (as GPT-2's Conv1D); Llama/Qwen2 linears are
 * [out, in] on disk and transposed to [in, out] in memory.
 */
import * as tf from '@tensorflow/tfjs';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { OptimizerSettingsSchema, type OptimizerSettings } from '../../protocol/engine.js';
import { readModelFolder, readSafetensors, readSafetensorsMetadata, writeSafetensors, type NamedArray } from './safetensors.js';
import { makeVariable, newVariableScope, paramShapes, type Params, type TransformerConfig } from './transformer.js';
import type { AdamW } from './train-step.js';

export type HfConfig = Record<string, unknown>;
const HF_SIDE_FILES = ['tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja', 'generation_config.json', 'special_tokens_map.json'];

/** Llama-family linear weights are stored [out, in] by HF. */
function storedTransposed(c: TransformerConfig, name: string): boolean {
  return c.family === 'llama' && (/_proj\.weight$/.test(name) || name === 'lm_head.weight');
}

export function configFromHf(hf: HfConfig): TransformerConfig {
  const type = String(hf.model_type ?? '');
  const num = (k: string, d?: number): number => {
    const v = hf[k] ?? d;
    if (typeof v !== 'number') throw new Error(`config.json: "${k}" is missing or not a number`);
    return v;
  };
  if (type === 'gpt2') {
    const d = num('n_embd');
    const act = String(hf.activation_function ?? 'gelu_new');
    if (!['gelu_new', 'gelu_pytorch_tanh'].includes(act)) throw new Error(`config.json: activation_function "${act}" is not supported (GPT-2's gelu_new is)`);
    return {
      family: 'gpt',
      vocabSize: num('vocab_size'),
      contextLength: num('n_positions'),
      dModel: d,
      nLayers: num('n_layer'),
      nHeads: num('n_head'),
      nKvHeads: num('n_head'),
      dFF: (hf.n_inner as number | null) ?? 4 * d,
      normEps: num('layer_norm_epsilon', 1e-5),
      ropeTheta: 0,
      tieEmbeddings: true,
      qkvBias: true,
    };
  }
  if (type === 'llama' || type === 'qwen2' || type === 'mistral') {
    // transformers 5 keeps RoPE settings in rope_parameters ({rope_type, rope_theta}); older configs have rope_theta.
    const rope = (hf.rope_parameters ?? null) as { rope_type?: string; rope_theta?: number } | null;
    if (hf.rope_scaling || (rope?.rope_type && rope.rope_type !== 'default')) {
      throw new Error(`config.json: RoPE scaling (${JSON.stringify(hf.rope_scaling ?? rope)}) is not supported by the tfjs engine yet: use --engine torch`);
    }
    const heads = num('num_attention_heads');
    if (typeof hf.head_dim === 'number' && hf.head_dim * heads !== num('hidden_size')) {
      throw new Error(
        `config.json: head_dim ${hf.head_dim} x ${heads} heads is not hidden_size ${num('hidden_size')}: not supported by the tfjs engine (use --engine torch)`,
      );
    }
    return {
      family: 'llama',
      vocabSize: num('vocab_size'),
      contextLength: Math.min(num('max_position_embeddings'), 32768),
      dModel: num('hidden_size'),
      nLayers: num('num_hidden_layers'),
      nHeads: heads,
      nKvHeads: num('num_key_value_heads', heads),
      dFF: num('intermediate_size'),
      normEps: num('rms_norm_eps', 1e-6),
      ropeTheta: typeof rope?.rope_theta === 'number' ? rope.rope_theta : num('rope_theta', 10000),
      tieEmbeddings: Boolean(hf.tie_word_embeddings ?? false),
      qkvBias: type === 'qwen2' ? true : Boolean(hf.attention_bias ?? false),
    };
  }
  throw new Error(`config.json: model_type "${type}" is not supported (use llama, qwen2, mistral or gpt2)`);
}

export function hfConfigFor(c: TransformerConfig, extra: HfConfig = {}): HfConfig {
  if (c.family === 'gpt') {
    return {
      model_type: 'gpt2',
      architectures: ['GPT2LMHeadModel'],
      vocab_size: c.vocabSize,
      n_positions: c.contextLength,
      n_ctx: c.contextLength,
      n_embd: c.dModel,
      n_layer: c.nLayers,
      n_head: c.nHeads,
      n_inner: c.dFF,
      activation_function: 'gelu_new',
      layer_norm_epsilon: c.normEps,
      tie_word_embeddings: true,
      resid_pdrop: 0,
      embd_pdrop: 0,
      attn_pdrop: 0,
      ...extra,
    };
  }
  return {
    model_type: 'llama',
    architectures: ['LlamaForCausalLM'],
    vocab_size: c.vocabSize,
    max_position_embeddings: c.contextLength,
    hidden_size: c.dModel,
    num_hidden_layers: c.nLayers,
    num_attention_heads: c.nHeads,
    num_key_value_heads: c.nKvHeads,
    intermediate_size: c.dFF,
    rms_norm_eps: c.normEps,
    rope_theta: c.ropeTheta,
    tie_word_embeddings: c.tieEmbeddings,
    attention_bias: c.qkvBias,
    hidden_act: 'silu',
    torch_dtype: 'float32',
    ...extra,
  };
}

export function readHfConfig(dir: string): HfConfig {
  const p = join(dir, 'config.json');
  if (!existsSync(p)) throw new Error(`${dir} has no config.json: is it a model folder?`);
  return JSON.parse(readFileSync(p, 'utf8')) as HfConfig;
}

/** Creates the model's variables from a folder's weights, checking names and shapes against the config. */
export function loadWeights(c: TransformerConfig, dir: string): Params {
  const stored = readModelFolder(dir);
  const params: Params = new Map();
  newVariableScope();
  for (const [name, shape] of paramShapes(c)) {
    // Original GPT-2 checkpoints name their tensors without the "transformer." prefix.
    const t = stored.get(name) ?? stored.get(name.replace(/^transformer\./, ''));
    if (!t) throw new Error(`${dir}: weight "${name}" (shape ${JSON.stringify(shape)}) is missing`);
    const diskShape = storedTransposed(c, name) ? [shape[1], shape[0]] : shape;
    if (JSON.stringify(t.shape) !== JSON.stringify(diskShape)) {
      throw new Error(`${dir}: weight "${name}" has shape ${JSON.stringify(t.shape)}, config needs ${JSON.stringify(diskShape)}`);
    }
    const tensor = tf.tidy(() => {
      const x = tf.tensor(t.data as Float32Array, diskShape, 'float32');
      return storedTransposed(c, name) ? x.transpose() : x;
    });
    params.set(name, makeVariable(name, tensor));
    tensor.dispose();
  }
  return params;
}

async function toArrays(c: TransformerConfig, params: Map<string, tf.Tensor>): Promise<Map<string, NamedArray>> {
  const out = new Map<string, NamedArray>();
  for (const [name, v] of params) {
    const t = storedTransposed(c, name) ? v.transpose() : v;
    out.set(name, { shape: t.shape, data: (await t.data()) as Float32Array });
    if (t !== v) t.dispose();
  }
  return out;
}

export async function saveFolder(
  dir: string,
  c: TransformerConfig,
  params: Params,
  hfConfig: HfConfig,
  sourceDir: string | null,
  opt: AdamW | null,
): Promise<void> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(hfConfig, null, 2));
  writeSafetensors(join(dir, 'model.safetensors'), await toArrays(c, params), { format: 'pt' });
  if (sourceDir && resolve(sourceDir) !== resolve(dir)) {
    for (const f of HF_SIDE_FILES) if (existsSync(join(sourceDir, f))) copyFileSync(join(sourceDir, f), join(dir, f));
  }
  if (opt) {
    // Moments in their weights' on-disk layout ("layout": "disk"), so the torch engine reads them as they are.
    const m = await toArrays(c, opt.firstMoments),
      v = await toArrays(c, opt.secondMoments);
    const state = new Map<string, NamedArray>();
    for (const [name, a] of m) state.set(`m.${name}`, a);
    for (const [name, a] of v) state.set(`v.${name}`, a);
    writeSafetensors(join(dir, 'optimizer.safetensors'), state, { step: String(opt.step), config: JSON.stringify(opt.cfg), layout: 'disk' });
  }
}

/**
 * The optimizer settings a model folder (ours: the TF.js engine's or the torch engine's, a model's or a LoRA adapter's)
 * saved with its Adam state, the known ones; none without optimizer.safetensors. The daemon reads them for both engines
 * (protocol/engine.ts configuredOptimizer puts them between the defaults and the settings asked for).
 */
export function savedOptimizerSettings(dir: string): Partial<OptimizerSettings> {
  const p = join(dir, 'optimizer.safetensors');
  if (!existsSync(p)) return {};
  const config = readSafetensorsMetadata(p).config;
  if (!config) return {};
  const saved = JSON.parse(config) as Record<string, unknown>;
  // A learning rate saved by an older version was the default's, never an update's (each carries its own): not read.
  const known = Object.keys(OptimizerSettingsSchema.shape).filter((k) => k !== 'lr');
  return Object.fromEntries(Object.entries(saved).filter(([k, v]) => known.includes(k) && typeof v === 'number'));
}

/** Restores AdamW moments and step from optimizer.safetensors if the folder has one; returns whether it did. */
export function loadOptimizerState(dir: string, opt: AdamW, c: TransformerConfig): boolean {
  const p = join(dir, 'optimizer.safetensors');
  if (!existsSync(p)) return false;
  const { tensors, metadata } = readSafetensors(p);
  // "layout": "disk": moments stored as their weights are (Llama linears [out, in]); older files: as held in memory.
  const onDisk = metadata.layout === 'disk';
  for (const [kind, map] of [
    ['m', opt.firstMoments],
    ['v', opt.secondMoments],
  ] as const) {
    for (const [name, variable] of map) {
      const t = tensors.get(`${kind}.${name}`);
      if (!t) throw new Error(`${p}: optimizer state "${kind}.${name}" is missing`);
      const turn = onDisk && storedTransposed(c, name);
      const want = turn ? [variable.shape[1], variable.shape[0]] : variable.shape;
      if (JSON.stringify(t.shape) !== JSON.stringify(want))
        throw new Error(`${p}: optimizer state "${kind}.${name}" has shape ${JSON.stringify(t.shape)}, the weight needs ${JSON.stringify(want)}`);
      const x = tf.tidy(() => {
        const y = tf.tensor(t.data as Float32Array, t.shape, 'float32');
        return turn ? y.transpose() : y;
      });
      variable.assign(x);
      x.dispose();
    }
  }
  opt.step = Number(metadata.step ?? 0);
  return true;
}
