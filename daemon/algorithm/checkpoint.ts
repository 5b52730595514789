/**
 * Training checkpoints, crash-safe: the policy is saved to a fresh `policy-<step>` folder, then
 * `state.json` (trainer state + which folder) is replaced atomically (write + rename), then older policy
 * folders are removed. A kill at any moment leaves a state.json that points at a complete policy folder.
 * The best policy so far (highest held-out reward) is kept apart in `best/`, written the same way.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PolicyModel } from '../model/policy-contract.js';
import type { TrainerState } from './trainer.js';

export const STATE_FILE = 'state.json';

export interface CheckpointState {
  trainer: TrainerState;
  policyDir: string;
  agent: string;
  config: unknown;
  savedAt: number;
}

export async function saveCheckpoint(dir: string, policy: PolicyModel, trainer: TrainerState, extra: { agent: string; config: unknown }): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const policyDir = `policy-${trainer.step}`;
  rmSync(join(dir, policyDir), { recursive: true, force: true });
  await policy.save(join(dir, policyDir));
  const state: CheckpointState = { trainer: structuredClone(trainer), policyDir, agent: extra.agent, config: extra.config, savedAt: Date.now() };
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
  if (!existsSync(join(policyPath, 'config.json'))) throw new Error(`${p} points at ${policyPath}, which holds no model (config.json missing)`);
  return { ...state, policyPath };
}

export const BEST_DIR = 'best';

/** Keeps the policy as the best so far in `<dir>/best` (written beside, then swapped in); returns that folder. */
export async function saveBestPolicy(dir: string, policy: PolicyModel, best: { step: number; reward: number }): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const tmp = join(dir, `${BEST_DIR}.tmp`),
    old = join(dir, `${BEST_DIR}.old`),
    target = join(dir, BEST_DIR);
  rmSync(tmp, { recursive: true, force: true });
  await policy.save(tmp);
  writeFileSync(join(tmp, 'best.json'), JSON.stringify({ ...best, savedAt: Date.now() }, null, 2));
  rmSync(old, { recursive: true, force: true });
  if (existsSync(target)) renameSync(target, old);
  renameSync(tmp, target);
  rmSync(old, { recursive: true, force: true });
  return target;
}
