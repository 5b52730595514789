/**
 * `agl serve --model <checkpoint>` on a run that trained one policy per role: each role is served by its own policy
 * as the run served it, every other role by the default policy (the run's starting model, named in the checkpoint's
 * agl-policies.json; `--default-model` when it has moved), and a call that names no role is refused or served by the
 * default as the run's `unassignedCalls` said. Each recorded call names the policy and the updates it had.
 * Everything is checked before the daemon listens (each policy's folder holds a model or an adapter, and is the
 * policy its record says: a swapped folder is refused); the weights load on the first call of each policy.
 * POST /v1/agl/policy/load with another such folder (the same policies) swaps them all at once.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { PolicyInfo } from '../../protocol/api.js';
import { findRolePolicies, policyFolderCheck, type RolesRecord } from '../algorithm/checkpoint.js';
import { engineOptions, type EngineConfig } from '../algorithm/engine-config.js';
import type { PolicyModel } from '../model/policy-contract.js';
import type { TorchPolicyModel } from '../model/torch-engine.js';

interface RoleSet {
  folder: string;
  record: RolesRecord;
  defaultSpec: string;
}

/** The folder and record `spec` names, checked: every policy's folder holds weights of that policy; the default exists. */
export function checkRoleSet(spec: string, defaultOverride: string | undefined, engine: EngineConfig): RoleSet | null {
  const found = findRolePolicies(resolve(spec));
  if (!found) return null;
  const { folder, record } = found;
  const names = Object.keys(record.policies);
  if (names.length === 0) throw new Error(`${join(folder, 'agl-policies.json')} names no policy`);
  for (const [name, p] of Object.entries(record.policies)) {
    const dir = join(folder, p.dir);
    const file = record.lora ? 'adapter_config.json' : 'config.json';
    if (!existsSync(join(dir, file)))
      throw new Error(
        `policy ${name} (role${p.roles.length > 1 ? 's' : ''} ${p.roles.join(', ')}): ${dir} holds no ${record.lora ? 'LoRA adapter' : 'model'} (${file} missing)`,
      );
    policyFolderCheck(dir, name, p.roles, `policy ${name}`);
  }
  if (record.lora && engine.kind !== 'torch') throw new Error(`${folder} holds LoRA adapters (one per role) on the torch engine: serve it with --engine torch`);
  const defaultSpec = defaultOverride ?? record.default;
  if (!defaultSpec.startsWith('builtin:') && !existsSync(join(defaultSpec, 'config.json')))
    throw new Error(
      `the default policy ${defaultSpec} (the run's starting model, which serves every role without a policy of its own${record.lora ? ' and is the base of the adapters' : ''}) holds no model: ` +
        `give its folder with --default-model DIR`,
    );
  return { folder, record, defaultSpec };
}

/** Opens a folder or builtin for `agl serve` on its engine (loaded lazily: TF.js and the torch engine take seconds). */
export function openForServing(
  spec: string,
  o: { backend: string | undefined; engine: EngineConfig; dataDir: string; log: (m: string) => void; seed?: number; name?: string },
): Promise<PolicyModel> {
  const opts = engineOptions(o.engine, { dataDir: o.dataDir, log: (line) => o.log(`engine: ${line}`) });
  return import('../algorithm/open-policy.js').then(({ openPolicy }) =>
    openPolicy(spec, { backend: o.backend, ...(o.seed !== undefined ? { seed: o.seed } : {}), ...opts, ...(o.name ? { name: o.name } : {}) }),
  );
}

/** Each role to its policy's name, and what a call naming no role gets: the routing a set of role policies gives. */
function routingOf(record: RolesRecord): { roleModels: Record<string, string>; unassignedRole: 'refuse' | 'default' } {
  const roleModels: Record<string, string> = {};
  for (const [name, p] of Object.entries(record.policies)) for (const r of p.roles) roleModels[r] = name;
  return { roleModels, unassignedRole: record.unassignedCalls };
}

export class ServedRolePolicies {
  private set: RoleSet;
  private route: ReturnType<typeof routingOf>;
  private opened = new Map<string, Promise<PolicyModel>>();
  private all: Promise<PolicyModel>[] = [];
  private loadedAt: number | null = null;
  private reloads = 0;

  constructor(
    set: RoleSet,
    private readonly backend: string | undefined,
    private readonly engine: EngineConfig,
    private readonly dataDir: string,
    private readonly log: (m: string) => void,
  ) {
    this.set = set;
    this.route = routingOf(set.record);
  }

  /** The LLM resource's routing (asked on every call; made once per set of policies). */
  routing(): ReturnType<typeof routingOf> {
    return this.route;
  }

  /** The updates a policy had when saved; null for the default policy (never trained). */
  version(model: string): number | null {
    return this.set.record.policies[model]?.updates ?? null;
  }

  private openDefault(set: RoleSet): Promise<PolicyModel> {
    return openForServing(set.defaultSpec, { ...this.how(), seed: set.record.seed, name: 'default' });
  }

  private openPolicy(set: RoleSet, name: string, base: () => Promise<PolicyModel>): Promise<PolicyModel> {
    const dir = join(set.folder, set.record.policies[name]!.dir);
    if (set.record.lora) {
      const lora = set.record.lora;
      return base().then((b) => (b as TorchPolicyModel).addAdapter(name, { init: dir, lora }));
    }
    return openForServing(dir, { ...this.how(), name });
  }

  private how() {
    return { backend: this.backend, engine: this.engine, dataDir: this.dataDir, log: this.log };
  }

  /** The policy serving `model` (a policy's name, else the default), opened on its first call. */
  get(model: string): Promise<PolicyModel> {
    const key = Object.hasOwn(this.set.record.policies, model) ? model : '';
    let p = this.opened.get(key);
    if (!p) {
      const set = this.set;
      const base = () => this.get('');
      const what = key ? `policy ${key} (${join(set.folder, set.record.policies[key]!.dir)})` : `the default policy ${set.defaultSpec}`;
      p = (key ? this.openPolicy(set, key, base) : this.openDefault(set)).then(
        (m) => {
          this.log(`${what} loaded (${m.backend})`);
          this.loadedAt = Date.now();
          return m;
        },
        (err) => {
          this.opened.delete(key);
          throw new Error(`cannot load ${what}: ${(err as Error).message}`);
        },
      );
      this.opened.set(key, p);
      this.all.push(p);
    }
    return p;
  }

  describe(): PolicyInfo {
    return {
      spec: this.set.folder,
      engine: this.engine.kind,
      name: 'default',
      backend: null,
      loadedAt: this.loadedAt,
      reloads: this.reloads,
      default: this.set.defaultSpec,
      unassignedCalls: this.set.record.unassignedCalls,
      policies: Object.entries(this.set.record.policies).map(([name, p]) => ({
        name,
        roles: p.roles,
        folder: join(this.set.folder, p.dir),
        updates: p.updates,
      })),
    };
  }

  /** Swaps in another folder of the same policies (a later checkpoint of the run); the old weights go a minute later. */
  async load(dir: string): Promise<PolicyInfo> {
    const next = checkRoleSet(dir, this.set.defaultSpec, this.engine);
    if (!next) throw new Error(`${dir} holds no role policies (agl-policies.json): this daemon serves one policy per role`);
    const want = Object.keys(this.set.record.policies).sort().join(', '),
      have = Object.keys(next.record.policies).sort().join(', ');
    if (want !== have) throw new Error(`${dir} holds policies ${have}, this daemon serves ${want}`);
    const old = this.all;
    this.set = next;
    this.route = routingOf(next.record);
    this.opened = new Map();
    this.all = [];
    // Open them now, so the swap is complete when this answers.
    await Promise.all(Object.keys(next.record.policies).map((n) => this.get(n)));
    this.reloads++;
    this.log(`role policies ${next.folder} loaded, reload ${this.reloads}`);
    const dispose = () => old.forEach((p) => p.then((m) => m.dispose()).catch(() => {}));
    setTimeout(dispose, 60_000).unref();
    return this.describe();
  }
}
