/**
 * Reward statistics per agent for the CodeLens, read from the daemon's store API: the mean reward of the
 * most recent window of rewarded rollouts, its change against the window before, and how many rollouts
 * ended. A rollout's reward is `metadata.reward` when the runner wrote it, else its latest attempt's final
 * reward as every reader takes it (protocol/span-reading.ts: the returned reward, else the last; agent-lightning
 * v0's shape too). Rewards of ended rollouts never change, so they are cached.
 */
import type { AgentStats } from '../../protocol/lsp.js';
import { finalReward } from '../../protocol/span-reading.js';
import { SPAN } from '../../protocol/spans.js';
import type { Rollout, RolloutStatus, Span, Statistics } from '../../protocol/store.js';

/** The part of the store client (sdk/client.ts AglClient, which the language server uses) the stats need. */
export interface StoreReader {
  queryRollouts(query: { agent?: string; status?: RolloutStatus[]; order?: 'asc' | 'desc'; limit?: number }): Promise<{ items: Rollout[]; nextCursor: string | null }>;
  querySpans(query: { rolloutId: string; attemptId?: string; name?: string; limit?: number }): Promise<Span[]>;
  statistics(): Promise<Statistics>;
}

/** Rollouts counted per agent at most (the lens then says "500+"). */
export const COUNT_LIMIT = 500;
/** Largest window of rollouts averaged for "latest reward". */
export const MAX_WINDOW = 16;
const ENDED: RolloutStatus[] = ['succeeded', 'failed'];
const ACTIVE: RolloutStatus[] = ['queuing', 'preparing', 'running', 'requeuing'];

/** Rewards newest first -> latest window mean and trend against the window before it. */
export function summarizeRewards(rewardsNewestFirst: number[]): { latestReward: number | null; trend: number | null } {
  const n = rewardsNewestFirst.length;
  if (n === 0) return { latestReward: null, trend: null };
  if (n === 1) return { latestReward: rewardsNewestFirst[0]!, trend: null };
  const w = Math.min(MAX_WINDOW, Math.floor(n / 2));
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  const latest = mean(rewardsNewestFirst.slice(0, w));
  const previous = mean(rewardsNewestFirst.slice(w, 2 * w));
  return { latestReward: latest, trend: latest - previous };
}

export class AgentStatsSource {
  private readonly rewardCache = new Map<string, number | null>();
  private readonly statsCache = new Map<string, AgentStats>();
  private lastSignature = '';
  /** Fetches are numbered as they start; only a newer one than the stats cached may replace them. */
  private fetchSeq = 0;
  private readonly cachedSeq = new Map<string, number>();

  constructor(private readonly store: StoreReader) {}

  cached(agent: string): AgentStats | undefined { return this.statsCache.get(agent); }

  /** Cheap check (one request): has anything in the store changed since the last call? */
  async storeChanged(): Promise<boolean> {
    const s = await this.store.statistics();
    const signature = JSON.stringify([s.rollouts, s.spans]);
    const changed = signature !== this.lastSignature;
    this.lastSignature = signature;
    return changed;
  }

  async rewardOf(rollout: Rollout): Promise<number | null> {
    const fromMeta = rollout.metadata['reward'];
    if (typeof fromMeta === 'number' && Number.isFinite(fromMeta)) return fromMeta;
    if (this.rewardCache.has(rollout.id)) return this.rewardCache.get(rollout.id)!;
    const reward = finalReward(await this.store.querySpans({ rolloutId: rollout.id, attemptId: 'latest', name: SPAN.reward }));
    this.rewardCache.set(rollout.id, reward);
    return reward;
  }

  /**
   * Fresh stats for one agent (and updates the cache). Fetches may overlap (the poll, the extension's
   * nudge, a daemon change): one that started earlier but answers later must not put its older view
   * back in the cache, or the lens would keep saying "1 running" after the rollout ended, since nothing
   * in the store changes afterwards to trigger another read. Returns the newest stats known.
   */
  async fetch(agent: string): Promise<AgentStats> {
    const seq = ++this.fetchSeq;
    const [ended, active] = await Promise.all([
      this.store.queryRollouts({ agent, status: ENDED, order: 'desc', limit: COUNT_LIMIT }),
      this.store.queryRollouts({ agent, status: ACTIVE, order: 'desc', limit: COUNT_LIMIT }),
    ]);
    const rewards: number[] = [];
    // Newest first; stop once two full windows have rewards.
    for (const rollout of ended.items) {
      if (rewards.length >= 2 * MAX_WINDOW) break;
      const r = await this.rewardOf(rollout);
      if (r !== null) rewards.push(r);
    }
    const stats: AgentStats = {
      agent,
      rollouts: ended.items.length,
      rolloutsCapped: ended.nextCursor !== null,
      ...summarizeRewards(rewards),
      active: active.items.length,
    };
    if (seq > (this.cachedSeq.get(agent) ?? 0)) {
      this.cachedSeq.set(agent, seq);
      this.statsCache.set(agent, stats);
    }
    return this.statsCache.get(agent)!;
  }
}
