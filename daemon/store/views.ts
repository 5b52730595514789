/**
 * What the editor's views need, assembled from the store on the daemon's side and served in one request each
 * (GET /v1/agl/views/headline, POST /v1/agl/views/groups): the views compute nothing the trainer stored.
 *   groupPage      a training step's GRPO groups, or one rollout's: samples, rewards, credits, stored advantages, and
 *                  the numbers those advantages came from (read from the stored transitions and the run's recorded
 *                  config, checked against them, never recomputed for display); each sample's answer (what the agent
 *                  returned or emitted, protocol/span-reading.ts) and calls (number, role, policy, trained or not and
 *                  why: protocol/call-roles.ts), the group's distinct answers and the task's expected output
 *   rolloutView    one rollout: its attempts, the chosen attempt's spans and transitions, its calls and answer, what
 *                  answered them (protocol/served-by.ts), whether a runner is connected, and the selection rule of the
 *                  run that made it
 *   agentHeadline  an agent's one number and its words, for the CodeLens and dashboard (views-headline.ts)
 */
import { FIRST_TRAINING_STEP } from '../../protocol/metrics.js';
import { advantageDivisor, isZeroVariance, meanOf, stdUnbiased, type ScaleRewards } from '../../protocol/grpo-advantage.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { describeCalls, nonTrainingRoles, runRoles, type RunRoles } from '../../protocol/call-roles.js';
import type { PurposeConfig } from '../../protocol/run-purpose.js';
import { episodeAnswer, expectedOutput, expectedTaskFields, finalReward, promptVersions } from '../../protocol/span-reading.js';
import { servedModels } from '../../protocol/served-by.js';
import { connectedWorkers } from '../../protocol/runner-presence.js';
import { readRolloutMetadata, type Rollout, type Span, type TrainingRun, type Transition } from '../../protocol/store.js';
import { recordedTrainConfig } from '../../protocol/train-config.js';
import { policySet } from '../../protocol/policy-set.js';
import type { GroupAdvantage, GroupData, GroupPage, GroupQuery, GroupSample, RolloutDetail } from '../../protocol/webview-trajectory.js';

/** Runs `fn` over `items` with at most `limit` at once. */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Why an attempt that did not succeed failed (its error message), or null. */
async function attemptError(store: LightningStore, rollout: Rollout, attemptId: string | null): Promise<string | null> {
  if (rollout.status === 'succeeded' || rollout.attemptCount === 0) return null;
  const attempts = await store.getAttempts(rollout.id);
  const attempt = attempts.find((a) => a.id === attemptId) ?? attempts[attempts.length - 1];
  return attempt?.error?.message ?? null;
}

/** How one policy scaled its calls' advantages (its own GRPO settings). */
interface PolicyScaling {
  policy: string;
  roles: string[] | null;
  scaleRewards: ScaleRewards;
  variant: string;
}

/**
 * How the run scaled each call's advantage, from its recorded config: with policies per role, each call by its role's
 * policy's own GRPO settings (protocol/policy-set.ts); else every call by the run's `training.grpo`. Null settings: the
 * run did not record them (an older config that no longer parses).
 */
interface RunScaling {
  of(role: string | null): PolicyScaling | null;
  byRole: boolean;
}

function runScaling(run: TrainingRun | null): RunScaling {
  const config = run ? recordedTrainConfig(run.config) : null;
  if (!config) return { of: () => null, byRole: false };
  const scalings = policySet(config).policies.map((p) => ({ policy: p.name, roles: p.roles, scaleRewards: p.grpo.scaleRewards, variant: p.grpo.variant }));
  const one = scalings.find((p) => p.roles === null) ?? null;
  return {
    of: (role) => one ?? scalings.find((p) => role !== null && p.roles!.includes(role)) ?? null,
    byRole: config.training.groupBy === 'task-role',
  };
}

/** The one value every item gives, else null. */
function shared<T>(xs: T[]): T | null {
  return xs.length && xs.every((x) => x === xs[0]) ? xs[0]! : null;
}

/**
 * Mean, std and divisor of some calls' credits, and whether their stored advantages follow from them: each call's
 * advantage divided as its own policy divides (a dr_grpo role's calls by nothing, a grpo role's by the std).
 */
function advantageNumbers(calls: Transition[], batchStd: number, scaling: RunScaling) {
  const credits = calls.map((t) => t.credit);
  const mean = meanOf(credits),
    std = stdUnbiased(credits);
  const scales = calls.map((t) => scaling.of(t.agentName)?.scaleRewards ?? null);
  const known = scales.every((x) => x !== null);
  const matchesStored = !known
    ? null
    : calls.every((t, i) => {
        const divisor = advantageDivisor(scales[i]!, std, batchStd);
        return Math.abs(t.advantage - (t.credit - mean) / divisor) <= 1e-6 * Math.max(1, Math.abs(t.advantage));
      });
  const scale = shared(scales);
  return {
    calls: calls.length,
    mean,
    std,
    divisor: scale ? advantageDivisor(scale, std, batchStd) : null,
    matchesStored,
    zeroVariance: isZeroVariance(credits),
  };
}

/** The policies whose calls are in `group`, each with its scaling, when they scaled differently (else none: one formula holds). */
function policiesOf(group: Transition[], scaling: RunScaling): GroupAdvantage['byPolicy'] {
  const seen = new Map<string, PolicyScaling & { calls: number }>();
  for (const t of group) {
    const s = scaling.of(t.agentName);
    if (!s) continue;
    const had = seen.get(s.policy);
    seen.set(s.policy, { ...s, calls: (had?.calls ?? 0) + 1 });
  }
  const all = [...seen.values()];
  if (all.length < 2 || (shared(all.map((p) => p.scaleRewards)) !== null && shared(all.map((p) => p.variant)) !== null)) return undefined;
  return all.map(({ policy, roles, scaleRewards, variant, calls }) => ({ policy, roles, scaleRewards, variant, calls }));
}

/**
 * The numbers the group's stored advantages came from (protocol/grpo-advantage.ts), checked against them, each call
 * under its own policy's settings; with training.groupBy task-role, each role's calls are a group of their own, so the
 * numbers come per role too.
 */
function groupAdvantage(group: Transition[], step: Transition[], run: TrainingRun | null): GroupAdvantage {
  const batchStd = stdUnbiased(step.map((t) => t.credit));
  const scaling = runScaling(run);
  const all = advantageNumbers(group, batchStd, scaling);
  const settings = group.map((t) => scaling.of(t.agentName));
  const scaleRewards = settings.every((x) => x) ? shared(settings.map((x) => x!.scaleRewards)) : null;
  const variant = settings.every((x) => x) ? shared(settings.map((x) => x!.variant)) : null;
  const byPolicy = policiesOf(group, scaling);
  const common = { batchStd, scaleRewards, variant, ...(byPolicy ? { byPolicy } : {}) };
  if (!scaling.byRole) return { ...all, ...common };
  const roles = new Map<string, Transition[]>();
  for (const t of group) {
    const calls = roles.get(t.agentName ?? '');
    if (calls) calls.push(t);
    else roles.set(t.agentName ?? '', [t]);
  }
  const perRole = [...roles.entries()].map(([role, calls]) => ({
    role: role || null,
    scaleRewards: scaling.of(role || null)?.scaleRewards ?? null,
    ...advantageNumbers(calls, batchStd, scaling),
  }));
  const matchesStored = perRole.some((r) => r.matchesStored === null) ? null : perRole.every((r) => r.matchesStored);
  return { ...all, ...common, matchesStored, byRole: perRole };
}

/** The run's selection rule from its recorded config (null without a run). */
function rolesOf(run: TrainingRun | null): RunRoles | null {
  if (!run) return null;
  // An eval or an optimization trains nothing: its rollouts say what they were instead (protocol/run-purpose.ts).
  return run.kind === 'train' ? runRoles(run.id, recordedTrainConfig(run.config)) : nonTrainingRoles(run.id, run.kind, run.config as PurposeConfig);
}

/** A sample of a group: its answer and its calls described under the run's rule. */
function sample(rollout: Rollout, reward: number | null, spans: Span[], transitions: Transition[], error: string | null, roles: RunRoles | null): GroupSample {
  return {
    rollout,
    reward,
    spans,
    transitions,
    error,
    answer: episodeAnswer(spans),
    calls: describeCalls(spans, transitions, { mode: rollout.mode, roles, place: readRolloutMetadata(rollout.metadata) }),
  };
}

/** A group from its samples: how many different answers they gave, and the task's expected output beside them. */
function group(groupId: string, samples: GroupSample[], advantage: GroupAdvantage | null): GroupData {
  const input = samples[0]?.rollout.input ?? null;
  const distinctAnswers = new Set(samples.filter((s) => s.answer.source !== 'none').map((s) => s.answer.key)).size;
  const fields = expectedTaskFields(input);
  const emitted = samples.map((s) => expectedOutput(s.spans)).find((e) => e !== null) ?? null;
  const expected = fields.length || emitted ? { fields, emitted } : null;
  return { groupId, input, samples, advantage, distinctAnswers, expected };
}

async function groupFromTransitions(
  store: LightningStore,
  groupId: string,
  transitions: Transition[],
  step: Transition[],
  run: TrainingRun | null,
): Promise<GroupData> {
  const byRollout = new Map<string, Transition[]>();
  for (const t of transitions) byRollout.set(t.rolloutId, [...(byRollout.get(t.rolloutId) ?? []), t]);
  const roles = rolesOf(run);
  const samples = await mapLimit([...byRollout.entries()], 8, async ([rolloutId, ts]) => {
    const [rollout, spans] = await Promise.all([store.getRollout(rolloutId), store.querySpans({ rolloutId, attemptId: ts[0].attemptId })]);
    if (!rollout) return null;
    const fromTransitions = ts.find((t) => t.reward !== null)?.reward ?? null;
    const error = await attemptError(store, rollout, ts[0].attemptId);
    return sample(
      rollout,
      finalReward(spans) ?? fromTransitions,
      spans,
      ts.sort((a, b) => a.index - b.index),
      error,
      roles,
    );
  });
  return group(
    groupId,
    samples.filter((s): s is GroupSample => s !== null),
    groupAdvantage(transitions, step, run),
  );
}

/** A rollout the algorithm has not trained on yet: its group is the rollouts of the same task and step. */
async function groupFromMetadata(store: LightningStore, rollout: Rollout, roles: RunRoles | null): Promise<GroupData> {
  const { taskId, runId, step } = readRolloutMetadata(rollout.metadata);
  // The store filters by run and step (indexed); the task is the group within them.
  const siblings =
    taskId === undefined
      ? [rollout]
      : (
          await store.queryRollouts({
            agent: rollout.agent ?? undefined,
            ...(runId !== undefined ? { runId } : {}),
            ...(step !== undefined ? { step } : {}),
            limit: 500,
          })
        ).items.filter((r) => {
          const m = readRolloutMetadata(r.metadata);
          return m.taskId === taskId && m.runId === runId && m.step === step;
        });
  const samples = await mapLimit(siblings, 8, async (r) => {
    const spans = r.attemptCount > 0 ? await store.querySpans({ rolloutId: r.id, attemptId: 'latest' }) : [];
    return sample(r, finalReward(spans), spans, [], await attemptError(store, r, null), roles);
  });
  return group(String(taskId ?? rollout.id), samples, null);
}

/**
 * The GRPO groups the viewer's group view shows: a step's groups (or the group of one rollout), each sample with its
 * reward, spans and transitions, and the numbers its stored advantages came from, assembled in one request.
 */
export async function groupPage(store: LightningStore, q: GroupQuery): Promise<GroupPage> {
  let { runId, step } = q;
  if (q.rolloutId) {
    const own = await store.queryTransitions({ rolloutId: q.rolloutId });
    if (own.length === 0) {
      const rollout = await store.getRollout(q.rolloutId);
      if (!rollout) throw new Error(`rollout '${q.rolloutId}' does not exist in this daemon's store`);
      const { runId: madeBy, step: itsStep } = readRolloutMetadata(rollout.metadata);
      const run = madeBy ? await store.getTrainingRun(madeBy) : null;
      const roles = rolesOf(run);
      return {
        runId: run?.id ?? null,
        step: run ? (itsStep ?? null) : null,
        steps: [],
        groups: [await groupFromMetadata(store, rollout, roles)],
        roles,
      };
    }
    const latest = own.reduce((a, b) => (b.step > a.step ? b : a));
    runId = latest.runId;
    step = latest.step;
    const [all, run] = await Promise.all([store.queryTransitions({ runId, step, limit: 10_000 }), store.getTrainingRun(runId)]);
    const group = await groupFromTransitions(
      store,
      latest.groupId,
      all.filter((t) => t.groupId === latest.groupId),
      all,
      run,
    );
    return { runId, step, steps: await trainedSteps(store, runId), groups: [group], roles: rolesOf(run) };
  }
  if (!runId) runId = (await store.listTrainingRuns(undefined, 'train'))[0]?.id;
  if (!runId) return { runId: null, step: null, steps: [], groups: [], roles: null };
  const [steps, run] = await Promise.all([trainedSteps(store, runId), store.getTrainingRun(runId)]);
  if (step === undefined) step = steps[steps.length - 1];
  if (step === undefined) return { runId, step: null, steps, groups: [], roles: rolesOf(run) };
  const transitions = await store.queryTransitions({ runId, step, limit: 10_000 });
  const byGroup = new Map<string, Transition[]>();
  for (const t of transitions) byGroup.set(t.groupId, [...(byGroup.get(t.groupId) ?? []), t]);
  const groups = await mapLimit([...byGroup.entries()], 4, ([groupId, ts]) => groupFromTransitions(store, groupId, ts, transitions, run));
  return { runId, step, steps, groups, roles: rolesOf(run) };
}

/**
 * One rollout as the viewer shows it: its attempts, the chosen attempt's (else the latest's) spans and transitions
 * (newest step first), the resources version it ran with, its answer, and its calls described under the rule of the
 * run that made it (its metadata's runId) or trained on it.
 */
export async function rolloutView(store: LightningStore, q: { rolloutId: string; attemptId?: string }): Promise<RolloutDetail> {
  const rollout = await store.getRollout(q.rolloutId);
  if (!rollout) throw new Error(`rollout '${q.rolloutId}' does not exist in this daemon's store`);
  const attempts = await store.getAttempts(rollout.id);
  const attempt = attempts.find((a) => a.id === q.attemptId) ?? attempts[attempts.length - 1] ?? null;
  const [spans, allTransitions, resources, workers] = await Promise.all([
    attempt ? store.querySpans({ rolloutId: rollout.id, attemptId: attempt.id }) : Promise.resolve([]),
    store.queryTransitions({ rolloutId: rollout.id }),
    rollout.resourcesId ? store.getResources(rollout.resourcesId) : Promise.resolve(null),
    store.listWorkers(),
  ]);
  const transitions = allTransitions.filter((t) => !attempt || t.attemptId === attempt.id).sort((a, b) => b.step - a.step);
  const madeBy = readRolloutMetadata(rollout.metadata).runId ?? transitions[0]?.runId;
  const run = madeBy ? await store.getTrainingRun(madeBy) : null;
  const roles = rolesOf(run);
  return {
    rollout,
    attempts,
    attemptId: attempt?.id ?? null,
    spans,
    transitions,
    resourcesVersion: resources?.version ?? null,
    served: servedModels(spans),
    runnerConnected: connectedWorkers(workers).length > 0,
    calls: describeCalls(spans, transitions, {
      mode: rollout.mode,
      roles,
      missingRunId: run ? null : (madeBy ?? null),
      place: readRolloutMetadata(rollout.metadata),
    }),
    roles,
    answer: episodeAnswer(spans),
    prompts: promptVersions(spans),
  };
}

/** Steps of a run that can have transitions: its steps done so far (the first while it runs), numbered from FIRST_TRAINING_STEP. */
async function trainedSteps(store: LightningStore, runId: string): Promise<number[]> {
  const run = await store.getTrainingRun(runId);
  return Array.from({ length: Math.max(1, run?.step ?? 1) }, (_, i) => FIRST_TRAINING_STEP + i);
}

// The agent's headline lives in its own file; its importers read it from here too.
export { COUNT_LIMIT, HeadlineCache, agentHeadline } from './views-headline.js';
