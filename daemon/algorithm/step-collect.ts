/**
 * Step 1 of a training step, collect: publish the policies as a resources version, roll out each of the step's tasks
 * n times (one GRPO group per task) through the runner and the gateway, and, when a policy's settings ask for DAPO's
 * dynamic sampling, refill the groups without reward spread from fresh tasks. With an LLM judge (step-judge.ts), each
 * round's groups are judged as they come back, before dynamic sampling reads their spread; the groups it could not
 * score are set apart (`leftOut`). Validation rolls out the held-out tasks the same way (one greedy sample each).
 * Nothing here computes credit or touches weights.
 */
import type { LightningStore } from '../../protocol/lightning-store.js';
import { listedRoles } from '../../protocol/policy-set.js';
import type { TrainConfig } from './config.js';
import type { OpenPolicySet } from './open-policy-set.js';
import { type GroupRollout, type Task, dynamicSampling, publishPolicy, runGroups } from './rollouts.js';
import { freshTasks, tasksForStep } from './schedule.js';
import type { StepJudge } from './step-judge.js';

/** What collecting reads: the run's store, policies, config, agent and tasks, and where the gateway serves. */
export interface CollectContext {
  store: LightningStore;
  policies: OpenPolicySet;
  config: TrainConfig;
  /** The agent's stable id (what its rollouts name). */
  agent: string;
  /** The gateway's OpenAI-compatible base URL (…/v1) that serves the policies. */
  endpoint: string;
  /** Sample from another server (engine.sampler) instead of the policy the gateway serves. */
  sampler: { url: string; model: string; apiKeyEnv: string | null } | null;
  train: Task[];
  val: Task[];
  runId: string;
  signal?: AbortSignal;
  onProgress?: (phase: string, done: number, total: number) => void;
}

/**
 * A step's rollouts: the scheduled groups, and with dynamic sampling what it kept (groups: every group rolled out);
 * `leftOut`: the rollouts of groups the judge could not score (in none of the others).
 */
export interface RolledOut {
  scheduled: GroupRollout[];
  sampled: Awaited<ReturnType<typeof dynamicSampling>> | null;
  groups: GroupRollout[];
  leftOut: GroupRollout[];
}

/** Publishes the policies for a training step's or a validation's rollouts (validation samples at valTemperature). */
export async function publishStep(c: CollectContext, step: number, purpose: 'train' | 'val'): Promise<string> {
  const m = c.config.model;
  const routing = c.policies.routing();
  const res = await publishPolicy(c.store, {
    endpoint: c.endpoint,
    model: c.policies.fallback.name,
    maxTokens: m.maxTokens,
    temperature: purpose === 'val' ? m.valTemperature : m.temperature,
    topP: purpose === 'val' ? undefined : m.topP,
    metadata: { runId: c.runId, step, purpose },
    upstream: c.sampler,
    ...(routing ? { roleModels: routing.roleModels, unassignedRole: routing.unassignedRole } : {}),
  });
  return res.id;
}

/** With policies per role: a regular expression matching exactly their roles (the adapter keeps only their calls). */
function trainedRolesMatch(policies: OpenPolicySet): string | null {
  const roles = listedRoles(policies.trained);
  if (!roles.length) return null;
  return `^(${roles.map((r) => r.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})$`;
}

/**
 * The step's tasks rolled out n times each (and, with DAPO dynamic sampling, refills for groups without spread), each
 * round judged by `judge` when the run has one. `step` is 0-based.
 */
export async function collectStep(c: CollectContext, step: number, judge: StepJudge | null = null): Promise<RolledOut> {
  const t = c.config.training;
  const resourcesId = await publishStep(c, step, 'train');
  const leftOut: GroupRollout[] = [];
  const rollOut = async (tasks: Task[], round: number) => {
    const groups = await runGroups(c.store, tasks, {
      agent: c.agent,
      mode: 'train',
      resourcesId,
      groupSize: t.groupSize,
      timeoutSeconds: c.config.runtime.rolloutTimeoutSeconds,
      metadata: { runId: c.runId, step: step + 1, ...(round > 0 ? { samplingRound: round } : {}) },
      adapter: { agentMatch: trainedRolesMatch(c.policies) ?? t.agentMatch, useHumanLabels: t.useHumanLabels },
      signal: c.signal,
      onProgress: (done, total) => c.onProgress?.(round > 0 ? `rollouts (refill ${round})` : 'rollouts', done, total),
    });
    if (!judge) return groups;
    const judged = await judge.judgeRound(groups, round);
    leftOut.push(...judged.leftOut);
    return judged.kept;
  };
  const scheduled = await rollOut(tasksForStep(c.train, t.batchSize, t.seed, step), 0);
  // DAPO dynamic sampling (for the policies whose settings ask for it): groups without reward spread dropped, the
  // batch refilled from fresh tasks (bounded by the most rounds any of them allows).
  const sampling = c.policies.trained.filter((p) => p.grpo.dynamicSampling);
  const sampled = sampling.length
    ? await dynamicSampling(scheduled, {
        batchSize: t.batchSize,
        maxRounds: Math.max(...sampling.map((p) => p.grpo.dynamicSamplingRounds)),
        rollOut,
        freshTasks: (round, used, n) => freshTasks(c.train, t.seed, step, round, used, n),
      })
    : null;
  return { scheduled, sampled, groups: sampled ? sampled.groups : scheduled, leftOut };
}

/**
 * The validation's rollouts after `step` updates: each held-out task (the first valSize) once, at valTemperature; with
 * a judge, scored per judge.validation (`groups`: those the held-out mean is over; `tasks`: how many there are).
 */
export async function collectValidation(c: CollectContext, step: number, judge: StepJudge | null = null): Promise<{ groups: GroupRollout[]; tasks: number }> {
  const t = c.config.training;
  const tasks = t.valSize > 0 ? c.val.slice(0, t.valSize) : c.val;
  const resourcesId = await publishStep(c, step, 'val');
  const groups = await runGroups(c.store, tasks, {
    agent: c.agent,
    mode: 'val',
    resourcesId,
    groupSize: 1,
    timeoutSeconds: c.config.runtime.rolloutTimeoutSeconds,
    metadata: { runId: c.runId, step },
    signal: c.signal,
    onProgress: (done, total) => c.onProgress?.('validate', done, total),
  });
  if (!judge) return { groups, tasks: tasks.length };
  const scored = await judge.judgeValidation(groups);
  return { groups: scored, tasks: scored.length };
}
