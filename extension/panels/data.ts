/**
 * What the panels answer to their webviews' requests, fetched from the daemon through the typed client
 * (sdk/client.ts). Free of the vscode API, so the webview tests drive exactly this code against a real
 * daemon. One handler table per webview, keyed by the protocol's method names.
 */
import { advantageDivisor, isZeroVariance, meanOf, stdUnbiased, type ScaleRewards } from '../../protocol/grpo-advantage.js';
import { finalReward } from '../../protocol/span-reading.js';
import { ROLLOUT_MODES, ROLLOUT_STATUSES, type MetricPoint, type Rollout, type TrainingRun, type Transition } from '../../protocol/store.js';
import { DashboardProtocol } from '../../protocol/webview-dashboard.js';
import type { IpcRequestType } from '../../protocol/webview-ipc.js';
import {
  TrajectoryProtocol, type GroupAdvantage, type GroupData, type GroupPage, type GroupQuery, type RolloutDetail, type RolloutPage, type RolloutPageRequest,
} from '../../protocol/webview-trajectory.js';
import { agentHeadline } from '../../sdk/agent-headline.js';
import type { AglClient } from '../../sdk/client.js';

export type RequestHandlers = Map<string, (params: unknown) => Promise<unknown>>;

function on<P, R>(handlers: RequestHandlers, type: IpcRequestType<P, R>, fn: (params: P) => Promise<R>): void {
  handlers.set(type.method, fn as (params: unknown) => Promise<unknown>);
}

/** Runs `fn` over `items` with at most `limit` at once (the daemon is local; this keeps sockets few). */
async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => { while (next < items.length) { const i = next++; out[i] = await fn(items[i]); } };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

async function resourceVersions(client: AglClient): Promise<Map<string, number>> {
  return new Map((await client.listResources(1000)).map((r) => [r.id, r.version]));
}

/** Rows per request at most (the virtual list asks for about a screen at a time). */
const MAX_LIST_PAGE = 200;

/** One page of the rollouts list: the store filters, searches, sorts, counts and summarises (no span reads). */
async function listRollouts(client: AglClient, req: RolloutPageRequest): Promise<RolloutPage> {
  const offset = Math.max(0, Math.floor(req.offset ?? 0));
  const [page, versions, known, stats, runs] = await Promise.all([
    client.queryRollouts({
      status: req.status, mode: req.mode, agent: req.agent, resourcesVersion: req.resourcesVersion, search: req.search || undefined,
      rewardMin: req.rewardMin, rewardMax: req.rewardMax, runId: req.runId, step: req.step, hasError: req.hasError,
      sort: req.sort, order: req.order, offset, limit: Math.min(req.limit ?? 50, MAX_LIST_PAGE), withTotal: true, withSummaries: true,
    }),
    resourceVersions(client),
    client.agents(),
    client.statistics(),
    client.listTrainingRuns(),
  ]);
  const items = page.items.map((rollout, i) => {
    const s = page.summaries![i]!;
    return {
      rollout, reward: s.finalReward, resourcesVersion: rollout.resourcesId ? versions.get(rollout.resourcesId) ?? null : null,
      durationMs: s.durationMs, startedAt: s.startedAt, error: s.error, errorSpans: s.errorSpans,
    };
  });
  // The agent filtered on is always a choice, so the filter shows it and can be cleared (from the CodeLens, it
  // may match rollouts stored under older forms of its id only, or none yet).
  const agents = [...new Set([...known.map((a) => a.agent), ...page.items.map((r) => r.agent), req.agent].filter((a): a is string => !!a))].sort();
  return {
    items, offset, total: page.total!, storeTotal: Object.values(stats.rollouts).reduce((a, b) => a + b, 0),
    statuses: [...ROLLOUT_STATUSES], modes: [...ROLLOUT_MODES], agents,
    resourcesVersions: [...versions.values()].sort((a, b) => b - a),
    runs: runs.map((r) => ({ id: r.id, agent: r.agent, createdAt: r.createdAt })).sort((a, b) => b.createdAt - a.createdAt),
  };
}

async function getRollout(client: AglClient, rolloutId: string, attemptId?: string): Promise<RolloutDetail> {
  const rollout = await client.getRollout(rolloutId);
  if (!rollout) throw new Error(`rollout '${rolloutId}' does not exist in this daemon's store`);
  const attempts = await client.getAttempts(rolloutId);
  const attempt = attempts.find((a) => a.id === attemptId) ?? attempts[attempts.length - 1] ?? null;
  const [spans, transitions, resources] = await Promise.all([
    attempt ? client.querySpans({ rolloutId, attemptId: attempt.id }) : Promise.resolve([]),
    client.queryTransitions({ rolloutId }),
    rollout.resourcesId ? client.getResources(rollout.resourcesId) : Promise.resolve(null),
  ]);
  return {
    rollout, attempts, attemptId: attempt?.id ?? null, spans,
    transitions: transitions.filter((t) => !attempt || t.attemptId === attempt.id).sort((a, b) => b.step - a.step),
    resourcesVersion: resources?.version ?? null,
  };
}

/** Why an attempt that did not succeed failed (its error message), or null. */
async function attemptError(client: AglClient, rollout: Rollout, attemptId: string | null): Promise<string | null> {
  if (rollout.status === 'succeeded' || rollout.attemptCount === 0) return null;
  const attempts = await client.getAttempts(rollout.id);
  const attempt = attempts.find((a) => a.id === attemptId) ?? attempts[attempts.length - 1];
  return attempt?.error?.message ?? null;
}

/** The run's advantage scaling and variant as it recorded them in its config (`agl train` stores the parsed one). */
function runGrpoSettings(run: TrainingRun | null): { scaleRewards: ScaleRewards | null; variant: string | null } {
  const grpo = ((run?.config.training ?? {}) as { grpo?: { scaleRewards?: unknown; variant?: unknown } }).grpo ?? {};
  const scale = grpo.scaleRewards;
  return {
    scaleRewards: scale === 'group' || scale === 'batch' || scale === 'none' ? scale : null,
    variant: typeof grpo.variant === 'string' ? grpo.variant : null,
  };
}

/** The numbers the group's stored advantages came from (protocol/grpo-advantage.ts), checked against them. */
function groupAdvantage(group: Transition[], step: Transition[], run: TrainingRun | null): GroupAdvantage {
  const credits = group.map((t) => t.credit);
  const mean = meanOf(credits), std = stdUnbiased(credits), batchStd = stdUnbiased(step.map((t) => t.credit));
  const { scaleRewards, variant } = runGrpoSettings(run);
  const divisor = scaleRewards ? advantageDivisor(scaleRewards, std, batchStd) : null;
  const matchesStored = divisor === null ? null
    : group.every((t) => Math.abs(t.advantage - (t.credit - mean) / divisor) <= 1e-6 * Math.max(1, Math.abs(t.advantage)));
  return { calls: group.length, mean, std, batchStd, scaleRewards, variant, divisor, matchesStored, zeroVariance: isZeroVariance(credits) };
}

async function groupFromTransitions(client: AglClient, groupId: string, transitions: Transition[], step: Transition[], run: TrainingRun | null): Promise<GroupData> {
  const byRollout = new Map<string, Transition[]>();
  for (const t of transitions) byRollout.set(t.rolloutId, [...(byRollout.get(t.rolloutId) ?? []), t]);
  const samples = await mapLimit([...byRollout.entries()], 8, async ([rolloutId, ts]) => {
    const [rollout, spans] = await Promise.all([
      client.getRollout(rolloutId),
      client.querySpans({ rolloutId, attemptId: ts[0].attemptId }),
    ]);
    const fromTransitions = ts.find((t) => t.reward !== null)?.reward ?? null;
    const error = rollout ? await attemptError(client, rollout, ts[0].attemptId) : null;
    return { rollout: rollout!, reward: finalReward(spans) ?? fromTransitions, spans, transitions: ts.sort((a, b) => a.index - b.index), error };
  });
  const present = samples.filter((s) => s.rollout);
  return { groupId, input: present[0]?.rollout.input ?? null, samples: present, advantage: groupAdvantage(transitions, step, run) };
}

/** A rollout the algorithm has not trained on yet: its group is the rollouts of the same task and step. */
async function groupFromMetadata(client: AglClient, rollout: Rollout): Promise<GroupData> {
  const { taskId, runId, step } = rollout.metadata as { taskId?: unknown; runId?: unknown; step?: unknown };
  const siblings = taskId === undefined ? [rollout]
    : (await client.queryRollouts({ agent: rollout.agent ?? undefined, limit: 500 })).items
      .filter((r) => r.metadata.taskId === taskId && r.metadata.runId === runId && r.metadata.step === step);
  const samples = await mapLimit(siblings, 8, async (r) => {
    const spans = r.attemptCount > 0 ? await client.querySpans({ rolloutId: r.id, attemptId: 'latest' }) : [];
    return { rollout: r, reward: finalReward(spans), spans, transitions: [], error: await attemptError(client, r, null) };
  });
  return { groupId: String(taskId ?? rollout.id), input: rollout.input, samples, advantage: null };
}

async function getGroups(client: AglClient, q: GroupQuery): Promise<GroupPage> {
  let { runId, step } = q;
  if (q.rolloutId) {
    const own = await client.queryTransitions({ rolloutId: q.rolloutId });
    if (own.length === 0) {
      const rollout = await client.getRollout(q.rolloutId);
      if (!rollout) throw new Error(`rollout '${q.rolloutId}' does not exist in this daemon's store`);
      return { runId: null, step: null, steps: [], groups: [await groupFromMetadata(client, rollout)] };
    }
    const latest = own.reduce((a, b) => (b.step > a.step ? b : a));
    runId = latest.runId;
    step = latest.step;
    const [all, run] = await Promise.all([client.queryTransitions({ runId, step, limit: 10_000 }), client.getTrainingRun(runId)]);
    const group = await groupFromTransitions(client, latest.groupId, all.filter((t) => t.groupId === latest.groupId), all, run);
    return { runId, step, steps: await trainedSteps(client, runId), groups: [group] };
  }
  if (!runId) runId = (await client.listTrainingRuns())[0]?.id;
  if (!runId) return { runId: null, step: null, steps: [], groups: [] };
  const steps = await trainedSteps(client, runId);
  if (step === undefined) step = steps[steps.length - 1];
  if (step === undefined) return { runId, step: null, steps, groups: [] };
  const [transitions, run] = await Promise.all([client.queryTransitions({ runId, step, limit: 10_000 }), client.getTrainingRun(runId)]);
  const byGroup = new Map<string, Transition[]>();
  for (const t of transitions) byGroup.set(t.groupId, [...(byGroup.get(t.groupId) ?? []), t]);
  const groups = await mapLimit([...byGroup.entries()], 4, ([groupId, ts]) => groupFromTransitions(client, groupId, ts, transitions, run));
  return { runId, step, steps, groups };
}

/** Steps of a run that can have transitions: 0 .. the run's current step. */
async function trainedSteps(client: AglClient, runId: string): Promise<number[]> {
  const run = await client.getTrainingRun(runId);
  const last = Math.max(0, (run?.step ?? 1) - 1);
  return Array.from({ length: last + 1 }, (_, i) => i);
}

export function trajectoryHandlers(client: AglClient): RequestHandlers {
  const handlers: RequestHandlers = new Map();
  on(handlers, TrajectoryProtocol.listRollouts, (f) => listRollouts(client, f));
  on(handlers, TrajectoryProtocol.getRollout, (p) => getRollout(client, p.rolloutId, p.attemptId));
  on(handlers, TrajectoryProtocol.getGroups, (q) => getGroups(client, q));
  return handlers;
}

export function dashboardHandlers(client: AglClient): RequestHandlers {
  const handlers: RequestHandlers = new Map();
  on(handlers, DashboardProtocol.listRuns, async () => (await client.listTrainingRuns()).sort((a, b) => b.createdAt - a.createdAt));
  on(handlers, DashboardProtocol.getRunMetrics, async ({ runId }) => {
    const run = await client.getTrainingRun(runId);
    if (!run) throw new Error(`training run '${runId}' does not exist in this daemon's store`);
    return { run, points: await client.queryMetrics(runId) };
  });
  on(handlers, DashboardProtocol.getHeadline, ({ agent }) => agentHeadline(client, agent));
  return handlers;
}

/**
 * Polls a running training run and hands on the metric points after the ones already sent, and the
 * run's new state, until the run ends or `stop()` is called.
 */
export function watchRunMetrics(client: AglClient, runId: string, send: (run: TrainingRun, points: MetricPoint[]) => void, intervalMs = 2000): { stop(): void } {
  let lastStep = -1;
  let lastUpdated = 0;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = async (): Promise<void> => {
    try {
      const run = await client.getTrainingRun(runId);
      if (stopped || !run) return;
      // Validation writes a point at the current step after the training point: re-read the last step.
      const points = await client.queryMetrics(runId, lastStep >= 0 ? lastStep - 1 : undefined);
      if (points.length || run.updatedAt !== lastUpdated) send(run, points);
      lastUpdated = run.updatedAt;
      for (const p of points) lastStep = Math.max(lastStep, p.step);
      if (run.status !== 'running') return;
    } catch { /* daemon restarting: try again next tick */ }
    if (!stopped) timer = setTimeout(() => void tick(), intervalMs);
  };
  void tick();
  return { stop() { stopped = true; if (timer) clearTimeout(timer); } };
}

/**
 * Polls the store's statistics (one cheap request: rollouts per status, span count) while an open viewer
 * is visible, and calls `onChange` when they move (a rollout added, claimed or ended, spans landed): how a
 * trajectory viewer learns that it should reload its list. The first reading is the baseline; a daemon that
 * is down or restarting is simply asked again next tick.
 */
export function watchStore(client: () => Promise<AglClient>, onChange: () => void, intervalMs = 2000): { stop(): void } {
  let last: string | null = null;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = async (): Promise<void> => {
    try {
      const s = await (await client()).statistics();
      const signature = JSON.stringify([s.rollouts, s.spans]);
      if (!stopped && last !== null && signature !== last) onChange();
      last = signature;
    } catch { /* daemon down or restarting: try again next tick */ }
    if (!stopped) timer = setTimeout(() => void tick(), intervalMs);
  };
  void tick();
  return { stop() { stopped = true; if (timer) clearTimeout(timer); } };
}
