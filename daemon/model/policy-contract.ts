/**
 * The contract between the policy model engine (daemon/model) and its users: the gateway (serving),
 * the algorithm (GRPO / SFT training) and the CLI. Everything TF.js-specific stays behind it, except
 * the training loss callback, which builds its loss from per-token log-prob tensors.
 */
import type * as tf from '@tensorflow/tfjs';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  name?: string;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}
export interface ToolSpec { type: 'function'; function: { name: string; description?: string; parameters?: unknown } }

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

export interface SequencePair { promptIds: number[]; completionIds: number[] }

/** What the loss callback of a training step gets, for one micro-batch of B sequences, T completion positions. */
export interface LossInputs {
  /** [B, T] log-prob of each completion token under the current weights (differentiable). */
  logprobs: tf.Tensor2D;
  /** [B, T] 1 for real completion tokens, 0 for padding. */
  mask: tf.Tensor2D;
  /** [B, T] entropy of the next-token distribution at each completion position (not differentiated). */
  entropy: tf.Tensor2D;
  /** Indices of these B sequences in the batch given to trainStep. */
  indices: number[];
}
export interface TrainStepResult { loss: number; gradNorm: number; tokens: number; seconds: number }

export interface PolicyModel {
  readonly name: string;
  readonly backend: string;
  readonly tokenizer: Tokenizer;
  readonly contextLength: number;
  generate(prompts: number[][], opts: GenerateOptions): Promise<Generation[]>;
  /** Per-token log-probs of each completion given its prompt, under the current weights (no gradient). */
  scoreLogprobs(pairs: SequencePair[]): Promise<number[][]>;
  /**
   * One optimizer update over `pairs`, split into micro-batches; `lossFn` is called per micro-batch
   * and must return that micro-batch's share of the batch loss (gradients are summed across them).
   */
  trainStep(pairs: SequencePair[], lossFn: (inputs: LossInputs) => tf.Scalar): Promise<TrainStepResult>;
  save(dir: string): Promise<void>;
  dispose(): void;
}
