/**
 * `agl train <file>#<export> --train train.jsonl --val val.jsonl`: LightningRL training of the agent's
 * LLM with GRPO. This process hosts the policy (gateway + store API) and runner workers, records the
 * TrainingRun, metrics and transitions in the store (the dashboard plots them live), checkpoints after
 * every step, resumes a killed run with `--resume <run id | checkpoint dir>`, and writes a report.
 */
import { appendFileSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { configData, engineOptions, type SamplerConfig, type TrainConfig, type TrainConfigInput, resolveTrainConfig } from '../algorithm/config.js';
import { DEFAULT_KEY_ENVS } from '../server/gateway-upstream.js';
import type { EngineFacts, PolicyModel } from '../model/policy-contract.js';
import { EngineError, TorchAdapterModel } from '../model/torch-engine.js';
import { configOverrides, TRAIN_COMMAND, TRAIN_OPTIONS, trainHelp, type TrainFlags as ProtocolTrainFlags } from '../../protocol/train-options.js';
import { readCheckpoint, saveBestPolicy, saveCheckpoint } from '../algorithm/checkpoint.js';
import { type OpenPolicySet, openPolicySet } from '../algorithm/open-policy-set.js';
import type { Task } from '../algorithm/rollouts.js';
import { readJsonl } from '../algorithm/sft-trainer.js';
import { Trainer, type TrainerState, epochSteps, fewerStepsNote, newTrainerState, plannedSteps, stopReason } from '../algorithm/trainer.js';
import { METRICS, describeEngine, describeHeldOut, describePeakMemory, type TrainingRunSummary } from '../../protocol/metrics.js';
import { describeDiagnosis, policyChanged, type LearningDiagnosis } from '../../protocol/training-health.js';
import { policySet } from '../../protocol/policy-set.js';
import { loadOrCreateToken } from '../server/auth.js';
import { installLastResortGuard } from '../server/edge.js';
import { resolveDataDir } from '../../client/daemon-state.js';
import { ensureWritableDataDir } from '../state.js';
import { openStore } from '../store/index.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { parseCommand } from './flags.js';
import { Progress } from './progress.js';
import { startTrainingHost } from './train-host.js';
import { resolveAgentFile } from '../../client/agent-id.js';
import { runnableAgentSpec, storedAgentId } from '../runner/agent-ref.js';
import { writeReport } from './train-report.js';
import { lendRanks } from './train-node.js';

const HELP = trainHelp();

function loadTasks(path: string, what: string): Task[] {
  if (!existsSync(path)) throw new Error(`--${what} ${path}: no such file`);
  return readJsonl<Record<string, unknown>>(path).map((input, i) => {
    if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new Error(`${path}:${i + 1}: a task must be a JSON object`);
    return { id: typeof input.id === 'string' || typeof input.id === 'number' ? String(input.id) : `${what}-${i + 1}`, input };
  });
}

/** agl train's flags (protocol/train-options.ts) with the agent; trainAgent takes the same whether from the CLI or code. */
export type TrainFlags = ProtocolTrainFlags & { agent: string; train: string; val: string };
export interface TrainOutcome {
  runId: string;
  before: number | null;
  after: number | null;
  minutes: number;
  steps: number;
  report: string;
  checkpoint: string;
}

export async function run(argv: string[]): Promise<number> {
  const a = parseCommand(TRAIN_COMMAND, argv);
  if ('exit' in a) return a.exit;
  const f = a.values;
  const lent = await lendRanks(f, (line) => process.stderr.write(`${line}\n`)).catch((e: Error) => {
    process.stderr.write(`agl train: ${e.message}\n`);
    return 2;
  });
  if (lent !== null) return lent;
  const agent = a.positionals[0];
  // The task files: the flags, else the config's data: section (the agent's own train.yaml naming its data).
  let named: { train?: string; val?: string } = {};
  if (f.config && (!f.train || !f.val)) {
    try {
      named = configData(f.config);
    } catch (e) {
      process.stderr.write(`agl train: ${(e as Error).message}\n`);
      return 2;
    }
  }
  const train = f.train ?? named.train,
    val = f.val ?? named.val;
  if (!agent || !train || !val) {
    process.stderr.write(`agl train: the agent, --train and --val are required (or a --config whose data: names train and val)\n\n${HELP}`);
    return 2;
  }
  const agentFile = agent.split('#')[0];
  if (/\.(ts|mts|js|mjs|py)$/.test(agentFile) && !existsSync(resolveAgentFile(agentFile))) {
    process.stderr.write(`agl train: agent file ${agentFile} not found\n`);
    return 2;
  }
  const outcome = await trainAgent({ ...f, agent, train, val });
  return outcome ? 0 : 130;
}

/** Trains per the flags; null when interrupted (SIGINT/SIGTERM: the last checkpoint is kept). */
export async function trainAgent(f: TrainFlags): Promise<TrainOutcome | null> {
  const dataDir = resolveDataDir(f['data-dir']);
  ensureWritableDataDir(dataDir);
  const store = await openStore(f.store ?? process.env.AGL_STORE ?? { dataDir });
  const session = new TrainingSession(f, store, dataDir);
  const onSignal = () => {
    process.stderr.write('\nagl train: stopping (the last checkpoint is kept; continue with --resume)\n');
    session.controller.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await session.run();
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    session.close();
    await store.close();
  }
}

/** What a run resumes from, or starts with: the checkpoint (if any), the config and the tasks. */
interface RunPlan {
  ckpt: ReturnType<typeof readCheckpoint>;
  resumeDir: string | null;
  config: TrainConfig;
  train: Task[];
  val: Task[];
}

/**
 * One `agl train` run, phase by phase: plan it (resume or fresh config, tasks), open its engines, start or resume
 * its record, host the gateway and runner (and the sampler), train, then finish (report, summary) or fail (with
 * what survives and how to continue).
 */
class TrainingSession {
  readonly controller = new AbortController();
  /** The run, its rollouts and its runner's claims use the agent's stable id (protocol/agent-id.ts), whatever the cwd. */
  private readonly agent: string;
  /**
   * What the workers run: the agent as named, its file absolute. The stable id alone cannot find a file outside any
   * project from another folder (`agl train /abs/agent.ts#a` from elsewhere records `agent.ts#a`).
   */
  private readonly agentSpec: string | undefined;
  /** Why the run cannot learn, when its first steps showed it (protocol/training-health.ts): repeated at the end. */
  private diagnosis: LearningDiagnosis | null = null;
  /** The run's policies, stopped however the run ends (a torch engine is a child process). */
  private policies: OpenPolicySet | null = null;
  private engineLog: { path: string; write: (line: string) => void } | null = null;
  /** What the run record says about the run beyond its step (the dashboard's header): kept whole, as updates replace it. */
  private summary: TrainingRunSummary = {};

  constructor(
    private readonly f: TrainFlags,
    private readonly store: LightningStore,
    private readonly dataDir: string,
  ) {
    this.agent = storedAgentId(f.agent);
    try {
      this.agentSpec = runnableAgentSpec(f.agent);
    } catch {
      this.agentSpec = undefined; // not a reference the runner understands: its own error comes with the first rollout
    }
  }

  async run(): Promise<TrainOutcome | null> {
    const overrides = configOverrides(TRAIN_OPTIONS, this.f);
    const plan = await this.plan(overrides);
    const policies = await this.openPolicies(plan);
    const { state, checkpointDir } = await this.startRecord(plan, policies.fallback.engineFacts);
    const { token } = loadOrCreateToken(this.dataDir);
    const bar = this.f.quiet ? null : new Progress('train', state.totalSteps);
    const log = (m: string) => (bar ? bar.log(m) : process.stderr.write(`${m}\n`));
    // The training host serves the gateway and the store to the runner's workers: a bug that lets a request's
    // throw escape is logged, as in `agl serve`, rather than ending a long run.
    installLastResortGuard((m) => log(`  ${m}`));
    let trainerRef: Trainer | null = null;
    const host = await this.startHost(plan.config, policies, token, state, log, (name) => trainerRef?.policyVersion(name) ?? null);
    log(this.startLine(plan, policies.fallback, state, host.endpoint));
    if (this.summary.fewerSteps) log(`agl train: ${this.summary.fewerSteps}`);
    const trainer = this.trainer(plan, policies, host.endpoint, state, checkpointDir, bar, log);
    trainerRef = trainer;
    const perRole = policies.trained.filter((p) => p.roles);
    if (perRole.length)
      log(
        `agl train: one policy per role: ${perRole.map((p) => `${p.name} (${p.roles!.join(', ')})`).join('; ')}; other roles: ${policies.fallback.name}, untrained`,
      );
    if (policies.plan.lora) log(`agl train: LoRA adapters on ${policies.plan.base}, which stays frozen: ${adapterStarts(policies)}`);
    try {
      await trainer.run();
    } catch (e) {
      await host.close();
      return this.fail(e, trainer.state, checkpointDir);
    }
    bar?.done();
    await host.close();
    return this.finish(plan, trainer, checkpointDir);
  }

  /** What the run is, in one line: its engine (what it is measured on), its tasks and its steps. */
  private startLine({ ckpt, config, train }: RunPlan, policy: PolicyModel, state: TrainerState, endpoint: string): string {
    const t = config.training;
    const tasks = this.summary.tasks!;
    return (
      `agl train: run ${state.runId}${ckpt ? ` resumed at step ${state.step}` : ''}, ${policy.name} on ${describeEngine(policy.engineFacts)}, ` +
      `${train.length} train tasks / ${tasks.val} held-out tasks per validation, ` +
      `${state.totalSteps} step${state.totalSteps === 1 ? '' : 's'} of ${t.batchSize} tasks x ${t.groupSize} rollouts; gateway ${endpoint}`
    );
  }

  /** Resume (a run id, whose checkpoint dir the store knows, or a checkpoint folder) or a fresh config; the tasks. */
  private async plan(overrides: TrainConfigInput): Promise<RunPlan> {
    const f = this.f;
    let resumeDir: string | null = null;
    if (f.resume) {
      const byRun = await this.store.getTrainingRun(f.resume);
      resumeDir = byRun?.checkpointDir ?? resolve(f.resume);
      if (!existsSync(join(resumeDir, 'state.json'))) throw new Error(`--resume ${f.resume}: no checkpoint found (looked in ${resumeDir})`);
    }
    const ckpt = resumeDir ? readCheckpoint(resumeDir) : null;
    const config: TrainConfig = ckpt ? resolveTrainConfig(null, ckpt.config as TrainConfigInput) : resolveTrainConfig(f.config ?? null, overrides);
    // A resumed run keeps its engine unless the flags name one (e.g. resuming a tfjs run on torch, or on more ranks).
    if (ckpt) config.engine = resolveTrainConfig(null, { ...(ckpt.config as TrainConfigInput), engine: { ...config.engine, ...overrides.engine } }).engine;
    const train = loadTasks(f.train, 'train'),
      val = loadTasks(f.val, 'val');
    if (train.length === 0 || val.length === 0) throw new Error('--train and --val need at least one task each');
    return { ckpt, resumeDir, config, train, val };
  }

  /**
   * The run's policy set (protocol/policy-set.ts) on its engine: from the checkpoint when resuming (its policies must
   * serve the roles the config gives them), else from each policy's starting weights.
   */
  private async openPolicies({ ckpt, resumeDir, config }: RunPlan): Promise<OpenPolicySet> {
    this.engineLog = config.engine.kind === 'torch' ? openEngineLog(this.dataDir) : null;
    const engine = engineOptions(config.engine, { dataDir: this.dataDir, log: this.engineLog?.write });
    this.policies = await openPolicySet(policySet(config), {
      open: { backend: config.runtime.backend, seed: config.training.seed, ...engine },
      resume: ckpt && resumeDir ? { ckpt, dir: resumeDir } : null,
    });
    return this.policies;
  }

  /** The run's record: resumed (status back to running, its summary kept but why it stopped) or created. */
  private async startRecord({ ckpt, resumeDir, config, train, val }: RunPlan, engine: EngineFacts): Promise<{ state: TrainerState; checkpointDir: string }> {
    const fewerSteps = fewerStepsNote(config, train.length);
    this.summary = {
      epochSteps: epochSteps(config, train.length),
      data: { train: resolve(this.f.train), val: resolve(this.f.val) },
      tasks: { train: train.length, val: config.training.valSize > 0 ? Math.min(config.training.valSize, val.length) : val.length },
      engine,
      ...(fewerSteps ? { fewerSteps } : {}),
    };
    if (ckpt && resumeDir) {
      const state = ckpt.trainer;
      const { stopReason: _, error: __, fewerSteps: ___, ...earlier } = ((await this.store.getTrainingRun(state.runId))?.summary ?? {}) as TrainingRunSummary;
      this.summary = { ...earlier, ...this.summary };
      await this.store.updateTrainingRun(state.runId, { status: 'running', summary: { ...this.summary } });
      return { state, checkpointDir: resumeDir };
    }
    const runRec = await this.store.createTrainingRun({
      agent: this.agent,
      config: config as unknown as Record<string, unknown>,
      totalSteps: plannedSteps(config, train.length),
    });
    const checkpointDir = resolve(config.runtime.checkpointDir ?? join(this.dataDir, 'runs', runRec.id));
    await this.store.updateTrainingRun(runRec.id, { checkpointDir });
    return { state: newTrainerState(runRec), checkpointDir };
  }

  /** This process's store API, gateway and runner workers; the sampler (engine.sampler) brought to the run's weights. */
  private async startHost(
    config: TrainConfig,
    policies: OpenPolicySet,
    token: string,
    state: TrainerState,
    log: (m: string) => void,
    policyVersion: (name: string) => number | null,
  ) {
    const sampler = config.engine.sampler;
    const host = await startTrainingHost({
      store: this.store,
      policies,
      policyVersion,
      token,
      dataDir: this.dataDir,
      workers: config.runtime.workers,
      agent: this.agent,
      agentSpec: this.agentSpec,
      log: (m) => log(`  ${m}`),
      allowedKeyEnvs: sampler?.apiKeyEnv ? [...DEFAULT_KEY_ENVS, sampler.apiKeyEnv] : undefined,
    });
    if (sampler) {
      log(
        `agl train: sampling from ${sampler.url} (model ${sampler.model})${sampler.push ? `; each update is pushed to it through ${sampler.push.url}` : ', which keeps its weights (no push)'}`,
      );
      // The sampler starts from this run's weights, whatever it was started with.
      if (sampler.push) await pushWeights(policies.fallback, sampler.push, state.step);
    }
    if (this.engineLog) log(`agl train: the torch engine's output goes to ${this.engineLog.path}`);
    return host;
  }

  private trainer(
    { config, train, val }: RunPlan,
    policies: OpenPolicySet,
    endpoint: string,
    state: TrainerState,
    checkpointDir: string,
    bar: Progress | null,
    log: (m: string) => void,
  ): Trainer {
    const sampler = config.engine.sampler;
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
        signal: this.controller.signal,
        // The sampler serves one model: the run's one policy (a config with policies: or LoRA cannot name one).
        sampler: sampler ? { url: sampler.url, model: sampler.model, apiKeyEnv: sampler.apiKeyEnv } : null,
        afterUpdate: sampler?.push
          ? async (s) => {
              await pushWeights(policies.fallback, sampler.push!, s.step);
            }
          : undefined,
        checkpoint: async (s) => {
          await saveCheckpoint(checkpointDir, policies, s, { agent: this.agent, config });
        },
        saveBest: async (s) => {
          const path = await saveBestPolicy(checkpointDir, policies, s, config.training.seed);
          this.summary = { ...this.summary, best: { ...s.best!, path }, elapsedMs: s.elapsedMs };
          await this.store.updateTrainingRun(s.runId, { summary: { ...this.summary } });
        },
        log,
        onDiagnosis: (d) => {
          this.diagnosis = d;
        },
        onProgress: (phase, done, total, s) => bar?.update(s.step, progressNote(phase, done, total, s)),
      },
      state,
    );
  }

  /** A run that ended early: cancelled (null), or failed with its error (a dead engine's says what survives and how to continue). */
  private async fail(e: unknown, state: TrainerState, checkpointDir: string): Promise<null> {
    const ended = { ...this.summary, elapsedMs: state.elapsedMs };
    if (this.controller.signal.aborted) {
      await this.store.updateTrainingRun(state.runId, { status: 'cancelled', summary: { ...ended, stopReason: 'cancelled' } });
      return null;
    }
    await this.store.updateTrainingRun(state.runId, { status: 'failed', summary: { ...ended, stopReason: 'failed', error: (e as Error).message } });
    if (e instanceof EngineError) {
      const f = this.f;
      const saved = readCheckpoint(checkpointDir)?.trainer.step;
      throw new Error(
        `${e.message}${this.engineLog ? `\n(the engine's whole output: ${this.engineLog.path})` : ''}\n` +
          `Nothing acknowledged is lost: the store holds every rollout, and the last checkpoint ${saved === undefined ? 'has not been written yet' : `is step ${saved}`}. ` +
          `Continue with: agl train ${f.agent} --train ${f.train} --val ${f.val} --resume ${state.runId}`,
        { cause: e },
      );
    }
    throw e;
  }

  /** The report, the run's summary and status, and what to do next. */
  private async finish({ config, train }: RunPlan, trainer: Trainer, checkpointDir: string): Promise<TrainOutcome> {
    const state = trainer.state;
    const before = state.val[0]?.reward ?? null,
      after = state.val.at(-1)?.reward ?? null;
    const points = await this.store.queryMetrics(state.runId);
    const engine = { ...this.summary.engine!, ...(trainer.peakMemoryKind ? { memory: trainer.peakMemoryKind } : {}) };
    const peak = Math.max(...points.filter((p) => p.name === METRICS.peakMemoryMiB).map((p) => p.value));
    const report = writeReport(join(checkpointDir, 'report'), {
      title: `Training report: ${this.agent}`,
      state,
      agent: this.agent,
      config,
      facts: { 'measured on': describeEngine(engine), ...(peak > 0 ? { 'peak memory': describePeakMemory(peak, engine.memory) } : {}) },
    });
    this.summary = {
      ...this.summary,
      engine,
      stopReason: stopReason(state, config, train.length),
      elapsedMs: state.elapsedMs,
      valBefore: before,
      valAfter: after,
      minutes: state.elapsedMs / 60000,
      report: report.html,
    };
    await this.store.updateTrainingRun(state.runId, { status: 'succeeded', step: state.step, summary: { ...this.summary } });
    const checkpoint = join(checkpointDir, `policy-${state.step}`);
    const lines = [
      `held-out reward ${before?.toFixed(3)} -> ${after === null ? '-' : describeHeldOut(after, state.val.at(-1)?.tasks, 3)} in ${(state.elapsedMs / 60000).toFixed(1)} min, ` +
        `on ${describeEngine(engine)}${peak > 0 ? `, peak memory ${describePeakMemory(peak, engine.memory)}` : ''}`,
      ...(policyChanged(points) === false
        ? ['the policy did not change in any step (no update moved a weight): the checkpoint holds the weights it started from']
        : []),
      ...(this.summary.stopReason === 'max-steps'
        ? [`stopped at training.maxSteps (--max-steps) ${state.step}: the epochs make ${this.summary.epochSteps} steps`]
        : []),
      ...(this.summary.stopReason === 'max-minutes'
        ? [`stopped at training.maxMinutes ${config.training.maxMinutes} after ${state.step} of ${state.totalSteps} steps`]
        : []),
      ...(this.diagnosis ? describeDiagnosis(this.diagnosis) : []),
    ];
    process.stdout.write(
      lines.map((l) => `agl train: ${l}\n`).join('') +
        `checkpoint: ${checkpoint}\nreport: ${report.html}\nreward curve: ${report.png}\n` +
        `transitions: agl export --format jsonl --run ${state.runId}\n`,
    );
    return { runId: state.runId, before, after, minutes: state.elapsedMs / 60000, steps: state.step, report: report.html, checkpoint };
  }

  /** Stops the engines (a torch engine is a child process). */
  close(): void {
    this.policies?.dispose();
  }
}

/**
 * The progress bar's note: the phase and its progress, the last held-out reward with its tasks and step (while a
 * validation runs, only its progress: the number it will replace is not its result), the last training reward.
 */
function progressNote(phase: string, done: number, total: number, s: TrainerState): string {
  if (phase === 'validate') return `validating ${done}/${total} held-out tasks${s.step > 0 ? ` after step ${s.step}` : ' before training'}`;
  const v = s.val.at(-1);
  const heldOut = v ? `held-out ${describeHeldOut(v.reward, v.tasks)} (step ${v.step})` : 'held-out -';
  return `${phase} ${done}/${total} · ${heldOut} · reward ${s.train.at(-1)?.reward.toFixed(2) ?? '-'}`;
}

/**
 * Saves the policy where the sampler can read it (<push.dir>/step-<n>) and tells the sampler to load it (POST
 * push.url with push.body's {dir} / {step} filled in); keeps the newest two step folders.
 */
async function pushWeights(policy: PolicyModel, push: NonNullable<SamplerConfig['push']>, step: number): Promise<void> {
  const root = resolve(push.dir);
  const dir = join(root, `step-${step}`);
  rmSync(dir, { recursive: true, force: true });
  await policy.save(dir);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (push.tokenEnv) {
    const token = process.env[push.tokenEnv];
    if (!token) throw new Error(`engine.sampler.push.tokenEnv names ${push.tokenEnv}, which is not set`);
    headers.authorization = `Bearer ${token}`;
  }
  const body = push.body.replaceAll('{dir}', JSON.stringify(dir).slice(1, -1)).replaceAll('{step}', String(step));
  let res: Response;
  try {
    res = await fetch(push.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(600_000) });
  } catch (e) {
    throw new Error(`engine.sampler.push: cannot reach ${push.url} to load step ${step}: ${(e as Error).message}`, { cause: e });
  }
  if (!res.ok) throw new Error(`engine.sampler.push: ${push.url} answered ${res.status} to loading ${dir}: ${(await res.text()).slice(0, 500)}`);
  for (const name of readdirSync(root)) {
    const n = /^step-(\d+)$/.exec(name);
    if (n && Number(n[1]) < step - 1) rmSync(join(root, name), { recursive: true, force: true });
  }
}

/** How each LoRA adapter of the set starts: fresh (the base's outputs), or continuing a saved adapter from its update count. */
function adapterStarts(set: OpenPolicySet): string {
  return set.trained
    .map((p) => {
      const info = p.model instanceof TorchAdapterModel ? p.model.info : null;
      return `${p.name} (${info ? `${info.parameters} parameters, ${info.step ? `continuing from update ${info.step}` : 'fresh'}` : p.model.backend})`;
    })
    .join('; ');
}

/** The torch engine's own output (transformers' and torch's messages) goes to a log file, not over the progress bar. */
function openEngineLog(dataDir: string): { path: string; write: (line: string) => void } {
  const dir = join(dataDir, 'logs');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `engine-${new Date().toISOString().replace(/[:.]/g, '-')}.log`);
  return {
    path,
    write: (line: string) => {
      try {
        appendFileSync(path, `${line}\n`);
      } catch {
        /* a full disk must not stop training */
      }
    },
  };
}
