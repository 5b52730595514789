/**
 * The policy set of a training run: which policy serves and learns from each role, resolved once from its config.
 * A run without `policies:` is a set of one policy serving every call; with `policies:` each listed role is owned by
 * its own policy (or shares another role's), and every other role is served, untrained, by the run's model (the
 * default policy). Each policy has its starting weights, learning rate and GRPO settings; the set says whether policies
 * are full weights or LoRA adapters on the run's model. The trainer, the gateway's routing, the checkpoint record,
 * `agl serve`, the call-roles view and the export all read it from here. The viewer's bundle reads only role-owners.ts
 * (this file's resolution needs GRPO's zod declaration).
 */
import type { LoraSettings } from './engine.js';
import { policyGrpo, type GrpoSettings } from './grpo-settings.js';
import { roleOwners } from './role-owners.js';
import type { TrainConfig } from './train-config.js';

/** The name of a run's one policy when it needs one of its own (a LoRA adapter, its checkpoint folder). */
export const ONE_POLICY = 'policy';

/** The default policy's name, declared zod-free in role-owners.ts for the viewer's bundle too. */
export { DEFAULT_POLICY } from './role-owners.js';

/** The name a model answers to when nothing names it otherwise: a built-in model its spec (`builtin:0.8m`), a folder its last part. */
export function modelName(spec: string): string {
  if (spec.startsWith('builtin:')) return spec;
  const parts = spec.split(/[\\/]+/).filter(Boolean);
  return parts.at(-1) ?? spec;
}

/** One trained policy of a set. */
export interface PolicyPlan {
  /** Its name: its owning role's, or ONE_POLICY for a run's one policy. */
  name: string;
  /** The roles whose calls it serves and learns from (its own, then those sharing it); null: every call of the run. */
  roles: string[] | null;
  /**
   * Its starting weights: full weights, a model or checkpoint folder (the role's `init`, else the run's model); LoRA,
   * an adapter folder a LoRA run saved, or null for a fresh adapter (B = 0: the base's outputs).
   */
  init: string | null;
  /**
   * Its learning rate: the role's `learningRate`, else `training.learningRate`. The rate's hop 1 (of 3) from train.yaml
   * to the engine; hop 2 is the trainer's schedule (this rate, warmed up), sent with each update; hop 3, the engine
   * applying it to that update only (PolicyModel.trainStep).
   */
  learningRate: number;
  /** Its own GRPO settings: the run's `training.grpo` under the role's own `grpo` (grpo-settings.ts policyGrpo). */
  grpo: GrpoSettings;
}

export interface PolicySet {
  /** The trained policies, in the config's order. */
  policies: PolicyPlan[];
  /** Each listed role -> the name of the policy that serves and trains it (empty for a run's one policy). */
  owners: Record<string, string>;
  /** The run's model (model.init, else model.name): the default policy serving unlisted roles, and LoRA's base. */
  base: string;
  /** A call naming no role, when policies are per role: refused, or served by the default policy. */
  unassignedCalls: 'refuse' | 'default';
  /** LoRA adapters of this shape on `base` (torch engine), or null: full weights. */
  lora: LoraSettings | null;
}

export { roleOwners, type PolicyEntryShape } from './role-owners.js';

/** The run's policy set (the config is validated: every `shared:` names a role with a policy of its own). */
export function policySet(config: TrainConfig): PolicySet {
  const base = config.model.init ?? config.model.name;
  const lora = config.engine.lora;
  const owners = roleOwners(config.policies);
  // The learning rate's hop 1 (of 3): train.yaml's training.learningRate, or a role's own below, into each policy's plan.
  const run = { learningRate: config.training.learningRate, grpo: config.training.grpo };
  if (Object.keys(owners).length === 0) {
    return { policies: [{ name: ONE_POLICY, roles: null, init: lora ? null : base, ...run }], owners, base, unassignedCalls: config.unassignedCalls, lora };
  }
  const policies: PolicyPlan[] = [];
  for (const [role, entry] of Object.entries(config.policies)) {
    if ('shared' in entry) continue;
    policies.push({
      name: role,
      roles: [role, ...Object.keys(owners).filter((r) => r !== role && owners[r] === role)],
      init: entry.init ?? (lora ? null : base),
      learningRate: entry.learningRate ?? run.learningRate,
      grpo: policyGrpo(run.grpo, entry.grpo),
    });
  }
  return { policies, owners, base, unassignedCalls: config.unassignedCalls, lora };
}

/** Whether the set is a run's one policy, serving every call (no per-role policies). */
export function isOnePolicy(set: { policies: { roles: string[] | null }[] }): boolean {
  return set.policies.length === 1 && set.policies[0]!.roles === null;
}

/** The roles a set gives a policy of their own (none for a run's one policy). */
export function listedRoles(policies: { roles: string[] | null }[]): string[] {
  return policies.flatMap((p) => p.roles ?? []);
}

/** What an LLM resource carries to route calls by role (protocol/store.ts LlmResource roleModels / unassignedRole). */
export interface PolicyRouting {
  roleModels: Record<string, string>;
  unassignedRole: 'refuse' | 'default';
}

/** The gateway's routing for the policies of a set (each listed role to its policy's name); null when one serves every call. */
export function policyRouting(policies: { name: string; roles: string[] | null }[], unassignedCalls: 'refuse' | 'default'): PolicyRouting | null {
  if (policies.some((p) => p.roles === null)) return null;
  return { roleModels: Object.fromEntries(policies.flatMap((p) => p.roles!.map((r) => [r, p.name]))), unassignedRole: unassignedCalls };
}
