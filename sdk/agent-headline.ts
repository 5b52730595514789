/**
 * Reads an agent's headline number (defined and worded in protocol/agent-headline.ts) from the store: the one
 * function the language server (CodeLens title and tooltip) and the training dashboard's host both call, so
 * they show the same number with the same words. A rollout's reward is `metadata.reward` when the runner wrote
 * it, else its latest attempt's final reward as every reader takes it (protocol/span-reading.ts). What cannot
 * change any more (rewards of ended rollouts, metrics of ended runs) is cached in a HeadlineCache.
 */
import { HEADLINE_WINDOW, describeHeadline, type AgentHeadline, type HeadlineFacts } from '../protocol/agent-headline.js';
import { METRICS } from '../protocol/metrics.js';
import { finalReward } from '../protocol/span-reading.js';
import { SPAN } from '../protocol/spans.js';
import type { MetricPoint, Rollout, RolloutStatus, Span, TrainingRun } from '../protocol/store.js';

/** The part of the store client (AglClient) the headline reads. */
export interface HeadlineStore {
  queryRollouts(query: { agent?: string; status?: RolloutStatus[]; order?: 'asc' | 'desc'; limit?: number }): Promise<{ items: Rollout[]; nextCursor: string | null }>;
  querySpans(query: { rolloutId: string; attemptId?: string; name?: string; limit?: number }): Promise<Span[]>;
  listTrainingRuns(agent?: string): Promise<TrainingRun[]>;
  queryMetrics(runId: string, afterStep?: number): Promise<MetricPoint[]>;
}

/** Ended rollouts counted per agent at most (then "500+"). */
export const COUNT_LIMIT = 500;
/** Newest runs looked at for a validation. */
const RUNS_LOOKED_AT = 10;
const ENDED: RolloutStatus[] = ['succeeded', 'failed'];

/** What the headline reads that cannot change any more: rewards of ended rollouts, validations of ended runs. */
export class HeadlineCache {
  private readonly rewards = new Map<string, number | null>();
  private readonly validations = new Map<string, MetricPoint[]>();

  constructor(private readonly store: HeadlineStore) {}

  async rewardOf(rollout: Rollout): Promise<number | null> {
    const fromMeta = rollout.metadata['reward'];
    if (typeof fromMeta === 'number' && Number.isFinite(fromMeta)) return fromMeta;
    if (this.rewards.has(rollout.id)) return this.rewards.get(rollout.id)!;
    const reward = finalReward(await this.store.querySpans({ rolloutId: rollout.id, attemptId: 'latest', name: SPAN.reward }));
    this.rewards.set(rollout.id, reward);
    return reward;
  }

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
    if (last) return { runId: run.id, step: last.step, value: last.value, first: { step: points[0]!.step, value: points[0]!.value } };
  }
  return null;
}

async function recent(endedNewestFirst: Rollout[], cache: HeadlineCache): Promise<HeadlineFacts['recent']> {
  for (const mode of ['train', 'any'] as const) {
    const rewards: number[] = [];
    for (const rollout of endedNewestFirst) {
      if (rewards.length >= HEADLINE_WINDOW) break;
      if (mode === 'train' && rollout.mode !== 'train') continue;
      const r = await cache.rewardOf(rollout);
      if (r !== null) rewards.push(r);
    }
    if (rewards.length) return { mode, count: rewards.length, mean: rewards.reduce((s, x) => s + x, 0) / rewards.length };
  }
  return null;
}

/** The agent's headline number and its words (protocol/agent-headline.ts), read from the store now. */
export async function agentHeadline(store: HeadlineStore, agent: string, cache = new HeadlineCache(store)): Promise<AgentHeadline> {
  const [ended, runs] = await Promise.all([
    store.queryRollouts({ agent, status: ENDED, order: 'desc', limit: COUNT_LIMIT }),
    store.listTrainingRuns(agent),
  ]);
  const validated = await heldOut(runs, cache);
  return describeHeadline({
    rollouts: ended.items.length, rolloutsCapped: ended.nextCursor !== null,
    heldOut: validated, recent: validated ? null : await recent(ended.items, cache),
  });
}
