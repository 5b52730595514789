/**
 * A run's policy set (protocol/policy-set.ts) opened on its engine: each trained policy's weights (from its starting
 * point, or the checkpoint a resumed run continues), its KL reference when its GRPO beta > 0, and the model that serves
 * every call no policy's roles claim (the run's one policy itself; with per-role policies the run's model, untrained).
 *   full weights  a model per policy (openPolicy), and the run's model beside them as the default
 *   LoRA          the run's model opened once on the torch engine, frozen: an adapter on it per policy; the base serves
 *                 the unlisted roles and is every adapter's KL reference (its starting point)
 * The trainer, the training host's gateway and the checkpoint writer all take the one OpenPolicySet.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { GrpoSettings } from '../../protocol/grpo-settings.js';
import { DEFAULT_POLICY, isOnePolicy, policyRouting, policySet, type PolicyPlan, type PolicyRouting, type PolicySet } from '../../protocol/policy-set.js';
import type { TrainConfig } from '../../protocol/train-config.js';
import type { PolicyModel } from '../model/policy-contract.js';
import { TorchPolicyModel } from '../model/torch-engine.js';
import { openPolicy, type OpenPolicyOptions } from './open-policy.js';

/** What a saved policy's folder says about itself: loading it for another policy is a swapped assignment (policyFolderCheck). */
export const POLICY_RECORD = 'agl-policy.json';
export interface PolicyRecord {
  policy: string;
  /** Its roles; null: every call (a run's one policy). */
  roles: string[] | null;
  updates: number;
}

/**
 * Before a folder is loaded as policy `name`: if it is a saved policy of another name, the assignment of trained
 * policies to roles is swapped (a writer checkpoint given to the rewriter): an error naming both, instead of a run
 * that silently trains the wrong weights.
 */
export function policyFolderCheck(folder: string, name: string, roles: string[] | null, where: string): void {
  const f = join(folder, POLICY_RECORD);
  if (!existsSync(f)) return;
  const rec = JSON.parse(readFileSync(f, 'utf8')) as PolicyRecord;
  const said = (r: string[] | null) => (r ? r.join(', ') : 'every call');
  if (rec.policy !== name) {
    throw new Error(
      `${where}: ${folder} holds policy '${rec.policy}' (trained on ${said(rec.roles)}), not '${name}' (${said(roles)}): a swapped assignment of policies to roles? ` +
        `Give each role its own policy's folder (to start ${name} from that one on purpose, copy it without ${POLICY_RECORD})`,
    );
  }
}

/** What a resumed run continues from (checkpoint.ts readCheckpoint): the step's folder, and each policy's when saved apart. */
export interface ResumedPolicies {
  policyPath: string;
  rolePolicies?: Record<string, { dir: string; roles: string[] | null }>;
}

/** A trained policy of the set, open: its plan's settings with its weights and its KL reference. */
export interface TrainedPolicy {
  /** The name it is served and saved under (its model's). */
  name: string;
  /** The roles whose calls it serves and learns from; null: every call. */
  roles: string[] | null;
  learningRate: number;
  grpo: GrpoSettings;
  model: PolicyModel;
  /** Frozen starting weights for its KL term (grpo.beta > 0); with LoRA, the base. */
  reference: PolicyModel | null;
}

export class OpenPolicySet {
  constructor(
    readonly plan: PolicySet,
    readonly trained: TrainedPolicy[],
    /** Serves every call no trained policy's roles claim: the run's one policy, or the untrained default policy. */
    readonly fallback: PolicyModel,
    /** What dispose() frees (engines this set started). */
    private readonly owned: PolicyModel[] = [],
  ) {}

  /** The model the gateway serves under `name`: a trained policy's, else the fallback. */
  model(name: string): PolicyModel {
    return this.trained.find((p) => p.name === name)?.model ?? this.fallback;
  }

  /** The LLM resource's routing (each listed role to its policy); null when one policy serves every call. */
  routing(): PolicyRouting | null {
    return policyRouting(this.trained, this.plan.unassignedCalls);
  }

  /** One model's full weights serving every call: its checkpoint is that model's folder (no set record). */
  get oneModel(): boolean {
    return this.plan.lora === null && isOnePolicy(this.plan);
  }

  dispose(): void {
    for (const m of this.owned) m.dispose();
  }
}

/** A plan's policy with the model opened for it (served under the model's name). */
export function trainedPolicy(plan: PolicyPlan, model: PolicyModel, reference: PolicyModel | null = null): TrainedPolicy {
  return { name: model.name, roles: plan.roles, learningRate: plan.learningRate, grpo: plan.grpo, model, reference };
}

/** A run's one policy from a model already open (the config's learning rate and GRPO settings): code and tests that hold a model. */
export function onePolicySet(model: PolicyModel, config: TrainConfig, reference: PolicyModel | null = null): OpenPolicySet {
  const plan = policySet({ ...config, policies: {}, engine: { ...config.engine, lora: null } });
  return new OpenPolicySet(plan, [trainedPolicy(plan.policies[0]!, model, reference)], model);
}

export interface OpenSetOptions {
  /** openPolicy's options for every model of the set (backend, seed, engine). */
  open: OpenPolicyOptions;
  /** The checkpoint a resumed run continues from (its folder and state). */
  resume: { ckpt: ResumedPolicies; dir: string } | null;
}

/** Opens the set; on a failure, what it opened so far is stopped and the error names the policy and folder. */
export async function openPolicySet(plan: PolicySet, o: OpenSetOptions): Promise<OpenPolicySet> {
  if (o.resume) checkResumedPolicies(plan, o.resume.ckpt);
  const owned: PolicyModel[] = [];
  try {
    return plan.lora ? await openAdapters(plan, o, owned) : await openFullWeights(plan, o, owned);
  } catch (e) {
    for (const m of owned) m.dispose();
    throw e;
  }
}

/** A resumed run's policies must serve the roles the checkpoint's did: else it was made with another config. */
function checkResumedPolicies(plan: PolicySet, ckpt: ResumedPolicies): void {
  if (plan.lora === null && isOnePolicy(plan) && !ckpt.rolePolicies) return;
  const rolesOf = (roles: string[] | null) => (roles ? [...roles].sort().join(',') : '(every call)');
  const byName = (entries: [string, string][]) => JSON.stringify(Object.fromEntries(entries.sort(([a], [b]) => a.localeCompare(b))));
  const want = byName(plan.policies.map((p) => [p.name, rolesOf(p.roles)]));
  const have = byName(Object.entries(ckpt.rolePolicies ?? {}).map(([name, r]) => [name, rolesOf(r.roles)]));
  if (want !== have) throw new Error(`--resume: the checkpoint's policies serve ${have}, the run's config ${want}: resume with the config it was made with`);
}

/** Where a policy resumes from: the checkpoint's folder of it (one model's: the step's folder itself), or null for a fresh run. */
function resumedFolder(p: PolicyPlan, o: OpenSetOptions): string | null {
  if (!o.resume) return null;
  const saved = o.resume.ckpt.rolePolicies?.[p.name];
  return saved ? join(o.resume.dir, saved.dir) : o.resume.ckpt.policyPath;
}

/** What names a policy's folder in errors, and the folder check (a folder saved for another policy is refused). */
function checkedFolder(p: PolicyPlan, folder: string, resumed: boolean, what = resumed ? `the checkpoint of policy ${p.name}` : `policies.${p.name}.init`) {
  if (!folder.startsWith('builtin:') && (p.roles || resumed)) policyFolderCheck(folder, p.name, p.roles, what);
  return {
    what,
    wrap: (e: unknown): Error =>
      p.roles
        ? new Error(`${what}: cannot open ${folder} for role${p.roles.length > 1 ? 's' : ''} ${p.roles.join(', ')}: ${(e as Error).message}`, { cause: e })
        : (e as Error),
  };
}

/** Full weights: a model per policy; with per-role policies the run's model beside them serves the other roles. */
async function openFullWeights(plan: PolicySet, o: OpenSetOptions, owned: PolicyModel[]): Promise<OpenPolicySet> {
  const open = async (spec: string, opts: OpenPolicyOptions, check: ReturnType<typeof checkedFolder> | null) => {
    try {
      const m = await openPolicy(spec, { ...o.open, ...opts });
      owned.push(m);
      return m;
    } catch (e) {
      throw check ? check.wrap(e) : e;
    }
  };
  const one = isOnePolicy(plan);
  // The default policy is never trained nor saved: always the run's model. A run's one policy is its own default.
  const fallback = one ? null : await open(plan.base, { name: DEFAULT_POLICY }, null);
  const trained: TrainedPolicy[] = [];
  for (const p of plan.policies) {
    const resumed = resumedFolder(p, o);
    const spec = resumed ?? p.init!;
    const name = one ? {} : { name: p.name };
    const model = await open(spec, name, checkedFolder(p, spec, resumed !== null));
    // The KL reference is the policy's starting point: the weights it started from (a built-in model's same seeded
    // initialisation), on one rank of node 0 with nothing to train (no master weights, no moments): it only scores.
    const referenceEngine = { ...o.open.torch, procs: 1, nodes: 1, shard: 'none' as const, trainable: 'none' as const };
    const reference =
      p.grpo.beta > 0
        ? await open(
            p.init!,
            { ...(one ? {} : { name: `${p.name}-reference` }), torch: referenceEngine },
            checkedFolder(p, p.init!, false, `policies.${p.name} (its KL reference)`),
          )
        : null;
    trained.push(trainedPolicy(p, model, reference));
  }
  return new OpenPolicySet(plan, trained, fallback ?? trained[0]!.model, owned);
}

/**
 * LoRA: the run's model on the torch engine (frozen once an adapter is added), an adapter per policy: fresh, from an
 * adapter folder (`policies.<role>.init`) or, resuming, from the checkpoint's. The base is each adapter's reference.
 */
async function openAdapters(plan: PolicySet, o: OpenSetOptions, owned: PolicyModel[]): Promise<OpenPolicySet> {
  const base = await openPolicy(plan.base, { ...o.open, ...(isOnePolicy(plan) ? {} : { name: DEFAULT_POLICY }) });
  owned.push(base);
  if (!(base instanceof TorchPolicyModel)) throw new Error('engine.lora: the base model is not on the torch engine');
  const trained: TrainedPolicy[] = [];
  for (const p of plan.policies) {
    const resumed = resumedFolder(p, o);
    const init = resumed ?? p.init;
    const check = init ? checkedFolder(p, init, resumed !== null) : null;
    let model;
    try {
      model = await base.addAdapter(p.name, { init, lora: plan.lora! });
    } catch (e) {
      const who = p.roles ? ` for role${p.roles.length > 1 ? 's' : ''} ${p.roles.join(', ')}` : '';
      throw new Error(`${init ? `${check!.what}: cannot open ${init}` : 'engine.lora: cannot add an adapter'}${who}: ${(e as Error).message}`, { cause: e });
    }
    trained.push(trainedPolicy(p, model, p.grpo.beta > 0 ? base : null));
  }
  return new OpenPolicySet(plan, trained, isOnePolicy(plan) ? trained[0]!.model : base, owned);
}
