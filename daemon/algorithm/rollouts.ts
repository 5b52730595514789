/**
 * The store side of a training step: publish the policy as a resources version, enqueue each task n
 * times (one GRPO group per task), wait for the runner to finish them, and read back each rollout's
 * trajectory (spans of its latest attempt, through the adapter). Nothing here runs agents: workers do.
 */
import { readRolloutMetadata, type Resources, type Rollout, type RolloutMetadata, type RolloutMode } from '../../protocol/store.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { type AdapterOptions, type Trajectory, spansToTrajectory } from './adapter.js';
import { finalReward } from './credit.js';

export interface Task {
  id: string;
  input: unknown;
}

export interface PublishOptions {
  endpoint: string;
  model: string;
  temperature: number;
  topP?: number;
  maxTokens: number;
  metadata: Record<string, unknown>;
  /** Sample from this OpenAI-compatible server (its token ids and log-probs recorded) instead of the local policy. */
  upstream?: { url: string; model: string; apiKeyEnv: string | null } | null;
  /** One policy per role: the model serving each role's calls (others get `model`), and what a call naming no role gets. */
  roleModels?: Record<string, string>;
  unassignedRole?: 'refuse' | 'default';
}

export function publishPolicy(store: LightningStore, o: PublishOptions): Promise<Resources> {
  return store.addResources({
    resources: {
      llm: o.upstream
        ? {
            type: 'llm',
            endpoint: o.endpoint,
            model: o.upstream.model,
            backend: 'upstream',
            upstreamUrl: o.upstream.url,
            requestTokenIds: true,
            ...(o.upstream.apiKeyEnv ? { apiKeyEnv: o.upstream.apiKeyEnv } : {}),
            samplingParams: { temperature: o.temperature, topP: o.topP, maxTokens: o.maxTokens },
          }
        : {
            type: 'llm',
            endpoint: o.endpoint,
            model: o.model,
            backend: 'local',
            samplingParams: { temperature: o.temperature, topP: o.topP, maxTokens: o.maxTokens },
            ...(o.roleModels ? { roleModels: o.roleModels, unassignedRole: o.unassignedRole ?? 'refuse' } : {}),
          },
    },
    metadata: o.metadata,
  });
}

/** `error`: why the rollout did not succeed (its latest attempt's error), null when it did. */
export interface GroupRollout {
  rollout: Rollout;
  task: Task;
  trajectory: Trajectory | null;
  error: string | null;
}

export interface RunGroupsOptions {
  agent: string;
  mode: RolloutMode;
  resourcesId: string;
  groupSize: number;
  timeoutSeconds: number;
  /** The run's keys (protocol/store.ts RolloutMetadata); each rollout adds its task and sample. */
  metadata: RolloutMetadata;
  adapter?: AdapterOptions;
  /** Called as rollouts finish (done, total), for the progress bar. */
  onProgress?: (done: number, total: number) => void;
  /** Stop waiting (the training was interrupted). */
  signal?: AbortSignal;
}

/** Enqueues tasks x groupSize, waits for all, returns them with their trajectories (null when the rollout failed). */
export async function runGroups(store: LightningStore, tasks: Task[], o: RunGroupsOptions): Promise<GroupRollout[]> {
  const inputs = tasks.flatMap((task) =>
    Array.from({ length: o.groupSize }, (_, k) => ({
      input: task.input,
      mode: o.mode,
      agent: o.agent,
      resourcesId: o.resourcesId,
      config: { timeoutSeconds: o.timeoutSeconds, unresponsiveSeconds: Math.max(30, o.timeoutSeconds), maxAttempts: 1 },
      metadata: { ...o.metadata, taskId: task.id, sample: k } satisfies RolloutMetadata,
    })),
  );
  const rollouts = await store.enqueueRollouts(inputs);
  const ids = rollouts.map((r) => r.id);
  const ended = new Map<string, Rollout>();
  // The rollouts have a timeout each, so the store ends every one of them; the deadline only guards a stalled store.
  const deadline = Date.now() + (o.timeoutSeconds + 120) * 1000 * Math.max(1, Math.ceil(ids.length / 64));
  while (ended.size < ids.length) {
    if (o.signal?.aborted) throw new Error('interrupted');
    if (Date.now() > deadline)
      throw new Error(`${ids.length - ended.size} of ${ids.length} rollouts did not finish in time: are runner workers running for agent ${o.agent}?`);
    const pending = ids.filter((id) => !ended.has(id));
    for (const r of await store.waitForRollouts(pending, 2_000)) ended.set(r.id, r);
    o.onProgress?.(ended.size, ids.length);
  }
  const taskOf = new Map(tasks.map((t) => [t.id, t]));
  const out: GroupRollout[] = [];
  for (const id of ids) {
    const rollout = ended.get(id)!;
    const task = taskOf.get(String(readRolloutMetadata(rollout.metadata).taskId))!;
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

/** Task ids of the groups whose rollouts' final rewards are not all equal (the groups GRPO can learn from). */
export function groupsWithSpread(groups: GroupRollout[]): Set<string> {
  const byTask = new Map<string, number[]>();
  for (const g of groups) {
    const r = finalRewards([g])[0];
    const xs = byTask.get(g.task.id);
    if (xs) xs.push(r);
    else byTask.set(g.task.id, [r]);
  }
  return new Set([...byTask].filter(([, rs]) => rs.some((r) => r !== rs[0])).map(([id]) => id));
}

export interface DynamicSamplingOptions {
  /** Groups (tasks) with reward spread wanted for the step. */
  batchSize: number;
  /** Extra rounds of fresh tasks at most. */
  maxRounds: number;
  /** `n` fresh tasks for extra round `round` (1, 2, ...), none of whose ids are in `used`. */
  freshTasks(round: number, used: Set<string>, n: number): Task[];
  /** Rolls out tasks (each `groupSize` times) and returns their groups, as runGroups does. */
  rollOut(tasks: Task[], round: number): Promise<GroupRollout[]>;
}

export interface DynamicSamplingResult {
  /** Every rollout of every round (round 0 first). */
  groups: GroupRollout[];
  /** Task ids whose groups go into the loss: the first `batchSize` with reward spread, in rollout order. */
  kept: Set<string>;
  /** Extra rounds run. */
  rounds: number;
}

/**
 * DAPO's dynamic sampling (Yu et al. 2025, verl `filter_groups`): a group whose rollouts all earned the
 * same final reward has zero advantage everywhere and only dilutes the batch, so it is dropped, and the
 * batch is refilled with groups of fresh tasks until it holds `batchSize` groups with reward spread or
 * `maxRounds` extra rounds have run (then the step trains on what it has). Each extra round rolls out as
 * many fresh tasks as groups are missing.
 */
export async function dynamicSampling(first: GroupRollout[], o: DynamicSamplingOptions): Promise<DynamicSamplingResult> {
  const groups = [...first];
  const used = new Set(first.map((g) => g.task.id));
  let rounds = 0;
  let spread = groupsWithSpread(groups);
  while (spread.size < o.batchSize && rounds < o.maxRounds) {
    const fresh = o.freshTasks(rounds + 1, used, o.batchSize - spread.size).filter((t) => !used.has(t.id));
    if (fresh.length === 0) break;
    rounds++;
    for (const t of fresh) used.add(t.id);
    groups.push(...(await o.rollOut(fresh, rounds)));
    spread = groupsWithSpread(groups);
  }
  const order = [...new Set(groups.map((g) => g.task.id))].filter((id) => spread.has(id));
  return { groups, kept: new Set(order.slice(0, o.batchSize)), rounds };
}
