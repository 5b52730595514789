/**
 * A judge from its settings (protocol/judge-settings.ts), checked before anything is spent: the rubric read (its file,
 * already resolved to an absolute path by the caller), the API key read from judge.keyEnv, and the guard against
 * self-judging: the judge may not be the policy being trained (the run's own gateway, its sampler, or the name a
 * trained policy is served under), because a policy that grades itself learns to please itself. The guard's
 * refusal names what matched and the way out (judge.allowSelfJudge, --allow-self-judge).
 */
import { readFileSync } from 'node:fs';
import type { JudgeSettings } from '../../protocol/judge-settings.js';
import { Judge } from './judge.js';

/** The rubric's text: the setting's, or its file's (an absolute path by now). */
export function rubricText(settings: Pick<JudgeSettings, 'rubric'>): string {
  const r = settings.rubric;
  if (typeof r === 'string') return r;
  let text: string;
  try {
    text = readFileSync(r.file, 'utf8');
  } catch (e) {
    throw new Error(`judge.rubric: cannot read ${r.file} (${(e as Error).message}): give the rubric's file (train.yaml: relative to it), or its text`, {
      cause: e,
    });
  }
  if (!text.trim()) throw new Error(`judge.rubric: ${r.file} is empty: write what makes a trajectory good in it`);
  return text;
}

/** The judge's API key from judge.keyEnv ('' without one); a variable named but not set is an error naming it. */
export function judgeKey(settings: Pick<JudgeSettings, 'keyEnv'>, env: NodeJS.ProcessEnv = process.env): string {
  if (settings.keyEnv === null) return '';
  const key = env[settings.keyEnv];
  if (!key)
    throw new Error(
      `judge.keyEnv names ${settings.keyEnv}, which is not set here: export it, or set judge.keyEnv (--judge-key-env) to the variable that holds the key`,
    );
  return key;
}

/** The judge of these settings, ready to call. */
export function openJudge(settings: JudgeSettings, o: { seed: number; log?: (line: string) => void; signal?: AbortSignal }): Judge {
  return new Judge({ settings, rubric: rubricText(settings), apiKey: judgeKey(settings), seed: o.seed, log: o.log, signal: o.signal });
}

/** What serves the policy being trained: the run's gateway, its sampler (engine.sampler), and the names its policies are served under. */
export interface TrainedPolicyPlaces {
  /** The run's gateway (…/v1); null before it listens. */
  endpoint: string | null;
  sampler: { url: string; model: string } | null;
  names: string[];
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1', '[::1]', '0.0.0.0']);

/** host:port of a URL, every loopback name one (the gateway binds 127.0.0.1; a judge URL may say localhost). */
function origin(url: string): string | null {
  try {
    const u = new URL(url);
    const host = LOOPBACK.has(u.hostname) || u.hostname.startsWith('127.') ? 'loopback' : u.hostname.toLowerCase();
    return `${host}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`;
  } catch {
    return null;
  }
}

/** Why the judge would be the policy being trained, or null when it is not. */
export function selfJudgeReason(judge: Pick<JudgeSettings, 'url' | 'model'>, trained: TrainedPolicyPlaces): string | null {
  const at = origin(judge.url);
  if (at !== null && trained.endpoint !== null && at === origin(trained.endpoint))
    return `judge.url ${judge.url} is this run's own gateway (${trained.endpoint}), which serves the policy being trained`;
  if (trained.sampler && at !== null && at === origin(trained.sampler.url))
    return `judge.url ${judge.url} is the run's sampler (engine.sampler.url), which serves the policy being trained`;
  if (trained.names.includes(judge.model))
    return `judge.model '${judge.model}' is the name this run serves a trained policy under (${trained.names.join(', ')})`;
  return null;
}

/** Throws the guard's refusal when the judge is the policy being trained and the settings do not allow it. */
export function checkNotSelfJudge(settings: Pick<JudgeSettings, 'url' | 'model' | 'allowSelfJudge'>, trained: TrainedPolicyPlaces): string | null {
  const reason = selfJudgeReason(settings, trained);
  if (!reason || settings.allowSelfJudge) return reason;
  throw new Error(
    `the judge may not be the policy being trained: ${reason}; a policy that grades itself learns to please itself. ` +
      'Name another model (judge.url, judge.model; --judge-url, --judge-model), or allow it on purpose with --allow-self-judge (judge.allowSelfJudge: true)',
  );
}
