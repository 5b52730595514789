/**
 * Role coverage: every role given a policy must make LLM calls, else its policy would never train (a misspelt role,
 * or one that calls no LLM). The roles seen in the validation before training and in the first ROLE_CHECK_STEPS
 * training steps are collected; a role still unseen after the validation is a warning, after those steps an error
 * naming it and the roles that did call. A resumed run past those steps was checked when it started.
 */
import { listedRoles } from '../../protocol/policy-set.js';
import type { GroupRollout } from './rollouts.js';

/**
 * A role given a policy must make an LLM call by the end of this many training steps (with the validation before
 * them), else the run stops: its policy would never train. Not at the first validation alone: a role the agent
 * calls only sometimes (sql's rewriter, when the checker rejects) may make no call in a greedy validation.
 */
export const ROLE_CHECK_STEPS = 3;

const plural = (n: number) => (n === 1 ? '' : 's');

export class RoleCoverage {
  /** Roles seen making LLM calls (validation and training rollouts), until every role with a policy was seen. */
  private readonly seen = new Set<string>();
  private checked = false;
  private readonly seenIn = { val: 0, train: 0 };
  /** Per role, its LLM calls that failed (no completion recorded), while the check runs. */
  private readonly failed = new Map<string, number>();

  /**
   * @param policies the run's trained policies (their roles are the ones to see)
   * @param totalSteps the run's planned steps (a shorter run is checked at its end)
   * @param log where the validation's warning goes
   */
  constructor(
    private readonly policies: { roles: string[] | null }[],
    private readonly totalSteps: number,
    private readonly log: (m: string) => void,
  ) {}

  /** Whether the check still runs (a role with a policy not yet seen, within its steps). */
  get open(): boolean {
    return !this.checked;
  }

  /** Notes the roles of a validation's (before training) or a training step's rollouts; throws once a role is overdue. */
  note(groups: GroupRollout[], mode: 'val' | 'train', step = 0): void {
    if (this.checked) return;
    if (mode === 'train' && step >= ROLE_CHECK_STEPS) {
      this.checked = true;
      return;
    }
    this.collect(groups, mode);
    const unseen = listedRoles(this.policies).filter((r) => !this.seen.has(r));
    if (!unseen.length) {
      this.checked = true;
      return;
    }
    const last = Math.min(ROLE_CHECK_STEPS, this.totalSteps);
    if (mode === 'val') this.log(this.valWarning(unseen, groups.length, last));
    else if (step + 1 >= last) {
      this.checked = true;
      throw new Error(this.trainError(unseen, last));
    }
  }

  private collect(groups: GroupRollout[], mode: 'val' | 'train'): void {
    for (const g of groups) {
      for (const s of g.trajectory?.steps ?? []) if (s.agentName) this.seen.add(s.agentName);
      for (const k of g.trajectory?.skipped ?? [])
        if (k.reason === 'no-token-ids' && k.agentName) this.failed.set(k.agentName, (this.failed.get(k.agentName) ?? 0) + 1);
    }
    this.seenIn[mode] += groups.length;
  }

  /** What the unseen roles did (every call failed, or none) and which roles did call. */
  private explain(unseen: string[]): { roles: string; none: string; why: string; came: string } {
    const came = this.seen.size
      ? `The agent's calls came from ${[...this.seen].map((r) => `'${r}'`).join(', ')}.`
      : 'No call named its role (name roles with operation(name, fn, { agentName })).';
    const failed = unseen.filter((r) => this.failed.has(r));
    const why = failed.length
      ? ` ${failed
          .map((r) => {
            const n = this.failed.get(r)!;
            return `'${r}' made ${n} call${plural(n)}, and every one failed (no completion recorded: the calls' errors are in the trajectory viewer and agl rollouts)`;
          })
          .join('; ')}.`
      : '';
    const none = failed.length === unseen.length ? 'made no LLM call that succeeded' : 'made no LLM call';
    return { roles: unseen.map((r) => `'${r}'`).join(', '), none, why, came };
  }

  private valWarning(unseen: string[], rollouts: number, last: number): string {
    const { roles, none, why, came } = this.explain(unseen);
    return (
      `policies: role${plural(unseen.length)} ${roles} ${none} in the ${rollouts} validation rollouts before training; ` +
      `training stops if ${unseen.length > 1 ? 'they make' : 'it makes'} none in the first ${last} steps.${why} ${came}`
    );
  }

  private trainError(unseen: string[], last: number): string {
    const { roles, none, why, came } = this.explain(unseen);
    return (
      `policies: role${plural(unseen.length)} ${roles} ${none} in the ${this.seenIn.val} validation rollouts before training nor in the ` +
      `${this.seenIn.train} rollouts of the first ${last} training steps, so ${unseen.length > 1 ? 'their policies' : 'its policy'} would never train.${why} ${came}`
    );
  }
}
