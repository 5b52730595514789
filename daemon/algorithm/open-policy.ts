/**
 * Opens the policy named by `--model`: `builtin:0.8m` / `builtin:5m` (a new byte-level GPT), or a folder
 * (a checkpoint of ours from `agl sft` / `agl train`, or a Hugging Face Llama/Qwen2 model folder).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createPolicy, loadPolicy, type TfPolicyModel } from '../model/policy.js';

export interface OpenPolicyOptions { backend?: string; learningRate?: number; contextLength?: number; seed?: number; microBatchSize?: number }

export async function openPolicy(spec: string, o: OpenPolicyOptions = {}): Promise<TfPolicyModel> {
  const optimizer = { ...(o.learningRate ? { lr: o.learningRate } : {}), ...(o.microBatchSize ? { microBatchSize: o.microBatchSize } : {}) };
  const builtin = /^builtin:(.+)$/.exec(spec);
  if (builtin) {
    return createPolicy({ size: builtin[1] as '0.8m', contextLength: o.contextLength ?? 128, seed: o.seed, backend: o.backend, optimizer, name: `builtin-${builtin[1]}` });
  }
  if (!existsSync(join(spec, 'config.json'))) {
    throw new Error(`--model ${spec}: not a model folder (no config.json there). Use builtin:0.8m, builtin:5m, a checkpoint folder or a Hugging Face model folder`);
  }
  const model = await loadPolicy(spec, { backend: o.backend, optimizer });
  // The checkpoint's saved optimizer settings must not override the learning rate asked for now.
  if (o.learningRate) model.optimizerConfig.lr = o.learningRate;
  return model;
}
