/**
 * A rollout's two separate verdicts: whether it RAN (its status: the agent returned, crashed, is still
 * going) and how WELL it did (its reward). A run that ended normally with reward 0 is a wrong answer, not a
 * success: the status pill stays neutral for a normal end, and the reward carries the colour.
 */
import { statusWords } from '../../protocol/runner-presence.js';
import type { RolloutStatus } from '../../protocol/store.js';
import { fmtNumber, h, signClass } from '../shared/dom.js';

const RUN_STATE: Record<string, { cls: string; says: string }> = {
  succeeded: { cls: 'run-ok', says: 'The agent ran to the end without an error (the reward says how well it did)' },
  failed: { cls: 'run-failed', says: 'The agent raised an error or timed out' },
  cancelled: { cls: 'run-failed', says: 'Cancelled before it ended' },
  running: { cls: 'run-active', says: 'Running now' },
  preparing: { cls: 'run-active', says: 'A worker is starting it' },
  queuing: { cls: 'run-waiting', says: 'Waiting for a worker' },
  requeuing: { cls: 'run-waiting', says: 'Waiting to be retried' },
};

/**
 * The status as the store names it, coloured only when something went wrong or is under way; a queued rollout that no
 * runner can claim says so ("queuing: no runner is connected", protocol/runner-presence.ts).
 */
export function runStatusPill(status: RolloutStatus, runnerConnected = true): HTMLElement {
  const state = RUN_STATE[status] ?? { cls: 'run-waiting', says: status };
  const words = statusWords(status, runnerConnected);
  const says = words === status ? state.says : 'No runner is connected to claim it: start one (agl runner), or a training run';
  return h('span', { class: `pill run-status ${state.cls}`, 'data-status': status, title: `Status: ${says}` }, words);
}

/** A resources version named as such ("resources #44"): it counts publications of resources, not training steps. */
export function resourcesText(version: number | null): string {
  return version === null ? '—' : `resources #${version}`;
}

/** What a resources version counts, for its tooltip. */
export function resourcesTip(version: number | null): string {
  if (version === null) return 'The resources it ran with are unknown';
  return (
    `Resources #${version}: publication ${version} of resources (model, endpoint, prompts) to this store, counted over all its runs; ` +
    'not a training step nor a policy update. The rollout view names the model that answered its calls.'
  );
}

/** The reward as its own indicator: green above 0, red at or below 0, muted when there is none. */
export function rewardPill(reward: number | null): HTMLElement {
  const cls = reward === null ? 'none' : reward > 0 ? 'good' : 'bad';
  return h(
    'span',
    {
      class: `pill reward-pill ${cls} ${signClass(reward)}`,
      'data-reward': reward === null ? 'none' : String(reward),
      title: reward === null ? 'No reward recorded' : 'Final reward (the value the agent returned, else its last reward)',
    },
    reward === null ? 'no reward' : `reward ${fmtNumber(reward)}`,
  );
}
