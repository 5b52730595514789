/**
 * PolicyModel (policy-contract.ts) on TF.js: createPolicy() makes a new built-in GPT with the byte tokenizer,
 * loadPolicy(dir) opens a model folder (our checkpoints or a Hugging Face Llama/Qwen2 folder).
 */
import * as tf from '@tensorflow/tfjs';
import { basename, resolve } from 'node:path';
import { configuredOptimizer, type OptimizerSettings } from '../../protocol/engine.js';
import type {
  EngineFacts,
  GenerateOptions,
  Generation,
  OpenSettings,
  PolicyModel,
  SequencePair,
  Tokenizer,
  TrainLoss,
  TrainStepResult,
  UpdateSettings,
} from './policy-contract.js';
import { GrpoStats, tfLossFn, type LossInputs } from './loss.js';
import { selectBackend } from './backend.js';
import { ByteTokenizer } from './byte-tokenizer.js';
import { configFromHf, hfConfigFor, loadOptimizerState, loadWeights, readHfConfig, saveFolder, savedOptimizerSettings, type HfConfig } from './model-folder.js';
import { HfTokenizer } from './hf-tokenizer.js';
import { generate } from './sampling.js';
import { AdamW, scoreLogprobs, trainStep } from './train-step.js';
import { countParams, gptConfig, GPT_PRESETS, initParams, type Params, type TransformerConfig } from './transformer.js';

export interface CreatePolicyOptions {
  /** '0.8m' (default) or '5m', or explicit sizes. */
  size?: keyof typeof GPT_PRESETS | Partial<TransformerConfig>;
  contextLength?: number;
  seed?: number;
  /** 'auto' (default, or AGL_BACKEND) or one of node-gpu, node, webgpu, wasm, cpu. */
  backend?: string;
  /** Its configured optimizer settings, over protocol/engine.ts DEFAULT_OPTIMIZER. */
  optimizer?: OpenSettings;
  name?: string;
  /** Put tool descriptions into the byte chat template (costs context); default: names and parameters only. */
  toolDescriptions?: boolean;
}
export interface LoadPolicyOptions {
  backend?: string;
  /** Its configured optimizer settings, over the defaults and those the folder saved. */
  optimizer?: OpenSettings;
  name?: string;
}

export class TfPolicyModel implements PolicyModel {
  readonly optimizer: AdamW;
  private disposed = false;

  constructor(
    readonly name: string,
    readonly config: TransformerConfig,
    readonly params: Params,
    readonly tokenizer: Tokenizer,
    private readonly hfConfig: HfConfig,
    private readonly sourceDir: string | null,
    optimizer: OptimizerSettings,
  ) {
    this.optimizer = new AdamW(optimizer, params);
  }

  get backend(): string {
    return tf.getBackend();
  }
  get engineFacts(): EngineFacts {
    return { engine: 'tfjs', device: tf.getBackend(), dtype: 'float32', ranks: 1 };
  }
  get contextLength(): number {
    return this.config.contextLength;
  }
  get parameterCount(): number {
    return countParams(this.params);
  }
  /** Its configured optimizer settings, made or opened with (an update's own settings go with its trainStep). */
  get optimizerConfig(): OptimizerSettings {
    return this.optimizer.cfg;
  }

  private check(): void {
    if (this.disposed) throw new Error(`policy ${this.name} was disposed`);
  }

  async generate(prompts: number[][], opts: GenerateOptions): Promise<Generation[]> {
    this.check();
    const out: Generation[] = [];
    // Bounded batches keep the KV cache and logits small; rows are independent, so results do not change.
    const perBatch = Math.max(1, this.optimizer.cfg.microBatchSize * 4);
    const seed = opts.seed ?? Math.floor(Math.random() * 2 ** 31);
    for (let i = 0; i < prompts.length; i += perBatch) {
      const onToken = opts.onToken;
      const offset = i;
      out.push(
        ...(await generate(
          this.config,
          this.params,
          this.tokenizer,
          prompts.slice(i, i + perBatch),
          {
            ...opts,
            seed,
            onToken: onToken ? (b, t, lp) => onToken(b + offset, t, lp) : undefined,
          },
          offset,
        )),
      );
    }
    return out;
  }

  async scoreLogprobs(pairs: SequencePair[]): Promise<number[][]> {
    this.check();
    return scoreLogprobs(this.config, this.params, pairs, this.optimizer.cfg.microBatchSize);
  }

  async trainStep(pairs: SequencePair[], loss: TrainLoss, settings: UpdateSettings = {}): Promise<TrainStepResult> {
    const stats = new GrpoStats();
    const r = await this.trainStepWith(
      pairs,
      tfLossFn(
        loss,
        stats,
        pairs.map((p) => p.completionIds.length),
      ),
      settings,
    );
    // The process's peak resident set: tf.memory() counts the tensors alive now, not the step's peak, and tf.profile's
    // peak reads back every kernel's output (too slow for every step); the OS keeps this high-water mark for free, and
    // the wasm heap the tensors live in never shrinks, so it is what the run needs of the machine.
    return { ...r, stats: stats.toJSON(), peakMemory: { bytes: process.resourceUsage().maxRSS * 1024, kind: 'rss' } };
  }

  /** trainStep with a loss callback of one's own (TF.js only): called per micro-batch, returns its share of the batch loss. */
  async trainStepWith(
    pairs: SequencePair[],
    lossFn: (inputs: LossInputs) => tf.Scalar,
    settings: UpdateSettings = {},
  ): Promise<Omit<TrainStepResult, 'stats'>> {
    this.check();
    return trainStep(this.config, this.params, this.optimizer, pairs, lossFn, settings);
  }

  async save(dir: string): Promise<void> {
    this.check();
    await saveFolder(dir, this.config, this.params, this.hfConfig, this.sourceDir, this.optimizer);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const v of this.params.values()) v.dispose();
    this.optimizer.dispose();
  }
}

export async function createPolicy(opts: CreatePolicyOptions = {}): Promise<TfPolicyModel> {
  await selectBackend(opts.backend);
  const tokenizer = new ByteTokenizer(opts.toolDescriptions ?? false);
  const size = typeof opts.size === 'string' || opts.size === undefined ? GPT_PRESETS[opts.size ?? '0.8m'] : opts.size;
  if (!size) throw new Error(`unknown model size "${String(opts.size)}": use ${Object.keys(GPT_PRESETS).join(', ')} or explicit sizes`);
  const config = gptConfig(tokenizer.vocabSize, opts.contextLength ?? 256, size);
  if (config.dModel % config.nHeads) throw new Error(`dModel ${config.dModel} is not divisible by nHeads ${config.nHeads}`);
  const params = initParams(config, opts.seed ?? 1234);
  const hf = hfConfigFor(config, { agl_tokenizer: 'bytes', agl_tool_descriptions: opts.toolDescriptions ?? false });
  const name = opts.name ?? `gpt-${typeof opts.size === 'string' ? opts.size : 'custom'}`;
  return new TfPolicyModel(name, config, params, tokenizer, hf, null, configuredOptimizer(opts.optimizer));
}

/** The tokenizer of a model folder: the byte tokenizer of built-in models, else its tokenizer.json and chat template. */
export function tokenizerFor(dir: string, hf: HfConfig = readHfConfig(dir)): Tokenizer {
  return hf.agl_tokenizer === 'bytes'
    ? new ByteTokenizer(Boolean(hf.agl_tool_descriptions))
    : HfTokenizer.fromFolder(
        dir,
        typeof hf.eos_token_id === 'number' ? [hf.eos_token_id] : Array.isArray(hf.eos_token_id) ? (hf.eos_token_id as number[]) : [],
      );
}

/** Opens a model folder; restores the optimizer state when the folder has one (our checkpoints). */
export async function loadPolicy(dir: string, opts: LoadPolicyOptions = {}): Promise<TfPolicyModel> {
  await selectBackend(opts.backend);
  const hf = readHfConfig(dir);
  const config = configFromHf(hf);
  const tokenizer = tokenizerFor(dir, hf);
  if (tokenizer.vocabSize > config.vocabSize) {
    throw new Error(`${dir}: tokenizer has ${tokenizer.vocabSize} tokens but the model's vocab_size is ${config.vocabSize}`);
  }
  const params = loadWeights(config, dir);
  const optimizer = configuredOptimizer(savedOptimizerSettings(dir), opts.optimizer);
  const model = new TfPolicyModel(opts.name ?? basename(resolve(dir)), config, params, tokenizer, hf, dir, optimizer);
  loadOptimizerState(dir, model.optimizer, config);
  return model;
}
