/**
 * One optimization's lifecycle (`agl optimize`), phase by phase, as training-run.ts is `agl train`'s: its record (a
 * run of kind 'optimize', created or resumed), the host of its rollouts (its own gateway, store API and runner
 * workers, or the workers alone against a running daemon), the seed read from the agent (seed.ts), the search (GEPA
 * or beam over the Evaluator and the Proposer), the end (the test set scored for the seed and the best) and the
 * record's summary. A killed run is continued with --resume: the search replays from its start with the same seed,
 * reading every score and optimizer answer it already has from the store, and so reaches the same end.
 * daemon/commands/optimize.ts parses the flags and calls runOptimization with a progress bar and Ctrl-C.
 */
import type { LightningStore } from '../../protocol/lightning-store.js';
import { METRICS } from '../../protocol/metrics.js';
import type { OptimizationSummary, OptimizerCall, PromptCandidate } from '../../protocol/prompts.js';
import type { OptimizeConfig } from '../../protocol/optimize-options.js';
import type { LlmResource, Resource, Rollout } from '../../protocol/store.js';
import { EngineSection } from '../algorithm/engine-config.js';
import { ServedPolicySet, servedSourceOf } from '../algorithm/served-policy-set.js';
import { startHost, startRunner } from '../algorithm/training-host.js';
import type { Judge } from '../judge/judge.js';
import { judgeEndedRollout } from '../judge/judge-rollout.js';
import { type RecordedJudgeSpend, recordedJudgeSpend } from '../judge/record.js';
import { openJudge } from '../judge/open-judge.js';
import type { Runner } from '../runner/runner.js';
import { loadOrCreateToken } from '../server/auth.js';
import { newId } from '../store/common.js';
import { DEFAULT_KEY_ENVS } from '../server/gateway-upstream.js';
import { beam } from './beam.js';
import { Budget } from './budget.js';
import { CandidatePool } from './candidates.js';
import { cancelInFlight, StoreEvaluator } from './evaluator.js';
import { gepa } from './gepa.js';
import { OptimizerRefused, Proposer } from './proposer.js';
import type { OptimizePlan } from './run-plan.js';
import { scoreSeed, type SearchContext, type SearchEnd } from './search.js';
import { bestByMean, mean } from './selection.js';
import { probeSeed } from './seed.js';

/** Where a run reports to: lines above the progress, and the progress (rollouts spent of the budget, a note). */
export interface OptimizeReporter {
  log(line: string): void;
  planned?(budget: number): void;
  progress?(spent: number, note: string): void;
}

/** Where the run's rollouts go: this process's own host on `store`, or a running daemon (its store is then `store`, a client). */
export interface OptimizeConnection {
  store: LightningStore;
  dataDir: string;
  daemon: { url: string; token: string } | null;
}

/** What a run ended with: the object `agl optimize --json` prints, and what the terminal summary reads. */
export interface OptimizeOutcome {
  runId: string;
  prompts: Record<string, { seed: string; best: string }>;
  scores: { seed: { val: number | null; test: number | null }; best: { val: number | null; test: number | null } };
  rollouts: number;
  optimizerCalls: number;
  candidates: number;
  stopReason: NonNullable<OptimizationSummary['stopReason']>;
  error: string | null;
  seedCandidate: string;
  bestCandidate: string;
  budget: number;
  tokens: { prompt: number; completion: number };
  cost: number | null;
  /** The LLM judge's calls, tokens and cost (null without its prices) when it was the reward; null without a judge. */
  judge: { calls: number; tokens: { prompt: number; completion: number }; cost: number | null } | null;
  seedFiles: Record<string, string>;
}

export interface RunOptions {
  signal: AbortSignal;
  report: OptimizeReporter;
  /** The first backoff of a failed optimizer call (tests shorten it). */
  backoffMs?: number;
}

/** Runs (or resumes) the plan's optimization to its end; null when `signal` stopped it (continue with --resume). */
export async function runOptimization(plan: OptimizePlan, conn: OptimizeConnection, o: RunOptions): Promise<OptimizeOutcome | null> {
  const c = plan.config;
  const store = conn.store;
  // The judge's rubric and key are read before anything is spent: a missing file or key is an error now.
  const judge = c.judge ? openJudge(c.judge, { seed: c.seed, log: (m) => o.report.log(`  ${m}`), signal: o.signal }) : null;
  const runId = plan.runId ?? newId('opt');
  if (plan.runId) {
    await store.updateTrainingRun(runId, { status: 'running' });
    const lost = await cancelInFlight(store, runId);
    if (lost) o.report.log(`agl optimize: ${lost} rollouts were under way when the run stopped: rolled out again`);
  } else await store.createTrainingRun({ id: runId, agent: c.agent, config: c as never, totalSteps: c.budget, kind: 'optimize' });
  const host = await hostRollouts(c, conn, (m) => o.report.log(`  ${m}`));
  const run = new OptimizationRun(plan, runId, store, host.endpoint, o, judge);
  try {
    return await run.run();
  } finally {
    await host.close();
  }
}

/** What hostRollouts needs of a run's settings (an optimization's, or an evaluation's: daemon/eval/). */
export type HostedRun = Pick<OptimizeConfig, 'llm' | 'workers' | 'agent' | 'agentSpec'>;

/** The gateway the agent's calls go through and the runner workers that run it: this process's own, or a daemon's. */
export async function hostRollouts(c: HostedRun, conn: OptimizeConnection, log: (m: string) => void): Promise<{ endpoint: string; close(): Promise<void> }> {
  const keyEnvs = c.llm.upstream ? [...new Set([...DEFAULT_KEY_ENVS, c.llm.upstream.keyEnv])] : undefined;
  if (conn.daemon) {
    const runner: Runner | null = startRunner({
      url: conn.daemon.url,
      token: conn.daemon.token,
      workers: c.workers,
      agent: c.agent,
      agentSpec: c.agentSpec,
      log,
    });
    return { endpoint: `${conn.daemon.url}/v1`, close: async () => void (await runner?.stop(5_000)) };
  }
  const engine = EngineSection.parse({});
  const served = c.llm.model ? new ServedPolicySet(servedSourceOf(c.llm.model, engine), { backend: undefined, engine, dataDir: conn.dataDir, log }) : undefined;
  const host = await startHost({
    store: conn.store,
    served,
    token: loadOrCreateToken(conn.dataDir).token,
    dataDir: conn.dataDir,
    workers: c.workers,
    agent: c.agent,
    agentSpec: c.agentSpec,
    log,
    allowedKeyEnvs: keyEnvs,
  });
  return host;
}

/** The LLM resource every rollout of a run carries: the agent's model (upstream or the local policy) through the run's gateway. */
export function llmResource(llm: OptimizeConfig['llm'], endpoint: string): LlmResource {
  const up = llm.upstream;
  return up
    ? { type: 'llm', endpoint, model: up.model, backend: 'upstream', upstreamUrl: up.url, apiKeyEnv: up.keyEnv, samplingParams: {} }
    : { type: 'llm', endpoint, model: 'policy', backend: 'local', samplingParams: {} };
}

class OptimizationRun {
  private readonly c: OptimizeConfig;
  private readonly budget: Budget;
  private readonly started = Date.now();
  private evaluator!: StoreEvaluator;
  private proposer!: Proposer;
  private pool!: CandidatePool;
  /** Rollouts of the run stored before this process (a resumed run's), and the probes this process rolled out. */
  private spentBefore = 0;
  private probes = 0;
  private seedFiles: Record<string, string> = {};
  /** The judge's calls of a resumed run's earlier processes (those recorded on its rollouts), added to this process's. */
  private judgeBefore: RecordedJudgeSpend = { calls: 0, prompt: 0, completion: 0, cost: 0 };

  constructor(
    private readonly plan: OptimizePlan,
    private readonly runId: string,
    private readonly store: LightningStore,
    private readonly endpoint: string,
    private readonly o: RunOptions,
    /** With --judge-* (config.judge): scores every succeeded rollout before its score and feedback are read. */
    private readonly judge: Judge | null = null,
  ) {
    this.c = plan.config;
    this.budget = new Budget(this.c.budget, 2 * plan.test.length);
  }

  private log(line: string): void {
    this.o.report.log(line);
  }

  /** Rollouts the run has spent, in every process that ran it (a kill's lost ones included). */
  private get rollouts(): number {
    return this.spentBefore + this.probes + this.evaluator.enqueued;
  }

  /** The judge's score and explanation become the rollout's reward and feedback; a call that keeps failing is said. */
  private async judgeRollout(judge: Judge, r: Rollout): Promise<void> {
    const got = await judgeEndedRollout(this.store, judge, r, `${this.runId}\u0000${r.id}`);
    if (got.kind === 'failed' && !judge.stopped)
      this.log(`agl optimize: the judge could not score rollout ${r.id}: ${got.reason} (it keeps the agent's own reward, or 0 without one)`);
  }

  async run(): Promise<OptimizeOutcome | null> {
    const [candidates, calls] = await Promise.all([this.store.listPromptCandidates(this.runId), this.store.listOptimizerCalls(this.runId)]);
    this.open(candidates, calls);
    // What the run's earlier processes spent on the judge: read from the calls recorded on its rollouts, not from the
    // stored summary (a killed process wrote that at its last val score, not at its last call).
    if (this.judge) this.judgeBefore = await recordedJudgeSpend(this.store, this.runId);
    this.spentBefore = await this.evaluator.load();
    this.o.report.planned?.(this.c.budget);
    this.sayStart(candidates.length, calls.length);
    let end: SearchEnd;
    try {
      end = await this.search(candidates[0]?.prompts ?? null);
    } catch (e) {
      if (this.o.signal.aborted) end = { reason: 'cancelled' };
      else if (e instanceof OptimizerRefused) end = { reason: 'failed', error: e.message };
      else {
        await this.record({ reason: 'failed', error: (e as Error).message }, 'failed');
        throw e;
      }
    }
    if (end.reason === 'cancelled') {
      await this.record(end, 'cancelled');
      return null;
    }
    return this.finish(end);
  }

  /** The run's Evaluator, Proposer and candidates, each given what the store already holds of the run. */
  private open(candidates: PromptCandidate[], calls: OptimizerCall[]): void {
    const { store, runId, c } = this;
    this.evaluator = new StoreEvaluator({
      store,
      runId,
      agent: c.agent,
      budget: this.budget,
      rolloutTimeoutSeconds: c.rolloutTimeoutSeconds,
      signal: this.o.signal,
      onRollout: () => this.o.report.progress?.(this.rollouts, this.note()),
      log: (m) => this.log(`agl optimize: ${m}`),
      grade: this.judge ? (r) => this.judgeRollout(this.judge!, r) : undefined,
    });
    this.proposer = new Proposer({
      url: c.optimizer.url,
      model: c.optimizer.model,
      apiKey: process.env[c.optimizer.keyEnv] ?? '',
      runId,
      priceIn: c.optimizer.priceIn,
      priceOut: c.optimizer.priceOut,
      retries: c.optimizer.retries,
      timeoutMs: c.optimizer.timeoutSeconds * 1000,
      backoffMs: this.o.backoffMs ?? 1000,
      stored: calls,
      record: (call) => store.addOptimizerCall(call),
      log: (m) => this.log(`  ${m}`),
    });
    this.pool = new CandidatePool({
      runId,
      records: store,
      stored: candidates,
      maxChars: c.maxPromptChars,
      publish: async (prompts, id) => (await store.addResources({ resources: this.resourcesOf(prompts), metadata: { runId, candidate: id } })).id,
    });
  }

  private llm(): LlmResource {
    return llmResource(this.c.llm, this.endpoint);
  }

  /** A candidate's resources: the run's LLM, and one prompt_template per prompt (what llm.prompt(name) returns in its rollouts). */
  private resourcesOf(prompts: Record<string, string>): Record<string, Resource> {
    const templates = Object.entries(prompts).map(([name, template]) => [name, { type: 'prompt_template', template, engine: 'f-string' }] as const);
    return { llm: this.llm(), ...Object.fromEntries(templates) };
  }

  private sayStart(candidates: number, calls: number): void {
    const { c, plan } = this;
    const model = c.llm.upstream ? `${c.llm.upstream.model} at ${c.llm.upstream.url}` : `the local policy ${c.llm.model ?? '(the daemon serves)'}`;
    this.log(
      `agl optimize: run ${this.runId}${candidates ? ` resumed (${candidates} candidates, ${calls} optimizer calls, ${this.spentBefore} rollouts stored)` : ''}: ` +
        `${c.algorithm} on ${c.prompts.join(', ')}, ${plan.train.length} train / ${plan.val.length} val / ${plan.test.length} test tasks, ` +
        `budget ${c.budget} rollouts; the agent's model ${model}; the optimizer ${c.optimizer.model} at ${c.optimizer.url}`,
    );
  }

  /** The seed (read from the agent, or a resumed run's stored one) scored on val, then the search. */
  private async search(storedSeed: Record<string, string> | null): Promise<SearchEnd> {
    const { c, plan } = this;
    this.budget.spend(1); // the probe reading the seed: counted once in every run, resumed or not
    const earlier = ((await this.store.getTrainingRun(this.runId))?.summary ?? {}) as OptimizationSummary;
    this.seedFiles = earlier.seedFiles ?? {};
    let seedPrompts = storedSeed;
    if (!seedPrompts) {
      const resourcesId = (await this.store.addResources({ resources: { llm: this.llm() }, metadata: { runId: this.runId, probe: true } })).id;
      const probe = { store: this.store, runId: this.runId, agent: c.agent, resourcesId, names: c.prompts, task: plan.val[0]! };
      const seed = await probeSeed({ ...probe, timeoutSeconds: c.rolloutTimeoutSeconds, signal: this.o.signal });
      this.probes += seed.enqueued ? 1 : 0;
      seedPrompts = seed.prompts;
      this.seedFiles = seed.files;
      for (const [name, source] of Object.entries(seed.sources)) if (source !== 'seed') this.log(`agl optimize: prompt ${name} starts from its ${source} text`);
    }
    const ctx: SearchContext = {
      pool: this.pool,
      evaluator: this.evaluator,
      ask: (purpose, content, read) => this.proposer.ask(purpose, content, read),
      meta: c.meta,
      budget: this.budget,
      train: plan.train,
      val: plan.val,
      components: c.prompts,
      seed: c.seed,
      minibatch: c.minibatch,
      signal: this.o.signal,
      log: (m) => this.log(`agl optimize: ${m}`),
      onVal: (cand, val, best) => this.onVal(cand, val, best),
    };
    await scoreSeed(ctx, seedPrompts);
    return c.algorithm === 'beam' ? beam(ctx, c.beam) : gepa(ctx, { merge: c.merge });
  }

  /** A candidate scored on all of val: the run's curve (val and best val against rollouts spent) and its record. */
  private async onVal(c: PromptCandidate, val: number, best: number): Promise<void> {
    const step = this.budget.spent;
    await this.store.addMetrics([
      { runId: this.runId, step, name: METRICS.optimizeVal, value: val },
      { runId: this.runId, step, name: METRICS.optimizeBestVal, value: best },
    ]);
    await this.record(null, 'running');
    this.log(`agl optimize: candidate ${c.ordinal} val ${val.toFixed(3)} (best ${best.toFixed(3)}) after ${step} rollouts`);
  }

  private note(): string {
    if (!this.pool?.val.size) return 'scoring the seed';
    const best = mean(this.pool.val.get(bestByMean(this.pool.val))!);
    return `best val ${best.toFixed(3)} · ${this.pool.all.length} candidates · ${this.proposer.totals.calls} optimizer calls`;
  }

  /** The end: the test set scored for the seed and the best (from the reserve), the record, the outcome. */
  private async finish(end: SearchEnd): Promise<OptimizeOutcome> {
    const seed = this.pool.all[0];
    if (!seed || !this.pool.val.has(seed.id)) {
      await this.record(end, 'failed');
      throw new Error(end.reason === 'failed' ? end.error : 'the seed was never scored on val');
    }
    const best = this.pool.get(bestByMean(this.pool.val));
    this.budget.releaseReserve();
    if (this.plan.test.length) {
      for (const c of best.id === seed.id ? [seed] : [seed, best]) {
        const test = mean((await this.evaluator.score(c, this.plan.test, 'test')).map((s) => s.score));
        await this.pool.decide(this.pool.get(c.id), 'accepted', { ...this.pool.get(c.id).scores, test });
      }
    }
    const summary = await this.record(end, end.reason === 'failed' ? 'failed' : 'succeeded');
    return this.outcome(summary, end);
  }

  /** The run's summary now, written to its record with `status`. */
  private async record(end: SearchEnd | null, status: 'running' | 'succeeded' | 'failed' | 'cancelled'): Promise<OptimizationSummary> {
    const t = this.proposer.totals;
    const seed = this.pool.all[0];
    const best = this.pool.val.size ? this.pool.get(bestByMean(this.pool.val)) : null;
    const priced = this.c.optimizer.priceIn !== null && this.c.optimizer.priceOut !== null;
    const summary: OptimizationSummary = {
      ...(end ? { stopReason: end.reason } : {}),
      ...(end?.reason === 'failed' ? { error: end.error } : {}),
      rollouts: this.rollouts,
      budget: this.c.budget,
      optimizerCalls: t.calls,
      optimizerTokens: { prompt: t.promptTokens, completion: t.completionTokens },
      cost: priced ? t.cost : null,
      ...this.judgeSpent(),
      ...(seed ? { seedCandidate: seed.id } : {}),
      ...(best ? { bestCandidate: best.id } : {}),
      scores: {
        seed: { val: seed?.scores.val ?? null, test: seed?.scores.test ?? null },
        best: { val: best?.scores.val ?? null, test: best?.scores.test ?? null },
      },
      candidates: this.pool.all.length,
      elapsedMs: Date.now() - this.started,
      seedFiles: this.seedFiles,
    };
    await this.store.updateTrainingRun(this.runId, { status, step: this.budget.spent, totalSteps: this.c.budget, summary: summary as Record<string, unknown> });
    return summary;
  }

  /** The judge's part of the summary: what this process's judge spent, and the run's earlier processes'. */
  private judgeSpent(): Pick<OptimizationSummary, 'judgeCalls' | 'judgeTokens' | 'judgeCost'> {
    if (!this.judge) return {};
    const t = this.judge.totals,
      b = this.judgeBefore;
    return {
      judgeCalls: b.calls + t.calls,
      judgeTokens: { prompt: b.prompt + t.promptTokens, completion: b.completion + t.completionTokens },
      judgeCost: t.cost === null || b.cost === null ? null : b.cost + t.cost,
    };
  }

  private outcome(s: OptimizationSummary, end: SearchEnd): OptimizeOutcome {
    const seed = this.pool.get(s.seedCandidate!),
      best = this.pool.get(s.bestCandidate!);
    return {
      runId: this.runId,
      prompts: Object.fromEntries(this.c.prompts.map((n) => [n, { seed: seed.prompts[n]!, best: best.prompts[n]! }])),
      scores: s.scores!,
      rollouts: s.rollouts!,
      optimizerCalls: s.optimizerCalls!,
      candidates: s.candidates!,
      stopReason: end.reason,
      error: end.reason === 'failed' ? end.error : null,
      seedCandidate: seed.id,
      bestCandidate: best.id,
      budget: this.c.budget,
      tokens: s.optimizerTokens!,
      cost: s.cost ?? null,
      judge: s.judgeCalls === undefined ? null : { calls: s.judgeCalls, tokens: s.judgeTokens!, cost: s.judgeCost ?? null },
      seedFiles: this.seedFiles,
    };
  }
}
