/**
 * What `agl serve --model` serves (its ServedPolicies, daemon/server/served-policies.ts): one model (a folder or
 * builtin:<size>), or a training checkpoint's policy set (its `agl-policies.json`: policies per role, or LoRA
 * adapters), opened with openPolicySet as the run opened it. A set is served as its run served it: each listed role by
 * its own policy, every other role by the default policy (the run's starting model, named in the record;
 * `--default-model` when it has moved), a call that names no role refused or served by the default as the run's
 * `unassignedCalls` said, and a run's one LoRA policy serving every call as its adapter on that model. Each recorded
 * call names the policy and the updates it had. Everything is checked before the daemon listens (each policy's folder
 * holds a model or an adapter, and is the policy its record says: a swapped folder is refused); the weights load on
 * the first call. POST /v1/agl/policy/load with another folder of the same kind (the same policies) swaps them all at
 * once: the new weights serve every call made after the swap, the old are freed a minute later.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { PolicyInfo } from '../../protocol/api.js';
import { resolveGrpo } from '../../protocol/grpo-settings.js';
import { ONE_POLICY, policyRouting, roleOwners, type PolicyRouting, type PolicySet } from '../../protocol/policy-set.js';
import { TrainingSection } from '../../protocol/train-config.js';
import { findPolicySet, lastStepFolder, type PolicySetRecord } from './checkpoint.js';
import { engineOptions, type EngineConfig } from './engine-config.js';
import { type OpenPolicySet, openPolicySet, policyFolderCheck } from './open-policy-set.js';
import type { PolicyModel } from '../model/policy-contract.js';
import type { ServedPolicies } from '../server/served-policies.js';

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

/**
 * What a `--model` serves, as `agl serve`, `agl eval` and `agl optimize` read it, checked before anything runs: a
 * training run's checkpoint folder its last step (checkpoint.ts lastStepFolder), a policy set's checkpoint its set
 * (checkPolicySet), builtin:<size> or a model folder itself; a folder with none of these is refused, naming what it lacks.
 */
export function servedSourceOf(model: string, engine: EngineConfig, defaultOverride?: string): ServedSource {
  const spec = lastStepFolder(model);
  const set = checkPolicySet(spec, defaultOverride, engine);
  if (set) return set;
  if (!spec.startsWith('builtin:') && !existsSync(join(spec, 'config.json')))
    throw new Error(
      `${spec} holds no model (no config.json): give builtin:<size>, a model folder, a checkpoint (agl sft --out, a run's policy-<step>) or a training run's folder`,
    );
  return { folder: spec, record: null, defaultSpec: spec };
}

/** The policies of a record as the set's routing reads them. */
const policiesOf = (record: PolicySetRecord) => Object.entries(record.policies).map(([name, p]) => ({ name, roles: p.roles }));

/** A served source as a policy set (protocol/policy-set.ts): one model serving every call, or the record's policies on its default. */
export function servedPlan(source: ServedSource): PolicySet {
  // Nothing trains while serving: the defaults stand in for settings no update reads.
  const serving = { learningRate: TrainingSection.parse({}).learningRate, grpo: resolveGrpo({}) };
  const { record } = source;
  if (!record)
    return {
      policies: [{ name: ONE_POLICY, roles: null, init: source.defaultSpec, ...serving }],
      owners: {},
      base: source.defaultSpec,
      unassignedCalls: 'refuse',
      lora: null,
    };
  const owners = roleOwners(Object.fromEntries(policiesOf(record).flatMap((p) => (p.roles ?? []).map((r) => [r, r === p.name ? {} : { shared: p.name }]))));
  return {
    policies: Object.entries(record.policies).map(([name, p]) => ({ name, roles: p.roles, init: join(source.folder, p.dir), ...serving })),
    owners,
    base: source.defaultSpec,
    unassignedCalls: record.unassignedCalls,
    lora: record.lora,
  };
}

/** How `agl serve` opens models: its TF.js backend and engine, nothing trainable. */
export interface ServingOptions {
  backend: string | undefined;
  engine: EngineConfig;
  dataDir: string;
  log: (m: string) => void;
}

/** The gateway's local policies for `agl serve --model`: one model, or a set, opened whole on the first call. */
export class ServedPolicySet implements ServedPolicies {
  private opened: Promise<OpenPolicySet> | null = null;
  private current: OpenPolicySet | null = null;
  private loadedAt: number | null = null;
  private reloads = 0;

  constructor(
    private source: ServedSource,
    private readonly how: ServingOptions,
  ) {}

  /** The LLM resource's routing for local calls (asked on every call): null unless the set has policies per role. */
  routing(): PolicyRouting | null {
    return this.source.record ? policyRouting(policiesOf(this.source.record), this.source.record.unassignedCalls) : null;
  }

  /** The updates a policy had when saved; null for the default policy (never trained). */
  version(model: string): number | null {
    return this.source.record?.policies[model]?.updates ?? null;
  }

  /** The policy serving `name` (a policy by its name, every other name by the default), the set opened on its first call. */
  async model(name: string): Promise<PolicyModel> {
    this.opened ??= this.open(this.source).then(
      (set) => {
        this.current = set;
        this.loadedAt = Date.now();
        return set;
      },
      (err) => {
        this.opened = null;
        throw err;
      },
    );
    return (await this.opened).model(name);
  }

  /** Opens a source's set as its run did (openPolicySet), for serving only. */
  private async open(source: ServedSource): Promise<OpenPolicySet> {
    const { record } = source;
    const what = record ? `the policies of ${source.folder} (default ${source.defaultSpec})` : `the policy --model ${source.defaultSpec}`;
    const engine = engineOptions(this.how.engine, { dataDir: this.how.dataDir, log: (line) => this.how.log(`engine: ${line}`), serving: true });
    try {
      const set = await openPolicySet(servedPlan(source), {
        open: { backend: this.how.backend, ...(record ? { seed: record.seed } : {}), ...engine },
        resume: null,
      });
      this.how.log(`${what} loaded (${set.fallback.backend})`);
      return set;
    } catch (err) {
      throw new Error(`cannot load ${what}: ${(err as Error).message}`, { cause: err });
    }
  }

  describe(): PolicyInfo {
    const { record, folder, defaultSpec } = this.source;
    const common = { engine: this.how.engine.kind, loadedAt: this.loadedAt, reloads: this.reloads };
    const fallback = this.current?.fallback ?? null;
    if (!record) return { spec: defaultSpec, ...common, name: fallback?.name ?? null, backend: fallback?.backend ?? null };
    return {
      spec: folder,
      ...common,
      name: fallback?.name ?? null,
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
    const next = checkPolicySet(dir, this.source.defaultSpec, this.how.engine);
    if (!next) throw new Error(`${dir} holds no policy set (agl-policies.json): this daemon serves the policies of a checkpoint`);
    const want = Object.keys(now.policies).sort().join(', '),
      have = Object.keys(next.record!.policies).sort().join(', ');
    if (want !== have) throw new Error(`${dir} holds policies ${have}, this daemon serves ${want}`);
    return next;
  }

  /** Swaps in another folder (a later checkpoint of the run, or pushed weights), opened before the swap. */
  async load(dir: string): Promise<PolicyInfo> {
    const next = this.sourceAt(dir);
    const set = await this.open(next);
    const old = this.opened;
    this.source = next;
    this.current = set;
    this.opened = Promise.resolve(set);
    this.loadedAt = Date.now();
    this.reloads++;
    this.how.log(`${next.record ? 'policies' : 'policy'} ${dir} loaded, reload ${this.reloads}`);
    const dispose = () => old?.then((s) => s.dispose()).catch(() => {});
    setTimeout(dispose, 60_000).unref();
    return this.describe();
  }
}
