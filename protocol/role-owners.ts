/**
 * Which policy owns each role listed under a run's `policies:` (its own, or the role it shares), read from the config
 * as recorded: zod-free, for the viewer's bundle (protocol/call-roles.ts) as well as the policy set (policy-set.ts).
 */

/**
 * The name of the policy serving every role without one of its own, in a set with policies per role (the run's model,
 * untrained; LoRA's base): the gateway serves it under this name, the calls it served record it, `agl serve` of the
 * run's checkpoint and `agl export` name it so.
 */
export const DEFAULT_POLICY = 'default';

/** A role's entry under `policies:` as the recorded config holds it (its own policy, or `shared: <role>`). */
export type PolicyEntryShape = { shared?: unknown } | object;

/** Each listed role -> its policy's name: its own role, or the role it shares. */
export function roleOwners(policies: Record<string, PolicyEntryShape> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [role, entry] of Object.entries(policies ?? {})) out[role] = entry && 'shared' in entry && typeof entry.shared === 'string' ? entry.shared : role;
  return out;
}
