/**
 * Opens the policy named by `--model`: `builtin:0.8m` / `builtin:5m` (a new byte-level GPT), or a folder
 * (a checkpoint of ours from `agl sft` / `agl train`, or a Hugging Face Llama/Qwen2/GPT-2 model folder),
 * on one of the two engines behind the policy contract:
 *   tfjs   (default) this process, TF.js: the built-in models on a laptop
 *   torch  a PyTorch child process (engines/torch): transformers models, GPUs, data-parallel ranks
 * A new built-in model gets the same seeded initialisation on both engines (TF.js makes it; torch loads it).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPolicy, loadPolicy } from '../model/policy.js';
import type { PolicyModel } from '../model/policy-contract.js';
import { startTorchEngine, type TorchEngineOptions } from '../model/torch-engine.js';
import { modelName } from '../../protocol/policy-set.js';

export interface OpenPolicyOptions {
  /** TF.js backend (tfjs engine). */
  backend?: string;
  contextLength?: number;
  seed?: number;
  /** Sequences per micro-batch, over the folder's saved setting and the default (the learning rate comes with each update). */
  microBatchSize?: number;
  /** tfjs (default) or torch. */
  engine?: 'tfjs' | 'torch';
  /** The torch engine's settings (procs, device, python, ...). */
  torch?: TorchEngineOptions;
  /** The name the policy answers to (the gateway serves it by this name); default: protocol/policy-set.ts modelName(spec). */
  name?: string;
}

async function openTf(spec: string, o: OpenPolicyOptions) {
  const optimizer = o.microBatchSize ? { microBatchSize: o.microBatchSize } : {};
  const builtin = /^builtin:(.+)$/.exec(spec);
  if (builtin) {
    return createPolicy({
      size: builtin[1] as '0.8m',
      contextLength: o.contextLength ?? 128,
      seed: o.seed,
      backend: o.backend,
      optimizer,
      name: o.name ?? modelName(spec),
    });
  }
  if (!existsSync(join(spec, 'config.json'))) {
    throw new Error(
      `--model ${spec}: not a model folder (no config.json there). Use builtin:0.8m, builtin:5m, a checkpoint folder or a Hugging Face model folder`,
    );
  }
  // The checkpoint's saved optimizer settings give way to those asked for now (loadPolicy applies `optimizer` last).
  return loadPolicy(spec, { backend: o.backend, optimizer, name: o.name ?? modelName(spec) });
}

export async function openPolicy(spec: string, o: OpenPolicyOptions = {}): Promise<PolicyModel> {
  if ((o.engine ?? 'tfjs') === 'tfjs') return openTf(spec, o);
  const torch: TorchEngineOptions = {
    ...o.torch,
    optimizer: { ...o.torch?.optimizer, ...(o.microBatchSize ? { microBatchSize: o.microBatchSize } : {}) },
  };
  const builtin = /^builtin:(.+)$/.exec(spec);
  if (builtin) {
    // The same seeded initial weights as the tfjs engine: made there, saved, loaded by torch (then the copy goes).
    const tmp = mkdtempSync(join(tmpdir(), 'agl-builtin-'));
    try {
      const made = await createPolicy({
        size: builtin[1] as '0.8m',
        contextLength: o.contextLength ?? 128,
        seed: o.seed,
        backend: o.backend,
        name: modelName(spec),
      });
      await made.save(tmp);
      made.dispose();
      return await startTorchEngine(tmp, { ...torch, name: o.name ?? torch.name ?? modelName(spec) });
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  if (!existsSync(join(spec, 'config.json'))) {
    throw new Error(
      `--model ${spec}: not a model folder (no config.json there). Use builtin:0.8m, builtin:5m, a checkpoint folder or a Hugging Face model folder`,
    );
  }
  return startTorchEngine(spec, { ...torch, name: o.name ?? torch.name ?? modelName(spec) });
}
