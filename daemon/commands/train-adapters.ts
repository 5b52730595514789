/**
 * One LoRA adapter per role policy (`engine.lora` with `policies:`, torch engine): every role policy is an adapter on
 * the one base model the engine holds (frozen from then on), instead of a full copy of the weights each. The base
 * serves the roles without a policy, and is every adapter's KL reference (grpo.beta > 0): its starting point.
 * A policy starts as a fresh adapter (LoRA's B = 0: the base's outputs), from an adapter folder (`policies.<role>.init`),
 * or, resuming, from the checkpoint's.
 */
import { join } from 'node:path';
import { policyFolderCheck, type CheckpointState } from '../algorithm/checkpoint.js';
import type { RolePolicy } from '../algorithm/trainer.js';
import type { PolicyModel } from '../model/policy-contract.js';
import { TorchPolicyModel } from '../model/torch-engine.js';
import { GrpoConfig, type PolicyEntry, type TrainConfig } from '../../protocol/train-config.js';

export async function openAdapterPolicies(
  config: TrainConfig,
  base: PolicyModel,
  owners: [string, Extract<PolicyEntry, { init: string | null }>][],
  rolesOf: (owner: string) => string[],
  resume: { ckpt: CheckpointState; dir: string } | null,
): Promise<RolePolicy[]> {
  const lora = config.engine.lora!;
  if (!(base instanceof TorchPolicyModel)) throw new Error('engine.lora: the base model is not on the torch engine');
  const out: RolePolicy[] = [];
  for (const [name, entry] of owners) {
    const roles = rolesOf(name);
    const saved = resume?.ckpt.rolePolicies?.[name];
    const init = saved && resume ? join(resume.dir, saved.dir) : entry.init;
    const what = saved ? `the checkpoint of policy ${name}` : `policies.${name}.init`;
    if (init) policyFolderCheck(init, name, roles, what);
    const lr = entry.learningRate ?? config.training.learningRate;
    let model;
    try {
      model = await base.addAdapter(name, { init, lora, optimizer: { lr } });
    } catch (e) {
      throw new Error(
        `${init ? `${what}: cannot open ${init}` : `engine.lora: cannot add an adapter`} for role${roles.length > 1 ? 's' : ''} ${roles.join(', ')}: ${(e as Error).message}`,
        { cause: e },
      );
    }
    const grpo = GrpoConfig.parse({ ...config.training.grpo, ...entry.grpo });
    out.push({ name, roles, model, learningRate: lr, grpo, reference: grpo.beta > 0 ? base : null });
  }
  return out;
}
