/**
 * What `agl serve --model` serves: one model (a folder or builtin:<size>), or a training checkpoint's policy set
 * (its `agl-policies.json`: policies per role, or LoRA adapters). A set is served as its run served it: each listed
 * role by its own policy, every other role by the default policy (the run's starting model, named in the record;
 * `--default-model` when it has moved), a call that names no role refused or served by the default as the run's
 * `unassignedCalls` said, and a run's one LoRA policy serving every call as its adapter on that model. Each recorded
 * call names the policy and the updates it had. Everything is checked before the daemon listens (each policy's folder
 * holds a model or an adapter, and is the policy its record says: a swapped folder is refused); the weights load on
 * the first call of each policy. POST /v1/agl/policy/load with another folder of the same kind (the same policies)
 * swaps them all at once: the new weights serve every call made after the swap, the old are freed a minute later.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { PolicyInfo } from '../../protocol/api.js';
import { policyRouting, type PolicyRouting } from '../../protocol/policy-set.js';
import { findPolicySet, type PolicySetRecord } from '../algorithm/checkpoint.js';
import { engineOptions, type EngineConfig } from '../algorithm/engine-config.js';
import { policyFolderCheck } from '../algorithm/open-policy-set.js';
import type { PolicyModel } from '../model/policy-contract.js';
import type { TorchPolicyModel } from '../model/torch-engine.js';

/** A served source: a model spec alone (record null), or a set's folder and record with its default model. */
export interface ServedSource {
  folder: string;
  record: PolicySetRecord | null;
  defaultSpec: string;
}

/** The set record `spec` names, checked: every policy's folder holds weights of that policy; the default exists. Null: no set. */
export function checkPolicySet(spec: string, defaultOverride: string | undefined, engine: EngineConfig): ServedSource | null {
  const found = findPolicySet(resolve(spec));
  if (!found) return null;
  const { folder, record } = found;
  const names = Object.keys(record.policies);
  if (names.length === 0) throw new Error(`${join(folder, 'agl-policies.json')} names no policy`);
  for (const [name, p] of Object.entries(record.policies)) {
    const dir = join(folder, p.dir);
    const file = record.lora ? 'adapter_config.json' : 'config.json';
    const roles = p.roles ? ` (role${p.roles.length > 1 ? 's' : ''} ${p.roles.join(', ')})` : '';
    if (!existsSync(join(dir, file))) throw new Error(`policy ${name}${roles}: ${dir} holds no ${record.lora ? 'LoRA adapter' : 'model'} (${file} missing)`);
    policyFolderCheck(dir, name, p.roles, `policy ${name}`);
  }
  if (record.lora && engine.kind !== 'torch') throw new Error(`${folder} holds LoRA adapters on the torch engine: serve it with --engine torch`);
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
  const opts = engineOptions(o.engine, { dataDir: o.dataDir, log: (line) => o.log(`engine: ${line}`), serving: true });
  return import('../algorithm/open-policy.js').then(({ openPolicy }) =>
    openPolicy(spec, { backend: o.backend, ...(o.seed !== undefined ? { seed: o.seed } : {}), ...opts, ...(o.name ? { name: o.name } : {}) }),
  );
}

/** The policies of a record as the set's routing reads them. */
const policiesOf = (record: PolicySetRecord) => Object.entries(record.policies).map(([name, p]) => ({ name, roles: p.roles }));

/** The gateway's local policies for `agl serve --model`: one model, or a set, each opened on its first call. */
export class ServedPolicySet {
  private opened = new Map<string, Promise<PolicyModel>>();
  private loadedDefault: PolicyModel | null = null;
  private loadedAt: number | null = null;
  private reloads = 0;

  constructor(
    private source: ServedSource,
    private readonly backend: string | undefined,
    private readonly engine: EngineConfig,
    private readonly dataDir: string,
    private readonly log: (m: string) => void,
  ) {}

  /** The LLM resource's routing for local calls (asked on every call): null unless the set has policies per role. */
  routing(): PolicyRouting | null {
    return this.source.record ? policyRouting(policiesOf(this.source.record), this.source.record.unassignedCalls) : null;
  }

  /** The updates a policy had when saved; null for the default policy (never trained). */
  version(model: string): number | null {
    return this.source.record?.policies[model]?.updates ?? null;
  }

  /** Which of the source's models serves calls for `model`: a policy by its name, a run's one policy for any, else the default (''). */
  private keyFor(source: ServedSource, model: string): string {
    const policies = source.record?.policies ?? {};
    if (Object.hasOwn(policies, model)) return model;
    return Object.entries(policies).find(([, p]) => p.roles === null)?.[0] ?? '';
  }

  /** The policy serving `model`, opened on its first call. */
  get(model: string): Promise<PolicyModel> {
    return this.open(this.source, this.opened, this.keyFor(this.source, model));
  }

  private open(source: ServedSource, opened: Map<string, Promise<PolicyModel>>, key: string): Promise<PolicyModel> {
    let p = opened.get(key);
    if (p) return p;
    const how = { backend: this.backend, engine: this.engine, dataDir: this.dataDir, log: this.log };
    const { record } = source;
    const dir = key ? join(source.folder, record!.policies[key]!.dir) : null;
    const what = dir ? `policy ${key} (${dir})` : record ? `the default policy ${source.defaultSpec}` : `the policy --model ${source.defaultSpec}`;
    const opening = !dir
      ? openForServing(source.defaultSpec, { ...how, ...(record ? { seed: record.seed, name: 'default' } : {}) })
      : record!.lora
        ? this.open(source, opened, '').then((b) => (b as TorchPolicyModel).addAdapter(key, { init: dir, lora: record!.lora! }))
        : openForServing(dir, { ...how, name: key });
    p = opening.then(
      (m) => {
        this.log(`${what} loaded (${m.backend})`);
        if (!key) this.loadedDefault = m;
        this.loadedAt = Date.now();
        return m;
      },
      (err) => {
        opened.delete(key);
        throw new Error(`cannot load ${what}: ${(err as Error).message}`);
      },
    );
    opened.set(key, p);
    return p;
  }

  describe(): PolicyInfo {
    const { record, folder, defaultSpec } = this.source;
    const common = { engine: this.engine.kind, loadedAt: this.loadedAt, reloads: this.reloads };
    if (!record) return { spec: defaultSpec, ...common, name: this.loadedDefault?.name ?? null, backend: this.loadedDefault?.backend ?? null };
    return {
      spec: folder,
      ...common,
      name: 'default',
      backend: null,
      default: defaultSpec,
      unassignedCalls: record.unassignedCalls,
      policies: Object.entries(record.policies).map(([name, p]) => ({ name, roles: p.roles, folder: join(folder, p.dir), updates: p.updates })),
    };
  }

  /** The folder `dir` as a source of the kind served now (one model, or a set of the same policies), checked. */
  private sourceAt(dir: string): ServedSource {
    const now = this.source.record;
    if (!now) {
      if (!existsSync(join(dir, 'config.json'))) throw new Error(`${dir} holds no model (config.json missing)`);
      return { folder: dir, record: null, defaultSpec: dir };
    }
    const next = checkPolicySet(dir, this.source.defaultSpec, this.engine);
    if (!next) throw new Error(`${dir} holds no policy set (agl-policies.json): this daemon serves the policies of a checkpoint`);
    const want = Object.keys(now.policies).sort().join(', '),
      have = Object.keys(next.record!.policies).sort().join(', ');
    if (want !== have) throw new Error(`${dir} holds policies ${have}, this daemon serves ${want}`);
    return next;
  }

  /** Swaps in another folder (a later checkpoint of the run, or pushed weights), opened before the swap. */
  async load(dir: string): Promise<PolicyInfo> {
    const next = this.sourceAt(dir);
    const opened = new Map<string, Promise<PolicyModel>>();
    const keys = next.record ? Object.keys(next.record.policies) : [''];
    await Promise.all(keys.map((k) => this.open(next, opened, k)));
    const old = [...this.opened.values()];
    this.source = next;
    this.opened = opened;
    this.reloads++;
    this.log(`${next.record ? 'policies' : 'policy'} ${dir} loaded, reload ${this.reloads}`);
    const dispose = () => old.forEach((p) => p.then((m) => m.dispose()).catch(() => {}));
    setTimeout(dispose, 60_000).unref();
    return this.describe();
  }
}
