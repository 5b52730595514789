/**
 * One training run's lifecycle, phase by phase: plan it (resume or a fresh config, the tasks: run-plan.ts), open its
 * policies on their engine, start or resume its record (run-record.ts), host the gateway, the store API and the
 * runner workers (training-host.ts) and the sampler (sampler-push.ts), train (trainer.ts), then finish (report,
 * summary) or fail (with what survives and how to continue). `agl train` (daemon/commands/train.ts) parses its flags
 * and calls runTraining with a terminal to report to; the samples' harness and the benchmarks call it the same way.
 */
import type { LightningStore } from '../../protocol/lightning-store.js';
import { describeEngine, describeHeldOut, describeJudgeStep } from '../../protocol/metrics.js';
import { modelName } from '../../protocol/policy-set.js';
import type { TrainFlags as ProtocolTrainFlags } from '../../protocol/train-options.js';
import { configOverrides, TRAIN_OPTIONS } from '../../protocol/train-options.js';
import { storedAgentId, runnableAgentSpec } from '../runner/agent-ref.js';
import { loadOrCreateToken } from '../server/auth.js';
import { installLastResortGuard } from '../server/edge.js';
import { DEFAULT_KEY_ENVS } from '../server/gateway-upstream.js';
import { EngineError } from '../model/torch-engine.js';
import type { Judge } from '../judge/judge.js';
import { checkNotSelfJudge, openJudge } from '../judge/open-judge.js';
import { readCheckpoint, saveBestPolicy, saveCheckpoint } from './checkpoint.js';
import type { OpenPolicySet } from './open-policy-set.js';
import { adapterStarts, openEngineLog, openRunPolicies, planRun, type RunPlan } from './run-plan.js';
import { RunRecord, type TrainOutcome } from './run-record.js';
import { pushWeights } from './sampler-push.js';
import { Trainer } from './trainer.js';
import type { TrainerState } from './trainer-state.js';
import { startTrainingHost, type TrainingHost } from './training-host.js';

export type { TrainOutcome } from './run-record.js';

/** agl train's flags (protocol/train-options.ts) with the agent and its task files: what a run is given, from the CLI or code. */
export type TrainFlags = ProtocolTrainFlags & { agent: string; train: string; val: string };

/** Where a run reports to: lines above the progress, and the progress itself (the current step and a note). */
export interface RunReporter {
  log(line: string): void;
  progress?(step: number, note: string): void;
  /** The planned steps, once known (a resumed run's too). */
  planned?(totalSteps: number): void;
}

/** Trains per the flags against `store` (data dir `dataDir`); null when `signal` stopped it (the last checkpoint is kept). */
export async function runTraining(
  f: TrainFlags,
  store: LightningStore,
  dataDir: string,
  o: { signal: AbortSignal; report: RunReporter },
): Promise<TrainOutcome | null> {
  const run = new TrainingRun(f, store, dataDir, o.signal, o.report);
  try {
    return await run.run();
  } finally {
    run.close();
  }
}

class TrainingRun {
  /** The run, its rollouts and its runner's claims use the agent's stable id (protocol/agent-id.ts), whatever the cwd. */
  private readonly agent: string;
  private readonly record: RunRecord;
  /** The run's policies, stopped however the run ends (a torch engine is a child process). */
  private policies: OpenPolicySet | null = null;
  private engineLog: { path: string; write: (line: string) => void } | null = null;

  constructor(
    private readonly f: TrainFlags,
    private readonly store: LightningStore,
    private readonly dataDir: string,
    private readonly signal: AbortSignal,
    private readonly report: RunReporter,
  ) {
    this.agent = storedAgentId(f.agent);
    this.record = new RunRecord(store, this.agent);
  }

  async run(): Promise<TrainOutcome | null> {
    const f = this.f;
    const plan = await planRun(this.store, {
      resume: f.resume,
      configFile: f.config,
      overrides: configOverrides(TRAIN_OPTIONS, f),
      train: f.train,
      val: f.val,
    });
    this.engineLog = plan.config.engine.kind === 'torch' ? openEngineLog(this.dataDir) : null;
    // The judge's rubric and key are read before anything is spent: a missing file or key is an error now, not at step 1.
    const judge = plan.config.judge
      ? openJudge(plan.config.judge, { seed: plan.config.training.seed, log: (m) => this.report.log(`  ${m}`), signal: this.signal })
      : null;
    const policies = (this.policies = await openRunPolicies(plan, this.dataDir, this.engineLog?.write));
    if (judge) judgeSelf(judge, plan, policies, null);
    const { state, checkpointDir } = await this.record.start(plan, policies.fallback.engineFacts, {
      trainFile: this.f.train,
      valFile: this.f.val,
      dataDir: this.dataDir,
    });
    this.report.planned?.(state.totalSteps);
    const log = (m: string) => this.report.log(m);
    // The training host serves the gateway and the store to the runner's workers: a bug that lets a request's
    // throw escape is logged, as in `agl serve`, rather than ending a long run.
    installLastResortGuard((m) => log(`  ${m}`));
    let trainer: Trainer | null = null;
    const host = await this.startHost(plan, policies, state, (name) => trainer?.policyVersion(name) ?? null);
    this.sayStart(plan, policies, state, host.endpoint);
    try {
      if (judge) this.sayJudge(judge, plan, policies, host.endpoint);
    } catch (e) {
      await host.close();
      await this.record.ended(state, { error: (e as Error).message });
      throw e;
    }
    trainer = this.trainer(plan, policies, host.endpoint, state, checkpointDir, judge);
    try {
      await trainer.run();
    } catch (e) {
      await host.close();
      return this.fail(e, trainer.state, checkpointDir);
    }
    await host.close();
    return this.record.finish(plan, trainer.state, { checkpointDir, peakMemoryKind: trainer.peakMemoryKind, diagnosis: trainer.diagnosis });
  }

  /** What the run is: its engine (what it is measured on), its tasks and steps; its policies per role or adapters. */
  private sayStart({ ckpt, config, train }: RunPlan, policies: OpenPolicySet, state: TrainerState, endpoint: string): void {
    const t = config.training;
    const s = this.record.summary;
    const log = (m: string) => this.report.log(`agl train: ${m}`);
    log(
      `run ${state.runId}${ckpt ? ` resumed at step ${state.step}` : ''}, ${modelName(policies.plan.base)} on ${describeEngine(policies.fallback.engineFacts)}, ` +
        `${train.length} train tasks / ${s.tasks!.val} held-out tasks per validation, ` +
        `${state.totalSteps} step${state.totalSteps === 1 ? '' : 's'} of ${t.batchSize} tasks x ${t.groupSize} rollouts; gateway ${endpoint}`,
    );
    if (s.fewerSteps) log(s.fewerSteps);
    const perRole = policies.trained.filter((p) => p.roles);
    if (perRole.length)
      log(
        `one policy per role: ${perRole.map((p) => `${p.name} (${p.roles!.join(', ')})`).join('; ')}; ` +
          `other roles: ${policies.fallback.name} (${modelName(policies.plan.base)}), untrained`,
      );
    if (policies.plan.lora) log(`LoRA adapters on ${policies.plan.base}, which stays frozen: ${adapterStarts(policies)}`);
  }

  /** The judge the run trains with, refused when it is the policy being trained (unless allowed). */
  private sayJudge(judge: Judge, plan: RunPlan, policies: OpenPolicySet, endpoint: string): void {
    const j = judge.settings;
    const self = judgeSelf(judge, plan, policies, endpoint);
    const reward = j.weight === null ? "its score is each rollout's reward" : `each rollout's reward is the agent's own + ${j.weight} x its score`;
    this.report.log(
      `agl train: an LLM judge scores the rollouts: ${j.model} at ${j.url}, ${j.mode} mode (${j.mode === 'group' ? 'one call per task group' : 'one call per rollout'}); ` +
        `${reward}, except where the agent locked its own; rubric ${judge.rubricSha}${self ? `; judging itself, as allowed: ${self}` : ''}` +
        (j.retest
          ? `; test-retest between calls: its weight (how informative its scores show themselves) scales the update (left out at ${j.minReliability ? `or below ${j.minReliability}` : '0'})`
          : '; no test-retest (judge.retest false)'),
    );
  }

  /** This process's store API, gateway and runner workers; the sampler (engine.sampler) brought to the run's weights. */
  private async startHost({ config }: RunPlan, policies: OpenPolicySet, state: TrainerState, version: (name: string) => number | null): Promise<TrainingHost> {
    const sampler = config.engine.sampler;
    let agentSpec: string | undefined;
    try {
      agentSpec = runnableAgentSpec(this.f.agent);
    } catch {
      agentSpec = undefined; // not a reference the runner understands: its own error comes with the first rollout
    }
    const host = await startTrainingHost({
      store: this.store,
      policies,
      runId: state.runId,
      policyVersion: version,
      token: loadOrCreateToken(this.dataDir).token,
      dataDir: this.dataDir,
      workers: config.runtime.workers,
      agent: this.agent,
      agentSpec,
      log: (m) => this.report.log(`  ${m}`),
      allowedKeyEnvs: sampler?.apiKeyEnv ? [...DEFAULT_KEY_ENVS, sampler.apiKeyEnv] : undefined,
    });
    if (sampler) {
      this.report.log(
        `agl train: sampling from ${sampler.url} (model ${sampler.model})${sampler.push ? `; each update is pushed to it through ${sampler.push.url}` : ', which keeps its weights (no push)'}`,
      );
      // The sampler starts from this run's weights, whatever it was started with.
      if (sampler.push) await pushWeights(policies.fallback, sampler.push, state.step);
    }
    if (this.engineLog) this.report.log(`agl train: the torch engine's output goes to ${this.engineLog.path}`);
    return host;
  }

  private trainer(
    { config, train, val }: RunPlan,
    policies: OpenPolicySet,
    endpoint: string,
    state: TrainerState,
    checkpointDir: string,
    judge: Judge | null,
  ): Trainer {
    const sampler = config.engine.sampler;
    const push = sampler?.push;
    return new Trainer(
      {
        store: this.store,
        policies,
        endpoint,
        agent: this.agent,
        agentRef: this.f.agent,
        config,
        train,
        val,
        signal: this.signal,
        // The sampler serves one model: the run's one policy (a config with policies: or LoRA cannot name one).
        sampler: sampler ? { url: sampler.url, model: sampler.model, apiKeyEnv: sampler.apiKeyEnv } : null,
        judge,
        afterUpdate: push ? (s) => pushWeights(policies.fallback, push, s.step) : undefined,
        checkpoint: async (s) => {
          await saveCheckpoint(checkpointDir, policies, s, { agent: this.agent, config });
        },
        saveBest: async (s) => this.record.best(s, await saveBestPolicy(checkpointDir, policies, s, config.training.seed)),
        log: (m) => this.report.log(m),
        onProgress: (phase, done, total, s) => this.report.progress?.(s.step, progressNote(phase, done, total, s)),
      },
      state,
    );
  }

  /** A run that ended early: cancelled (null), or failed with its error (a dead engine's says what survives and how to continue). */
  private async fail(e: unknown, state: TrainerState, checkpointDir: string): Promise<null> {
    if (this.signal.aborted) {
      await this.record.ended(state, { cancelled: true });
      return null;
    }
    await this.record.ended(state, { error: (e as Error).message });
    if (!(e instanceof EngineError)) throw e;
    const f = this.f;
    const saved = readCheckpoint(checkpointDir)?.trainer.step;
    throw new Error(
      `${e.message}${this.engineLog ? `\n(the engine's whole output: ${this.engineLog.path})` : ''}\n` +
        `Nothing acknowledged is lost: the store holds every rollout, and the last checkpoint ${saved === undefined ? 'has not been written yet' : `is step ${saved}`}. ` +
        `Continue with: agl train ${f.agent} --train ${f.train} --val ${f.val} --resume ${state.runId}`,
      { cause: e },
    );
  }

  /** Stops the engines (a torch engine is a child process). */
  close(): void {
    this.policies?.dispose();
  }
}

/**
 * Whether the judge is the policy being trained (the run's gateway at `endpoint`, once it listens; its sampler; a
 * trained policy's name): throws the refusal unless judge.allowSelfJudge; returns what matched when allowed.
 */
function judgeSelf(judge: Judge, { config }: RunPlan, policies: OpenPolicySet, endpoint: string | null): string | null {
  const sampler = config.engine.sampler;
  const names = [...new Set(policies.trained.flatMap((p) => [p.name, p.model.name]))];
  return checkNotSelfJudge(judge.settings, { endpoint, sampler: sampler ? { url: sampler.url, model: sampler.model } : null, names });
}

/**
 * The progress bar's note: the phase and its progress, the last held-out reward with its tasks and step (while a
 * validation runs, only its progress: the number it will replace is not its result), the last training reward.
 */
function progressNote(phase: string, done: number, total: number, s: TrainerState): string {
  if (phase === 'validate') return `validating ${done}/${total} held-out tasks${s.step > 0 ? ` after step ${s.step}` : ' before training'}`;
  const v = s.val.at(-1);
  const heldOut = v ? `held-out ${describeHeldOut(v.reward, v.tasks)} (step ${v.step})` : 'held-out -';
  const judge = s.judge ? ` · judge ${describeJudgeStep(s.judge)}/step` : '';
  return `${phase} ${done}/${total} · ${heldOut} · reward ${s.train.at(-1)?.reward.toFixed(2) ?? '-'}${judge}`;
}
