/**
 * The contract between a policy model engine and its users: the gateway (serving), the algorithm (GRPO / SFT
 * training) and the CLI. Two engines implement it: TF.js in this process (policy.ts) and PyTorch in a child
 * process (torch-engine.ts, engines/torch/). Nothing engine-specific crosses it: token ids, log-probs, and the
 * training loss described as data (protocol/engine.ts `TrainLoss`), which each engine implements.
 */
import type { EngineFacts, LossStats, OptimizerSettings, PeakMemory, TrainLoss } from '../../protocol/engine.js';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  name?: string;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}
export interface ToolSpec {
  type: 'function';
  function: { name: string; description?: string; parameters?: unknown };
}

export interface Tokenizer {
  readonly vocabSize: number;
  readonly eosTokenIds: number[];
  encode(text: string): number[];
  decode(ids: number[]): string;
  /** Renders a chat (with the model's chat template for HF models) into the prompt text. */
  applyChatTemplate(messages: ChatMessage[], opts?: { addGenerationPrompt?: boolean; tools?: ToolSpec[] }): string;
}

export interface GenerateOptions {
  maxTokens: number;
  temperature?: number; // 0 = greedy
  topP?: number;
  topK?: number;
  /** Stop strings: generation ends when the decoded completion contains one (it is cut off). */
  stop?: string[];
  seed?: number;
  /** Called with each new token of each sequence (streaming). */
  onToken?: (sequenceIndex: number, tokenId: number, logprob: number) => void;
}
export interface Generation {
  tokenIds: number[];
  /** Log-prob of each sampled token under the sampling distribution's model (before temperature). */
  logprobs: number[];
  text: string;
  finishReason: 'stop' | 'length';
}

export interface SequencePair {
  promptIds: number[];
  completionIds: number[];
}

export interface TrainStepResult {
  loss: number;
  /** Global gradient norm before clipping. */
  gradNorm: number;
  /** Prompt + completion tokens of the batch. */
  tokens: number;
  seconds: number;
  /** The loss's running statistics over the whole batch (clip, KL, entropy, ratio sums). */
  stats: LossStats;
  /** The engine's peak memory during the step (protocol/engine.ts), when it measures it. */
  peakMemory?: PeakMemory;
}

export type { EngineFacts, PeakMemory, TrainLoss };

/**
 * One update's own settings, sent with it (the trainer's schedule sends each update's learning rate): they hold for
 * that update only, over the policy's configured settings; an update without them uses the configured settings.
 */
export type UpdateSettings = Partial<OptimizerSettings>;
/**
 * The settings a policy is opened with (its configured ones, over protocol/engine.ts DEFAULT_OPTIMIZER and a folder's
 * saved settings): no learning rate, which reaches an engine one way only, with each update.
 */
export type OpenSettings = Partial<Omit<OptimizerSettings, 'lr'>>;

export interface PolicyModel {
  readonly name: string;
  readonly backend: string;
  /** Its engine, device, dtype and ranks (what a run records it was measured on). */
  readonly engineFacts: EngineFacts;
  readonly tokenizer: Tokenizer;
  readonly contextLength: number;
  generate(prompts: number[][], opts: GenerateOptions): Promise<Generation[]>;
  /** Per-token log-probs of each completion given its prompt, under the current weights (no gradient). */
  scoreLogprobs(pairs: SequencePair[]): Promise<number[][]>;
  /**
   * One optimizer update (AdamW, global-norm clipping) of the loss `loss` over `pairs`, split into micro-batches
   * whose gradients are summed (and, for a data-parallel engine, spread over its ranks). `settings` hold for this
   * update only (the learning rate's hop 3 of 3: train.yaml -> policySet's plan -> the trainer's schedule -> here);
   * the others, and every setting of an update sent without any, are the policy's configured settings.
   */
  trainStep(pairs: SequencePair[], loss: TrainLoss, settings?: UpdateSettings): Promise<TrainStepResult>;
  /** Writes the model folder (config.json, model.safetensors, optimizer.safetensors, tokenizer files). */
  save(dir: string): Promise<void>;
  /** Frees the model (an engine process is stopped). */
  dispose(): void;
}
