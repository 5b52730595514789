/**
 * Keeping an external sampler (engine.sampler: a vLLM, or another `agl serve --model`) on the run's weights: after each
 * update the policy is saved where the sampler can read it and the sampler is told to load it.
 */
import { readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { PolicyModel } from '../model/policy-contract.js';
import type { SamplerConfig } from './config.js';

/**
 * Saves the policy where the sampler can read it (<push.dir>/step-<n>) and tells the sampler to load it (POST
 * push.url with push.body's {dir} / {step} filled in); keeps the newest two step folders.
 */
export async function pushWeights(policy: PolicyModel, push: NonNullable<SamplerConfig['push']>, step: number): Promise<void> {
  const root = resolve(push.dir);
  const dir = join(root, `step-${step}`);
  rmSync(dir, { recursive: true, force: true });
  await policy.save(dir);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (push.tokenEnv) {
    const token = process.env[push.tokenEnv];
    if (!token) throw new Error(`engine.sampler.push.tokenEnv names ${push.tokenEnv}, which is not set`);
    headers.authorization = `Bearer ${token}`;
  }
  const body = push.body.replaceAll('{dir}', JSON.stringify(dir).slice(1, -1)).replaceAll('{step}', String(step));
  let res: Response;
  try {
    res = await fetch(push.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(600_000) });
  } catch (e) {
    throw new Error(`engine.sampler.push: cannot reach ${push.url} to load step ${step}: ${(e as Error).message}`, { cause: e });
  }
  if (!res.ok) throw new Error(`engine.sampler.push: ${push.url} answered ${res.status} to loading ${dir}: ${(await res.text()).slice(0, 500)}`);
  for (const name of readdirSync(root)) {
    const n = /^step-(\d+)$/.exec(name);
    if (n && Number(n[1]) < step - 1) rmSync(join(root, name), { recursive: true, force: true });
  }
}
