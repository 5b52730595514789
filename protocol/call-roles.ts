/**
 * Who made each LLM call of an attempt and whether its training run trained on it, and why: the role (the call's agent
 * name), the policy and version that served it (`agl.policy.name` / `agl.policy.version`, written by the gateway when
 * the run had `policies:`), its number (span-reading.ts llmCallNumbers), and the run's selection rule applied to it.
 * The daemon assembles these (daemon/store/views.ts) for the viewer's call detail, cards and states view. Pure; reads
 * the run's recorded config through its plain shape (no zod here: the webview bundle imports the types). A rollout of an
 * eval or an optimization is said to be one (protocol/run-purpose.ts): such runs train nothing, by no rule.
 *
 * The selection rule, as the trainer applies it (daemon/algorithm/trainer.ts, adapter.ts):
 *  - with `policies:` the roles listed are trained, each by its own policy or the one it shares; every other role is
 *    served, untrained, by the default policy (`training.agentMatch`, when set, must match those roles);
 *  - without, `training.agentMatch` (a regular expression on the role) selects the trained calls; none: every call;
 *  - a call without token ids is never trained; a validation rollout's calls are never trained;
 *  - a selected call of a training rollout is trained once the run stores its transition (its step was trained).
 */
import { DEFAULT_POLICY, roleOwners, type PolicyEntryShape } from './role-owners.js';
import { agentNames, isLlmCallSpan, llmCallNumbers, numberArrayAttr } from './span-reading.js';
import { runPurpose, runWork, untrainedBecause, type PurposeConfig, type RolloutPlace, type RunWork } from './run-purpose.js';
import { AGL } from './spans.js';
import type { RolloutMode, RunKind, Span, Transition } from './store.js';

/** A training run's selection rule, read from its recorded config (or, for an eval or an optimization, what it did). */
export interface RunRoles {
  runId: string;
  /** The run's kind: only a training run trains calls. */
  kind: RunKind;
  /** An eval's or an optimization's work (its model, dataset, prompts); null for a training run. */
  work: RunWork | null;
  /** `training.agentMatch`, or null. */
  agentMatch: string | null;
  /** Role -> the policy that serves and trains it (config `policies:`: its own, or the role it shares); empty: none. */
  policies: Record<string, string>;
  /** The model the default policy serves to the roles without a policy, untrained (its folder's last part); null without `policies:`. */
  defaultModel: string | null;
  /** The rule in one sentence (an eval's or optimization's work, for those). */
  rule: string;
}

/** What the run's config says about roles, in the shape train-config.ts parses it to. */
export interface RolesConfig {
  model?: { name?: string; init?: string | null };
  training?: { agentMatch?: string | null };
  policies?: Record<string, PolicyEntryShape>;
}

const lastPathPart = (p: string): string =>
  p
    .replace(/[\\/]+$/, '')
    .split(/[\\/]/)
    .pop() ?? p;

/** The default policy in words, with the model it serves when known: `default policy (warmup)`. */
const defaultPolicyWords = (model: string | null): string => `${DEFAULT_POLICY} policy${model ? ` (${model})` : ''}`;

/** The run's selection rule from its recorded config. */
export function runRoles(runId: string, config: RolesConfig | null): RunRoles {
  const agentMatch = config?.training?.agentMatch ?? null;
  const policies = roleOwners(config?.policies); // the run's policy set: protocol/policy-set.ts
  const roles = Object.keys(policies);
  // The default policy (DEFAULT_POLICY, as the gateway names it and the calls it served record it) serves the run's model,
  // named here by its folder's last part (`samples/sql/warmup` -> `warmup`).
  const model = config?.model?.init ?? config?.model?.name ?? null;
  const defaultModel = roles.length && model ? lastPathPart(model) : null;
  const rule = roles.length
    ? `trains ${roles.map((r) => (policies[r] === r ? `${r} (own policy)` : `${r} (policy ${policies[r]}, shared)`)).join(', ')}; ` +
      `every other role is served, untrained, by the ${defaultPolicyWords(defaultModel)}` +
      (agentMatch ? ` (training.agentMatch ${agentMatch})` : '')
    : agentMatch
      ? `trains the roles matching training.agentMatch ${agentMatch}; the others are not trained`
      : 'trains every call (no training.agentMatch, no policies)';
  return { runId, kind: 'train', work: null, agentMatch, policies, defaultModel, rule };
}

/** An eval's or an optimization's words in the rule's place, from its recorded config: it trains nothing. */
export function nonTrainingRoles(runId: string, kind: 'eval' | 'optimize', config: PurposeConfig | null): RunRoles {
  const work = runWork(kind, config);
  return { runId, kind, work, agentMatch: null, policies: {}, defaultModel: null, rule: runPurpose(work) };
}

/** Whether the run's rule selects a role for training. */
export function roleSelected(roles: RunRoles, role: string | null): boolean {
  if (Object.keys(roles.policies).length) return role !== null && role in roles.policies;
  if (roles.agentMatch === null) return true;
  try {
    return role !== null && new RegExp(roles.agentMatch).test(role);
  } catch {
    return false;
  }
}

/** Whether a call was trained, and if not, why not. */
export type CallTraining =
  | 'trained' // the run stored its transition
  | 'not-selected' // the run's rule leaves its role out
  | 'held-out' // a validation rollout's call
  | 'no-token-ids' // nothing to train on
  | 'pending' // selected, no transition stored (yet)
  | 'not-training' // an eval's or an optimization's rollout: its run trains nothing
  | 'no-run'; // no training run made the rollout

/** One LLM call as the viewer names it. */
export interface CallInfo {
  spanId: string;
  /** Its number in the attempt (span-reading.ts llmCallNumbers): "call #n" everywhere. */
  number: number;
  /** Its role: the call's agent name (its own or inherited), null when none. */
  role: string | null;
  /** The policy that served it and that policy's version (its updates so far), when the gateway recorded them. */
  policy: string | null;
  policyVersion: number | null;
  training: CallTraining;
  /** One sentence: trained or not, and why, naming the run's rule. */
  why: string;
  /** The newest transition of the call (trained: its step, group, credit and advantage). */
  transition: Transition | null;
}

/** Where the rollout stands: its mode and the run that made it (or trained on it). */
export interface RolloutTrainingContext {
  mode: RolloutMode;
  /** The run whose rule applies; null when no training run made the rollout. */
  roles: RunRoles | null;
  /** The run the rollout's metadata names, when that run is not in the store. */
  missingRunId?: string | null;
  /** The rollout's place in its run (its metadata): an eval's row, an optimization's candidate and split. */
  place?: RolloutPlace;
}

function whyNot(role: string | null, policy: string | null, roles: RunRoles): string {
  const who = role ? `role ${role}` : 'a call naming no role';
  if (Object.keys(roles.policies).length) {
    const trained = Object.keys(roles.policies);
    const served = policy && policy !== DEFAULT_POLICY ? `policy ${policy}` : defaultPolicyWords(roles.defaultModel);
    const given = `the role${trained.length === 1 ? '' : 's'} given a policy of ${trained.length === 1 ? 'its' : 'their'} own`;
    return `Not trained: run ${roles.runId} trains only ${trained.join(', ')} (${given}); ${who} is served by the ${served}, untrained.`;
  }
  return `Not trained: ${who} does not match run ${roles.runId}'s training.agentMatch ${roles.agentMatch}.`;
}

function whySelected(role: string | null, roles: RunRoles): string {
  const own = role !== null ? roles.policies[role] : undefined;
  if (own !== undefined) return own === role ? `role ${role} has its own policy` : `role ${role} shares policy ${own}`;
  return roles.agentMatch ? `role ${role ?? '(none)'} matches training.agentMatch ${roles.agentMatch}` : 'the run trains every call';
}

/** Each LLM call of one attempt (its spans and transitions) with its number, role, policy and training. */
export function describeCalls(spans: Span[], transitions: Transition[], ctx: RolloutTrainingContext): CallInfo[] {
  const numbers = llmCallNumbers(spans);
  const names = agentNames(spans);
  const newest = new Map<string, Transition>();
  for (const t of [...transitions].sort((a, b) => a.step - b.step)) newest.set(t.spanId, t);
  return spans
    .filter(isLlmCallSpan)
    .map((span): CallInfo => {
      const a = span.attributes;
      const role = names.get(span.spanId) ?? null;
      const policy = typeof a[AGL.policyName] === 'string' ? (a[AGL.policyName] as string) : null;
      const policyVersion = typeof a[AGL.policyVersion] === 'number' ? (a[AGL.policyVersion] as number) : null;
      const t = newest.get(span.spanId) ?? null;
      const base = { spanId: span.spanId, number: numbers.get(span.spanId)!, role, policy, policyVersion, transition: t };
      const { roles } = ctx;
      if (t) {
        const because = roles ? `: ${whySelected(role, roles)}` : '';
        return { ...base, training: 'trained', why: `Trained in run ${t.runId} at step ${t.step} (group ${t.groupId})${because}.` };
      }
      if (!roles)
        return {
          ...base,
          training: 'no-run',
          why: ctx.missingRunId
            ? `Not trained here: its training run ${ctx.missingRunId} is not in this store.`
            : 'Not trained: no training run made this rollout.',
        };
      if (roles.work) return { ...base, training: 'not-training', why: untrainedBecause(roles.runId, roles.work, ctx.place ?? {}) };
      if (!roleSelected(roles, role)) return { ...base, training: 'not-selected', why: whyNot(role, policy, roles) };
      const ids = numberArrayAttr(a[AGL.completionTokenIds]);
      if (!ids || ids.length === 0 || !numberArrayAttr(a[AGL.promptTokenIds]))
        return { ...base, training: 'no-token-ids', why: 'Not trained: no token ids were recorded for it (the server that answered returned none).' };
      if (ctx.mode !== 'train')
        return {
          ...base,
          training: 'held-out',
          why: `Not trained: a ${ctx.mode} rollout of run ${roles.runId} (held-out; the run trains only on its training rollouts).`,
        };
      return {
        ...base,
        training: 'pending',
        why: `Selected (${whySelected(role, roles)}) but not trained yet: run ${roles.runId} stored no transition for it (its step was not trained yet, or the rollout or its group was left out).`,
      };
    })
    .sort((x, y) => x.number - y.number);
}
