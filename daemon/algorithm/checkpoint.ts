/**
 * Training checkpoints, crash-safe: the policy is saved to a fresh `policy-<step>` folder, then
 * `state.json` (trainer state + which folder) is replaced atomically (write + rename), then older policy
 * folders are removed. A kill at any moment leaves a state.json that points at a complete policy folder.
 * The best policy so far (highest held-out reward) is kept apart in `best/`, written the same way.
 * A policy set (open-policy-set.ts) other than one model's full weights (policies per role, or LoRA adapters): the
 * folder holds each trained policy in `<name>/` (with `agl-policy.json`: which policy, which roles, how many updates)
 * and the set's record `agl-policies.json`; the run's model (the default policy, LoRA's base) is not saved.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { LoraSettings } from '../../protocol/engine.js';
import type { TrainConfig } from '../../protocol/train-config.js';
import { POLICY_RECORD, type OpenPolicySet, type PolicyRecord } from './open-policy-set.js';
import { policyUpdates, type TrainerState } from './trainer-state.js';

export const STATE_FILE = 'state.json';

export interface CheckpointState {
  trainer: TrainerState;
  policyDir: string;
  /** Each trained policy's folder (relative to the checkpoint dir) and its roles (null: every call); absent for one model's weights. */
  rolePolicies?: Record<string, { dir: string; roles: string[] | null }>;
  agent: string;
  config: unknown;
  savedAt: number;
}

/**
 * What a checkpoint's folder of policies (`policy-<step>/` or `best/`, whenever the set is more than one model's full
 * weights) needs to be served as the run served it (`agl serve --model <folder>`): the run's model (the default policy
 * answering every role without a policy of its own, and LoRA's base; never saved in the checkpoint), what a call naming
 * no role gets, and each policy's folder, roles and updates.
 */
export const SET_RECORD = 'agl-policies.json';
export interface PolicySetRecord {
  /** The run's model (a folder, made absolute, or builtin:<size> with `seed`). */
  default: string;
  seed?: number;
  unassignedCalls: 'refuse' | 'default';
  /** Set when each policy is a LoRA adapter on the default (torch engine): the adapters' settings. */
  lora: LoraSettings | null;
  /** Each trained policy: its folder (relative), its roles (null: every call, a run's one policy), its updates. */
  policies: Record<string, { dir: string; roles: string[] | null; updates: number }>;
}

function writeSetRecord(folder: string, set: OpenPolicySet, trainer: TrainerState, seed: number | undefined): void {
  const def = set.plan.base.startsWith('builtin:') ? set.plan.base : resolve(set.plan.base);
  const record: PolicySetRecord = {
    default: def,
    ...(seed !== undefined ? { seed } : {}),
    unassignedCalls: set.plan.unassignedCalls,
    lora: set.plan.lora,
    policies: Object.fromEntries(set.trained.map((p) => [p.name, { dir: p.name, roles: p.roles, updates: policyUpdates(trainer, p) }])),
  };
  writeFileSync(join(folder, SET_RECORD), `${JSON.stringify(record, null, 2)}\n`);
}

/**
 * The folder of a set record `spec` names, with its record, or null when it names none: the folder itself (holding
 * agl-policies.json), or a checkpoint folder (state.json) whose last step holds one.
 */
export function findPolicySet(spec: string): { folder: string; record: PolicySetRecord } | null {
  if (spec.startsWith('builtin:')) return null;
  const folder = lastStepFolder(spec);
  const f = join(folder, SET_RECORD);
  if (!existsSync(f)) return null;
  let record: PolicySetRecord;
  try {
    record = JSON.parse(readFileSync(f, 'utf8')) as PolicySetRecord;
  } catch (e) {
    throw new Error(`${f} is not readable: ${(e as Error).message}`, { cause: e });
  }
  if (typeof record?.default !== 'string' || !record.policies || typeof record.policies !== 'object')
    throw new Error(`${f} is not a policy-set record (it needs "default" and "policies")`);
  return { folder, record };
}

/**
 * The folder a `--model` spec serves: a training run's checkpoint folder (state.json, no model or set record of its
 * own) stands for its last step's `policy-<step>/`; anything else is itself.
 */
export function lastStepFolder(spec: string): string {
  if (spec.startsWith('builtin:') || existsSync(join(spec, 'config.json')) || existsSync(join(spec, SET_RECORD))) return spec;
  return existsSync(join(spec, STATE_FILE)) ? readCheckpoint(spec)!.policyPath : spec;
}

/**
 * Saves the set into `folder`: one model's full weights as the folder itself; otherwise each trained policy in
 * `<name>/` (its weights or adapter, and agl-policy.json: which policy, which roles, how many updates) with the set's
 * record beside them. Returns each policy's folder and roles for state.json (none for one model).
 */
async function saveSet(
  folder: string,
  set: OpenPolicySet,
  trainer: TrainerState,
  seed: number,
): Promise<Record<string, { dir: string; roles: string[] | null }> | null> {
  if (set.oneModel) {
    await set.fallback.save(folder);
    return null;
  }
  const saved: Record<string, { dir: string; roles: string[] | null }> = {};
  for (const p of set.trained) {
    await p.model.save(join(folder, p.name));
    const record: PolicyRecord = { policy: p.name, roles: p.roles, updates: policyUpdates(trainer, p) };
    writeFileSync(join(folder, p.name, POLICY_RECORD), `${JSON.stringify(record, null, 2)}\n`);
    saved[p.name] = { dir: p.name, roles: p.roles };
  }
  writeSetRecord(folder, set, trainer, seed);
  return saved;
}

export async function saveCheckpoint(dir: string, set: OpenPolicySet, trainer: TrainerState, extra: { agent: string; config: TrainConfig }): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const policyDir = `policy-${trainer.step}`;
  rmSync(join(dir, policyDir), { recursive: true, force: true });
  const saved = await saveSet(join(dir, policyDir), set, trainer, extra.config.training.seed);
  const state: CheckpointState = {
    trainer: structuredClone(trainer),
    policyDir,
    ...(saved ? { rolePolicies: Object.fromEntries(Object.entries(saved).map(([n, p]) => [n, { ...p, dir: join(policyDir, p.dir) }])) } : {}),
    agent: extra.agent,
    config: extra.config,
    savedAt: Date.now(),
  };
  writeFileSync(join(dir, `${STATE_FILE}.tmp`), JSON.stringify(state, null, 2));
  renameSync(join(dir, `${STATE_FILE}.tmp`), join(dir, STATE_FILE));
  for (const name of readdirSync(dir)) {
    if (/^policy-\d+$/.test(name) && name !== policyDir) rmSync(join(dir, name), { recursive: true, force: true });
  }
  return join(dir, policyDir);
}

/** The last checkpoint in `dir`, or null when there is none. */
export function readCheckpoint(dir: string): (CheckpointState & { policyPath: string }) | null {
  const p = join(dir, STATE_FILE);
  if (!existsSync(p)) return null;
  let state: CheckpointState;
  try {
    state = JSON.parse(readFileSync(p, 'utf8')) as CheckpointState;
  } catch (e) {
    throw new Error(`${p} is not a readable checkpoint state: ${(e as Error).message}`, { cause: e });
  }
  // Checkpoints written before steps were numbered from 1 (protocol/metrics.ts FIRST_TRAINING_STEP) end their training
  // rewards at step - 1: renumbered, so a resumed run's report draws them where the store now has them.
  const train = state.trainer.train;
  if (train.length && train.at(-1)!.step === state.trainer.step - 1) state.trainer.train = train.map((p) => ({ ...p, step: p.step + 1 }));
  const policyPath = join(dir, state.policyDir);
  const models = state.rolePolicies ? Object.values(state.rolePolicies).map((r) => join(dir, r.dir)) : [policyPath];
  for (const m of models)
    if (!existsSync(join(m, 'config.json')) && !existsSync(join(m, 'adapter_config.json')))
      throw new Error(`${p} points at ${m}, which holds no model (config.json missing) nor LoRA adapter (adapter_config.json)`);
  return { ...state, policyPath };
}

export const BEST_DIR = 'best';

/** Keeps the set as the best so far in `<dir>/best` (written beside, then swapped in; `trainer.best` set); returns that folder. */
export async function saveBestPolicy(dir: string, set: OpenPolicySet, trainer: TrainerState, seed: number): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const tmp = join(dir, `${BEST_DIR}.tmp`),
    old = join(dir, `${BEST_DIR}.old`),
    target = join(dir, BEST_DIR);
  rmSync(tmp, { recursive: true, force: true });
  await saveSet(tmp, set, trainer, seed);
  writeFileSync(join(tmp, 'best.json'), JSON.stringify({ ...trainer.best, savedAt: Date.now() }, null, 2));
  rmSync(old, { recursive: true, force: true });
  if (existsSync(target)) renameSync(target, old);
  renameSync(tmp, target);
  rmSync(old, { recursive: true, force: true });
  return target;
}
