/**
 * The numbers of each agent's CodeLens, read from the daemon's store API: the headline number with its
 * words and tooltip (assembled by the daemon: daemon/store/views.ts, what the dashboard shows too), how many rollouts ended,
 * how many are queued or running, its prompt optimizations (the lenses above its `llm.prompt` calls), its evals and
 * promoted prompts (their own lenses: protocol/run-results.ts) and which reward it trains on (its newest training run's
 * config: protocol/reward-source.ts): six requests per agent.
 */
import type { AgentHeadline } from '../../protocol/agent-headline.js';
import type { AgentStats, PromptOptimization } from '../../protocol/lsp.js';
import type { OptimizationSummary, PromotedPrompt } from '../../protocol/prompts.js';
import { agentReward } from '../../protocol/reward-source.js';
import { evalResults } from '../../protocol/run-results.js';
import type { Rollout, RolloutStatus, RunKind, TrainingRun } from '../../protocol/store.js';
import { COUNT_LIMIT } from '../store/views.js';

/** The part of the store client (client/client.ts AglClient, which the language server uses) the stats need. */
export interface StoreReader {
  /** The headline, assembled by the daemon (GET /v1/agl/views/headline). */
  agentHeadline(agent: string): Promise<AgentHeadline>;
  queryRollouts(query: {
    agent?: string;
    status?: RolloutStatus[];
    order?: 'asc' | 'desc';
    limit?: number;
  }): Promise<{ items: Rollout[]; nextCursor: string | null }>;
  listTrainingRuns(agent?: string, kind?: RunKind): Promise<TrainingRun[]>;
  listPromotedPrompts(agent?: string): Promise<PromotedPrompt[]>;
}

export { COUNT_LIMIT };

/** An optimization run as its prompts' lenses show it, read safely from its record (config.prompts, summary.scores). */
export function promptOptimization(run: TrainingRun): PromptOptimization {
  const prompts = Array.isArray(run.config.prompts) ? run.config.prompts.filter((p): p is string => typeof p === 'string') : [];
  const s = run.summary as OptimizationSummary;
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  return {
    runId: run.id,
    prompts,
    status: run.status,
    best: num(s.scores?.best?.val),
    seed: num(s.scores?.seed?.val),
    rollouts: num(s.rollouts) ?? run.step,
    budget: num(s.budget) ?? run.totalSteps,
    updatedAt: run.updatedAt,
  };
}
const ACTIVE: RolloutStatus[] = ['queuing', 'preparing', 'running', 'requeuing'];

export class AgentStatsSource {
  private readonly statsCache = new Map<string, AgentStats>();
  /** Fetches are numbered as they start; only a newer one than the stats cached may replace them. */
  private fetchSeq = 0;
  private readonly cachedSeq = new Map<string, number>();

  constructor(private readonly store: StoreReader) {}

  cached(agent: string): AgentStats | undefined {
    return this.statsCache.get(agent);
  }

  /**
   * Fresh stats for one agent (and updates the cache). Fetches may overlap (a store event, the extension's
   * nudge, a daemon change): one that started earlier but answers later must not put its older view
   * back in the cache, or the lens would keep saying "1 running" after the rollout ended, since nothing
   * in the store changes afterwards to trigger another read. Returns the newest stats known.
   */
  async fetch(agent: string): Promise<AgentStats> {
    const seq = ++this.fetchSeq;
    const [headline, active, runs, trainRuns, evals, promoted] = await Promise.all([
      this.store.agentHeadline(agent),
      this.store.queryRollouts({ agent, status: ACTIVE, order: 'desc', limit: COUNT_LIMIT }),
      this.store.listTrainingRuns(agent, 'optimize'),
      this.store.listTrainingRuns(agent, 'train'),
      this.store.listTrainingRuns(agent, 'eval'),
      this.store.listPromotedPrompts(agent),
    ]);
    const stats: AgentStats = {
      agent,
      rollouts: headline.rollouts,
      rolloutsCapped: headline.rolloutsCapped,
      headline,
      active: active.items.length,
      optimizations: runs.sort((a, b) => b.createdAt - a.createdAt).map(promptOptimization),
      reward: agentReward(trainRuns, headline),
      evals: evalResults(evals),
      promoted: promoted.map((p) => ({ name: p.name, runId: p.runId, candidateId: p.candidateId })),
    };
    if (seq > (this.cachedSeq.get(agent) ?? 0)) {
      this.cachedSeq.set(agent, seq);
      this.statsCache.set(agent, stats);
    }
    return this.statsCache.get(agent)!;
  }
}
