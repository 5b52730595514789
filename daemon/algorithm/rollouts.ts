/**
 * The store side of a training step: publish the policy as a resources version, enqueue each task n
 * times (one GRPO group per task), wait for the runner to finish them, and read back each rollout's
 * trajectory (spans of its latest attempt, through the adapter). Nothing here runs agents: workers do.
 */
import type { Resources, Rollout, RolloutMode } from '../../protocol/store.js';
import type { LightningStore } from '../store/types.js';
import { type AdapterOptions, type Trajectory, spansToTrajectory } from './adapter.js';
import { finalReward } from './credit.js';

export interface Task { id: string; input: unknown }

export interface PublishOptions {
  endpoint: string;
  model: string;
  temperature: number;
  topP?: number;
  maxTokens: number;
  metadata: Record<string, unknown>;
}

export function publishPolicy(store: LightningStore, o: PublishOptions): Promise<Resources> {
  return store.addResources({
    resources: {
      llm: { type: 'llm', endpoint: o.endpoint, model: o.model, backend: 'local', samplingParams: { temperature: o.temperature, topP: o.topP, maxTokens: o.maxTokens } },
    },
    metadata: o.metadata,
  });
}

/** `error`: why the rollout did not succeed (its latest attempt's error), null when it did. */
export interface GroupRollout { rollout: Rollout; task: Task; trajectory: Trajectory | null; error: string | null }

export interface RunGroupsOptions {
  agent: string;
  mode: RolloutMode;
  resourcesId: string;
  groupSize: number;
  timeoutSeconds: number;
  metadata: Record<string, unknown>;
  adapter?: AdapterOptions;
  /** Called as rollouts finish (done, total), for the progress bar. */
  onProgress?: (done: number, total: number) => void;
  /** Stop waiting (the training was interrupted). */
  signal?: AbortSignal;
}

/** Enqueues tasks x groupSize, waits for all, returns them with their trajectories (null when the rollout failed). */
export async function runGroups(store: LightningStore, tasks: Task[], o: RunGroupsOptions): Promise<GroupRollout[]> {
  const inputs = tasks.flatMap((task) => Array.from({ length: o.groupSize }, (_, k) => ({
    input: task.input, mode: o.mode, agent: o.agent, resourcesId: o.resourcesId,
    config: { timeoutSeconds: o.timeoutSeconds, unresponsiveSeconds: Math.max(30, o.timeoutSeconds), maxAttempts: 1 },
    metadata: { ...o.metadata, taskId: task.id, sample: k },
  })));
  const rollouts = await store.enqueueRollouts(inputs);
  const ids = rollouts.map((r) => r.id);
  const ended = new Map<string, Rollout>();
  // The rollouts have a timeout each, so the store ends every one of them; the deadline only guards a stalled store.
  const deadline = Date.now() + (o.timeoutSeconds + 120) * 1000 * Math.max(1, Math.ceil(ids.length / 64));
  while (ended.size < ids.length) {
    if (o.signal?.aborted) throw new Error('interrupted');
    if (Date.now() > deadline) throw new Error(`${ids.length - ended.size} of ${ids.length} rollouts did not finish in time: are runner workers running for agent ${o.agent}?`);
    const pending = ids.filter((id) => !ended.has(id));
    for (const r of await store.waitForRollouts(pending, 2_000)) ended.set(r.id, r);
    o.onProgress?.(ended.size, ids.length);
  }
  const taskOf = new Map(tasks.map((t) => [t.id, t]));
  const out: GroupRollout[] = [];
  for (const id of ids) {
    const rollout = ended.get(id)!;
    const task = taskOf.get(String(rollout.metadata.taskId))!;
    let trajectory: Trajectory | null = null;
    let error: string | null = null;
    if (rollout.status === 'succeeded') {
      const spans = await store.querySpans({ rolloutId: id, attemptId: 'latest' });
      trajectory = spansToTrajectory(spans, o.adapter);
    } else {
      const attempt = await store.getLatestAttempt(id);
      error = attempt?.error?.message.split('\n')[0] ?? `the rollout ended ${rollout.status}${attempt ? ` (attempt ${attempt.status})` : ''}`;
    }
    out.push({ rollout, task, trajectory, error });
  }
  return out;
}

/** When every rollout of `groups` failed: how many, and the first one's error; else null. */
export function everyRolloutFailed(groups: GroupRollout[]): { count: number; error: string } | null {
  if (groups.length === 0 || groups.some((g) => g.error === null)) return null;
  return { count: groups.length, error: groups[0]!.error! };
}

/** Final reward of each rollout (a failed rollout scores 0), for accuracy/validation figures. */
export function finalRewards(groups: GroupRollout[]): number[] {
  return groups.map((g) => (g.trajectory ? finalReward(g.trajectory) : 0));
}
