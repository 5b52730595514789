/**
 * Training checkpoints, crash-safe: the policy is saved to a fresh `policy-<step>` folder, then
 * `state.json` (trainer state + which folder) is replaced atomically (write + rename), then older policy
 * folders are removed. A kill at any moment leaves a state.json that points at a complete policy folder.
 * The best policy so far (highest held-out reward) is kept apart in `best/`, written the same way.
 * One policy per role: the folder holds each trained policy in `<name>/` (with `agl-policy.json`: which policy, which
 * roles, how many updates), and the untrained default policy is not saved (it is the run's starting model).
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { PolicyModel } from '../model/policy-contract.js';
import type { TrainerState } from './trainer.js';
import type { LoraSettings } from '../../protocol/engine.js';

export const STATE_FILE = 'state.json';

export interface CheckpointState {
  trainer: TrainerState;
  policyDir: string;
  /** One policy per role: each trained policy's folder (relative to the checkpoint dir) and its roles. */
  rolePolicies?: Record<string, { dir: string; roles: string[] }>;
  agent: string;
  config: unknown;
  savedAt: number;
}

/** A trained role policy to save with a checkpoint. */
export interface SavedRolePolicy {
  name: string;
  roles: string[];
  model: PolicyModel;
}

/** What a role policy's folder says about itself: loading it for another policy is a swapped assignment (policyFolderCheck). */
export const POLICY_RECORD = 'agl-policy.json';
export interface PolicyRecord {
  policy: string;
  roles: string[];
  updates: number;
}

/**
 * What a folder of role policies (a checkpoint's `policy-<step>/` or `best/`) needs to be served as the run served it
 * (`agl serve --model <folder>`): the default policy that answers every other role (the run's starting model, never
 * saved in the checkpoint), what a call naming no role gets, and each policy's roles.
 */
export const ROLES_RECORD = 'agl-policies.json';
export interface RolesRecord {
  /** The default policy: the run's starting model (a folder, made absolute, or builtin:<size> with `seed`). */
  default: string;
  seed?: number;
  unassignedCalls: 'refuse' | 'default';
  /** Set when each policy is a LoRA adapter on the default (torch engine): the adapters' settings. */
  lora: LoraSettings | null;
  /** Each trained policy: its folder (relative), its roles, its updates. */
  policies: Record<string, { dir: string; roles: string[]; updates: number }>;
}
/** How the run serves roles it did not give a policy of their own (written with the role policies). */
export type RoleServing = Omit<RolesRecord, 'policies'>;

function writeRolesRecord(folder: string, rolePolicies: SavedRolePolicy[], trainer: TrainerState, serving: RoleServing): void {
  const def = serving.default.startsWith('builtin:') ? serving.default : resolve(serving.default);
  const record: RolesRecord = {
    default: def,
    ...(serving.seed !== undefined ? { seed: serving.seed } : {}),
    unassignedCalls: serving.unassignedCalls,
    lora: serving.lora,
    policies: Object.fromEntries(rolePolicies.map((p) => [p.name, { dir: p.name, roles: p.roles, updates: trainer.policies?.[p.name]?.updates ?? 0 }])),
  };
  writeFileSync(join(folder, ROLES_RECORD), `${JSON.stringify(record, null, 2)}\n`);
}

/**
 * The folder of role policies `spec` names, with its record, or null when it names none: the folder itself (holding
 * agl-policies.json), or a checkpoint folder (state.json) whose last step holds role policies.
 */
export function findRolePolicies(spec: string): { folder: string; record: RolesRecord } | null {
  if (spec.startsWith('builtin:')) return null;
  const folder = lastStepFolder(spec);
  const f = join(folder, ROLES_RECORD);
  if (!existsSync(f)) return null;
  let record: RolesRecord;
  try {
    record = JSON.parse(readFileSync(f, 'utf8')) as RolesRecord;
  } catch (e) {
    throw new Error(`${f} is not readable: ${(e as Error).message}`, { cause: e });
  }
  if (typeof record?.default !== 'string' || !record.policies || typeof record.policies !== 'object')
    throw new Error(`${f} is not a role-policy record (it needs "default" and "policies")`);
  return { folder, record };
}

/**
 * The folder a `--model` spec serves: a training run's checkpoint folder (state.json, no model or role record of its
 * own) stands for its last step's `policy-<step>/`; anything else is itself.
 */
export function lastStepFolder(spec: string): string {
  if (spec.startsWith('builtin:') || existsSync(join(spec, 'config.json')) || existsSync(join(spec, ROLES_RECORD))) return spec;
  return existsSync(join(spec, STATE_FILE)) ? readCheckpoint(spec)!.policyPath : spec;
}

/** Saves a role policy's weights and its record. */
async function saveRolePolicy(folder: string, p: SavedRolePolicy, trainer: TrainerState): Promise<void> {
  await p.model.save(folder);
  const record: PolicyRecord = { policy: p.name, roles: p.roles, updates: trainer.policies?.[p.name]?.updates ?? 0 };
  writeFileSync(join(folder, POLICY_RECORD), `${JSON.stringify(record, null, 2)}\n`);
}

/**
 * Before a folder is loaded as policy `name`: if it is a saved role policy of another name, the assignment of trained
 * policies to roles is swapped (a writer checkpoint given to the rewriter): an error naming both, instead of a run
 * that silently trains the wrong weights.
 */
export function policyFolderCheck(folder: string, name: string, roles: string[], where: string): void {
  const f = join(folder, POLICY_RECORD);
  if (!existsSync(f)) return;
  const rec = JSON.parse(readFileSync(f, 'utf8')) as PolicyRecord;
  if (rec.policy !== name) {
    throw new Error(
      `${where}: ${folder} holds policy '${rec.policy}' (trained on ${rec.roles.join(', ')}), not '${name}' (${roles.join(', ')}): a swapped assignment of policies to roles? ` +
        `Give each role its own policy's folder (to start ${name} from that one on purpose, copy it without ${POLICY_RECORD})`,
    );
  }
}

export async function saveCheckpoint(
  dir: string,
  policy: PolicyModel,
  trainer: TrainerState,
  extra: { agent: string; config: unknown; serving?: RoleServing },
  rolePolicies: SavedRolePolicy[] = [],
): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const policyDir = `policy-${trainer.step}`;
  rmSync(join(dir, policyDir), { recursive: true, force: true });
  let roles: CheckpointState['rolePolicies'];
  if (rolePolicies.length) {
    roles = {};
    for (const p of rolePolicies) {
      await saveRolePolicy(join(dir, policyDir, p.name), p, trainer);
      roles[p.name] = { dir: join(policyDir, p.name), roles: p.roles };
    }
    if (extra.serving) writeRolesRecord(join(dir, policyDir), rolePolicies, trainer, extra.serving);
  } else await policy.save(join(dir, policyDir));
  const state: CheckpointState = {
    trainer: structuredClone(trainer),
    policyDir,
    ...(roles ? { rolePolicies: roles } : {}),
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
  const policyPath = join(dir, state.policyDir);
  const models = state.rolePolicies ? Object.values(state.rolePolicies).map((r) => join(dir, r.dir)) : [policyPath];
  for (const m of models)
    if (!existsSync(join(m, 'config.json')) && !existsSync(join(m, 'adapter_config.json')))
      throw new Error(`${p} points at ${m}, which holds no model (config.json missing) nor LoRA adapter (adapter_config.json)`);
  return { ...state, policyPath };
}

export const BEST_DIR = 'best';

/** Keeps the policy as the best so far in `<dir>/best` (written beside, then swapped in); returns that folder. */
export async function saveBestPolicy(
  dir: string,
  policy: PolicyModel,
  best: { step: number; reward: number },
  rolePolicies: SavedRolePolicy[] = [],
  trainer?: TrainerState,
  serving?: RoleServing,
): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const tmp = join(dir, `${BEST_DIR}.tmp`),
    old = join(dir, `${BEST_DIR}.old`),
    target = join(dir, BEST_DIR);
  rmSync(tmp, { recursive: true, force: true });
  if (rolePolicies.length) {
    mkdirSync(tmp, { recursive: true });
    for (const p of rolePolicies) await saveRolePolicy(join(tmp, p.name), p, trainer ?? ({} as TrainerState));
    if (serving) writeRolesRecord(tmp, rolePolicies, trainer ?? ({} as TrainerState), serving);
  } else await policy.save(tmp);
  writeFileSync(join(tmp, 'best.json'), JSON.stringify({ ...best, savedAt: Date.now() }, null, 2));
  rmSync(old, { recursive: true, force: true });
  if (existsSync(target)) renameSync(target, old);
  renameSync(tmp, target);
  rmSync(old, { recursive: true, force: true });
  return target;
}
