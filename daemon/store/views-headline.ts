/**
 * An agent's headline (GET /v1/agl/views/headline), assembled from the store: its one number and its words
 * (protocol/agent-headline.ts), for the CodeLens and dashboard. Its train reward counts its training runs' rollouts
 * only, and its rollout count its own: its evals' and optimizations' rollouts are theirs (their results have lenses of
 * their own: protocol/run-results.ts).
 */
import { HEADLINE_WINDOW, describeHeadline, type AgentHeadline, type HeadlineFacts } from '../../protocol/agent-headline.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { METRICS } from '../../protocol/metrics.js';
import { readRolloutMetadata, type MetricPoint, type Rollout, type RolloutStatus, type RolloutSummary, type TrainingRun } from '../../protocol/store.js';
import { recordedTrainConfig } from '../../protocol/train-config.js';

/** Ended rollouts counted per agent at most (then "500+"). */
export const COUNT_LIMIT = 500;
/** Newest runs looked at for a validation. */
const RUNS_LOOKED_AT = 10;
const ENDED: RolloutStatus[] = ['succeeded', 'failed'];

/** What the headline reads that cannot change any more: validations of ended runs. */
export class HeadlineCache {
  private readonly validations = new Map<string, MetricPoint[]>();

  constructor(private readonly store: LightningStore) {}

  /** The run's validation points, by step. */
  async validationsOf(run: TrainingRun): Promise<MetricPoint[]> {
    const cached = this.validations.get(run.id);
    if (cached) return cached;
    const points = (await this.store.queryMetrics(run.id)).filter((p) => p.name === METRICS.valReward).sort((a, b) => a.step - b.step);
    if (run.status !== 'running') this.validations.set(run.id, points);
    return points;
  }
}

async function heldOut(runs: TrainingRun[], cache: HeadlineCache): Promise<HeadlineFacts['heldOut']> {
  const newestFirst = [...runs].sort((a, b) => b.createdAt - a.createdAt).slice(0, RUNS_LOOKED_AT);
  for (const run of newestFirst) {
    const points = await cache.validationsOf(run);
    const last = points[points.length - 1];
    if (!last) continue;
    const config = recordedTrainConfig(run.config);
    return {
      runId: run.id,
      step: last.step,
      value: last.value,
      first: { step: points[0]!.step, value: points[0]!.value },
      greedy: config ? config.model.valTemperature === 0 : null,
      policies: config ? Object.keys(config.policies ?? {}) : [],
    };
  }
  return null;
}

/**
 * The mean final reward of the newest ended rollouts: in mode `train`, only those its training runs enqueued (their
 * metadata's runId one of `trainRuns`), never a prompt optimization's train split nor an evaluation's; else any the
 * agent ran outside an eval or an optimization (`otherRuns`: their rewards are their candidates' and models', not its).
 */
function recent(
  endedNewestFirst: Rollout[],
  summaries: (RolloutSummary | undefined)[],
  trainRuns: ReadonlySet<string>,
  otherRuns: ReadonlySet<string>,
): HeadlineFacts['recent'] {
  const madeBy = (r: Rollout): string => readRolloutMetadata(r.metadata).runId ?? '';
  const counts = { train: (r: Rollout) => r.mode === 'train' && trainRuns.has(madeBy(r)), any: (r: Rollout) => !otherRuns.has(madeBy(r)) };
  for (const mode of ['train', 'any'] as const) {
    const rewards: number[] = [];
    for (const [i, rollout] of endedNewestFirst.entries()) {
      if (rewards.length >= HEADLINE_WINDOW) break;
      if (!counts[mode](rollout)) continue;
      const r = summaries[i]?.finalReward ?? null;
      if (r !== null) rewards.push(r);
    }
    if (rewards.length) return { mode, count: rewards.length, mean: rewards.reduce((s, x) => s + x, 0) / rewards.length };
  }
  return null;
}

/** How many ended rollouts the agent's evals and optimizations ran (the store counts each run's). */
async function endedOf(store: LightningStore, runs: TrainingRun[]): Promise<number> {
  const counts = await Promise.all(
    runs.map(async (run) => (await store.queryRollouts({ runId: run.id, status: ENDED, limit: 1, withTotal: true })).total ?? 0),
  );
  return counts.reduce((s, n) => s + n, 0);
}

/** The agent's headline number and its words (protocol/agent-headline.ts), read from the store now. */
export async function agentHeadline(store: LightningStore, agent: string, cache = new HeadlineCache(store)): Promise<AgentHeadline> {
  const [ended, runs] = await Promise.all([
    store.queryRollouts({ agent, status: ENDED, order: 'desc', limit: COUNT_LIMIT, withSummaries: true, withTotal: true }),
    store.listTrainingRuns(agent),
  ]);
  // Its training runs: an optimization's val scores are its candidates', not the agent's; an eval's are its model's.
  const training = runs.filter((r) => r.kind === 'train');
  const others = runs.filter((r) => r.kind !== 'train');
  const [validated, ofOthers] = await Promise.all([heldOut(training, cache), endedOf(store, others)]);
  const total = ended.total ?? ended.items.length;
  return describeHeadline({
    // The exact count (the store counts them) of the agent's own rollouts: its evals' and optimizations' are theirs.
    rollouts: Math.max(0, total - ofOthers),
    rolloutsCapped: ended.total === undefined && ended.nextCursor !== null,
    otherRunRollouts: ofOthers,
    heldOut: validated,
    recent: validated ? null : recent(ended.items, ended.summaries ?? [], new Set(training.map((r) => r.id)), new Set(others.map((r) => r.id))),
  });
}
