/**
 * "Agent Lightning: Train This Agent": picks the agent, the training and validation data, the budget and
 * the model (each remembered per agent in workspaceState; a task file is preselected only when it is the
 * agent's: its last choice, its train.yaml's data:, its last run's: train-choices.ts dataOptions), and for an
 * agent that emits no reward an LLM judge with its rubric file (judge-picks.ts), then runs
 * `agl train` as a child process against the extension's daemon. Progress is read from the store (the
 * training run's step / total and its reward metric) whenever the daemon's events say the run moved, shown in a
 * cancellable notification and the status bar; the dashboard opens on the run. Cancelling sends SIGINT, which `agl train` treats as "stop after saving".
 */
import { diagnosisSentence, policyChanged, type LearningDiagnosis } from '../protocol/training-health.js';
import type { TrainConfigInput } from '../protocol/train-config.js';
import { mkdir, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { COMMANDS } from '../protocol/commands.js';
import type { AgentInfo } from '../protocol/lsp.js';
import { describeEngine, describeHeldOut, type TrainingRunSummary } from '../protocol/metrics.js';
import type { TrainingRun } from '../protocol/store.js';
import type { AglClient } from '../client/client.js';
import { lastError, runAgl } from './agl-process.js';
import { readSettings } from './config.js';
import type { Ctx } from './ctx.js';
import { judgeOfferReason } from './judge-choices.js';
import { agentSource, chooseJudge, statsOf } from './judge-picks.js';
import { pickTaskFile, rememberAgent, resolveAgent, workspaceJsonlFiles } from './pickers.js';
import {
  AGENT_CONFIG_BUDGET,
  agentTrainConfig,
  BUDGETS,
  type Budget,
  budgetOf,
  configBudgetDetail,
  configTaskFiles,
  type DataOrigin,
  dataOptions,
  lastRunTaskFiles,
  nearbyCheckpoints,
  type TaskFiles,
  type TrainChoice,
  trainArgs,
} from './train-choices.js';
import { onRunProgress, TrainingWatch } from './train-progress.js';
import { showTrainingDashboard } from './views.js';

const stateKey = (agent: string) => `agentLightning.train:${agent}`;

/** Writes the budget's config file (JSON is YAML) into the extension's storage; returns its path. */
async function writeBudgetConfig(ctx: Ctx, budget: Budget): Promise<string> {
  const dir = ctx.extension.globalStorageUri.fsPath;
  await mkdir(dir, { recursive: true });
  const file = join(dir, `train-${budget.id}.yaml`);
  const config: TrainConfigInput = { training: { valSize: budget.valSize } }; // agl train's own schema (protocol/train-config.ts)
  await writeFile(file, JSON.stringify(config, null, 2) + '\n');
  return file;
}

/** Where the agent's own task files are named, in the order they win (dataOptions): its last choice here, its train.yaml's data:, its last run's. */
async function taskSources(ctx: Ctx, client: AglClient, agent: AgentInfo, agentConfig: string | null, last: TrainChoice | undefined) {
  const sources: { origin: DataOrigin; files: TaskFiles }[] = [];
  if (last) sources.push({ origin: 'remembered', files: { train: last.train, val: last.val } });
  if (agentConfig) {
    try {
      sources.push({ origin: 'config', files: configTaskFiles(agentConfig) });
    } catch (err) {
      // agl train reports the file's errors when it runs; here they only cost the preselection.
      ctx.log(`Train ${agent.name}: the data: of ${agentConfig} is not offered: ${(err as Error).message}`);
    }
  }
  try {
    sources.push({ origin: 'run', files: lastRunTaskFiles(await client.listTrainingRuns(agent.id, 'train')) });
  } catch (err) {
    ctx.log(`Train ${agent.name}: its earlier runs could not be read: ${(err as Error).message}`);
  }
  return sources;
}

async function askChoice(ctx: Ctx, client: AglClient, agent: AgentInfo): Promise<TrainChoice | undefined> {
  const settings = readSettings();
  const last = ctx.extension.workspaceState.get<TrainChoice>(stateKey(agent.id));
  const agentFile = agent.uri ? vscode.Uri.parse(agent.uri).fsPath : '';
  const agentConfig = agentFile ? agentTrainConfig(agentFile) : null;
  const sources = await taskSources(ctx, client, agent, agentConfig, last);
  const workspaceFiles = await workspaceJsonlFiles();
  // An agent that emits no reward is offered an LLM judge, as a fifth pick (judge-choices.ts says when).
  const judgeReason = agentFile ? judgeOfferReason({ stats: await statsOf(ctx, agent), source: await agentSource(agentFile), lastJudge: last?.judge }) : null;
  const steps = judgeReason ? 5 : 4;
  const train = await pickTaskFile(
    `Train ${agent.name}: training data (1/${steps})`,
    dataOptions('train', { agentFile, sources, workspaceFiles }),
    agent,
    'training tasks',
  );
  if (!train) return undefined;
  const val = await pickTaskFile(
    `Train ${agent.name}: validation data, held out (2/${steps})`,
    dataOptions('val', { agentFile, sources, workspaceFiles, train }),
    agent,
    'validation tasks',
  );
  if (!val) return undefined;
  // Each budget says the group size it trains with: the setting's for a preset, the agent's own train.yaml's for it.
  const budgets = BUDGETS.map((b) => ({
    label: b.label,
    detail: `${b.detail}; group size ${settings.groupSize} (setting agentLightning.groupSize)`,
    description: b.id === last?.budget ? 'last used' : '',
    id: b.id,
  }));
  if (agentConfig) {
    // A sample (or the user) ships its tuned settings next to the agent: the sensible default.
    budgets.unshift({
      label: `The agent's ${basename(agentConfig)}`,
      detail: `${configBudgetDetail(agentConfig)}: ${dirname(agentConfig) === dirname(agentFile) ? 'settings shipped next to the agent' : 'the settings the README beside the agent trains it with'} (${vscode.workspace.asRelativePath(agentConfig)})`,
      description: last?.budget === AGENT_CONFIG_BUDGET ? 'last used' : 'recommended',
      id: AGENT_CONFIG_BUDGET,
    });
  }
  if (last?.budget) budgets.sort((a, b) => Number(b.id === last.budget) - Number(a.id === last.budget));
  const budget = await vscode.window.showQuickPick(budgets, {
    title: `Train ${agent.name}: budget (3/${steps})`,
    ignoreFocusOut: true,
    matchOnDescription: true,
  });
  if (!budget) return undefined;
  const model = await pickModel(agent, settings.defaultModel, last?.model, agentFile ? nearbyCheckpoints(agentFile) : [], `4/${steps}`);
  if (!model) return undefined;
  const judge = judgeReason ? await chooseJudge(ctx, agent, agentFile, judgeReason, `5/${steps}`) : null;
  if (judge === undefined) return undefined;
  const choice: TrainChoice = {
    train,
    val,
    budget: budget.id,
    model,
    ...(budget.id === AGENT_CONFIG_BUDGET && agentConfig ? { config: agentConfig } : {}),
    ...(judge ? { judge } : {}),
  };
  await ctx.extension.workspaceState.update(stateKey(agent.id), choice);
  return choice;
}

async function pickModel(agent: AgentInfo, defaultModel: string, remembered: string | undefined, nearby: string[], step: string): Promise<string | undefined> {
  type Item = vscode.QuickPickItem & { model: string | 'folder' };
  const items: Item[] = [];
  const seen = new Set<string>();
  const add = (model: string, label: string, description: string) => {
    if (seen.has(model)) return;
    seen.add(model);
    items.push({ label, description, model });
  };
  if (remembered) add(remembered, remembered, 'last used');
  for (const dir of nearby) add(dir, `$(package) ${vscode.workspace.asRelativePath(dir)}`, 'checkpoint next to the agent (e.g. its SFT warm-up)');
  add(defaultModel, defaultModel, 'default (setting agentLightning.defaultModel)');
  add('builtin:0.8m', 'builtin:0.8m', 'built-in tiny model, trains in minutes on a CPU');
  add('builtin:5m', 'builtin:5m', 'built-in small model');
  items.push({ label: '$(folder-opened) Local Hugging Face model folder…', model: 'folder' });
  const picked = await vscode.window.showQuickPick(items, { title: `Train ${agent.name}: model (${step})`, ignoreFocusOut: true, matchOnDescription: true });
  if (!picked) return undefined;
  if (picked.model !== 'folder') return picked.model;
  const uris = await vscode.window.showOpenDialog({
    canSelectFolders: true,
    canSelectFiles: false,
    title: 'A folder with config.json, tokenizer.json and *.safetensors',
  });
  return uris?.[0]?.fsPath;
}

export async function trainCommand(ctx: Ctx, arg?: unknown): Promise<void> {
  const client = await ctx.requireDaemon('train an agent');
  if (!client) return;
  const agent = await resolveAgent(ctx, arg, 'train');
  if (!agent) return;
  const choice = await askChoice(ctx, client, agent);
  if (!choice) return; // cancelled at a pick: the agent last used stays the one it was
  await rememberAgent(ctx, agent);
  const settings = readSettings();
  const started = Date.now();
  // The agent's own train.yaml runs unchanged; a preset budget writes what has no flag into a small config file.
  const budgetFile = choice.config ? null : await writeBudgetConfig(ctx, budgetOf(choice));
  const proc = runAgl(ctx, trainArgs(agent.id, choice, settings, budgetFile));
  const watch = new TrainingWatch(ctx, client, agent, started);
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Agent Lightning: training ${agent.name}`, cancellable: true },
    async (progress, token) => {
      token.onCancellationRequested(() => {
        ctx.log('Cancelling training (SIGINT)…');
        proc.child.kill('SIGINT');
      });
      progress.report({ message: 'starting…' });
      const events = onRunProgress(ctx, () => watch.read(progress, token));
      try {
        const end = await proc.done;
        await events.stop();
        await watch.read(progress, token, true);
        return { ...end, cancelled: token.isCancellationRequested };
      } finally {
        void events.stop();
        ctx.status.setTraining(null);
        ctx.refreshLenses(agent.id);
      }
    },
  );
  await trainingEnded(ctx, client, agent, result, watch.run, watch.diagnosis);
}

/** The run's last word: cancelled, failed (with its error), or trained, with what to look at next. */
async function trainingEnded(
  ctx: Ctx,
  client: AglClient,
  agent: AgentInfo,
  result: Awaited<ReturnType<typeof runAgl>['done']> & { cancelled: boolean },
  finalRun: TrainingRun | null,
  diagnosis: LearningDiagnosis | null,
): Promise<void> {
  if (result.cancelled) {
    void vscode.window.showInformationMessage(`Agent Lightning: training of ${agent.name} cancelled${finalRun ? ` at step ${finalRun.step}` : ''}.`);
    return;
  }
  if (result.code !== 0) {
    const choice = await vscode.window.showErrorMessage(
      `Agent Lightning: training ${agent.name} failed: ${lastError(result.stderr.length ? result.stderr : result.stdout)}`,
      'Show Log',
    );
    if (choice) ctx.output.show();
    return;
  }
  const summary = finalRun ? summarize(finalRun) : 'done';
  // `agl train` prints the final policy's folder: "checkpoint: <dir>/policy-<step>".
  const checkpoint = [...result.stdout]
    .reverse()
    .map((l) => /^checkpoint: (.+)$/.exec(l.trim())?.[1])
    .find(Boolean);
  // A run whose policy never changed says why (the diagnosis, when its steps showed one), and its main action is the
  // dashboard: its checkpoint holds the weights it started from, so serving it comes last, if at all.
  const changed = finalRun ? policyChanged(await client.queryMetrics(finalRun.id).catch(() => [])) : null;
  const serve = checkpoint ? ['Serve Checkpoint'] : [];
  const views = finalRun ? ['Open Dashboard', 'Open Trajectories'] : [];
  const picked =
    changed === false
      ? await vscode.window.showWarningMessage(
          `Agent Lightning: trained ${agent.name}, but the policy never changed: ${summary}.` +
            (diagnosis ? ` ${diagnosisSentence(diagnosis)}` : ' No update moved a weight: the notes on the dashboard say why, step by step.'),
          ...views,
          ...serve,
        )
      : await vscode.window.showInformationMessage(`Agent Lightning: trained ${agent.name}: ${summary}`, ...serve, ...views);
  if (picked === 'Open Dashboard' && finalRun) void showTrainingDashboard(ctx, { runId: finalRun.id });
  if (picked === 'Open Trajectories') void vscode.commands.executeCommand(COMMANDS.trajectories, agent.id);
  if (picked === 'Serve Checkpoint' && checkpoint) await serveCheckpoint(ctx, checkpoint);
}

/** Makes the daemon serve the trained policy: Run Rollout and any agent pointed at the gateway then use it. */
async function serveCheckpoint(ctx: Ctx, checkpoint: string): Promise<void> {
  if (await ctx.serveModel(checkpoint)) {
    void vscode.window.showInformationMessage(
      `Agent Lightning: the daemon at ${ctx.daemon?.endpoint.url} now serves ${checkpoint} (OpenAI-compatible: ${ctx.daemon?.endpoint.url}/v1).`,
    );
  } else if (ctx.daemon && !ctx.daemon.child) {
    void vscode.window.showWarningMessage(
      `Agent Lightning: the daemon at ${ctx.daemon.endpoint.url} was started outside VS Code; serve the checkpoint with \`agl serve --model ${checkpoint}\`.`,
    );
  }
}

/**
 * "2/2 steps; held-out reward 0.20 → 0.45 of 8 tasks; on tfjs · wasm · float32 · 1 rank; 3m 10s; checkpoint in …"
 * from what the run's summary has (agl train writes valBefore, valAfter, tasks, engine, minutes).
 */
export function summarize(run: TrainingRun): string {
  const s = run.summary as TrainingRunSummary;
  const num = (v: unknown) => (typeof v === 'number' ? v : null);
  const before = num(s.valBefore);
  const after = num(s.valAfter);
  const parts = [`${run.step}/${run.totalSteps} steps`];
  if (before !== null && after !== null) parts.push(`held-out reward ${before.toFixed(2)} → ${describeHeldOut(after, s.tasks?.val)}`);
  if (s.engine) parts.push(`on ${describeEngine(s.engine)}`);
  const seconds = Math.round((num(s.minutes) ?? (run.updatedAt - run.createdAt) / 60_000) * 60);
  parts.push(`${Math.floor(seconds / 60)}m ${seconds % 60}s`);
  if (run.checkpointDir) parts.push(`checkpoint in ${run.checkpointDir}`);
  return parts.join('; ');
}
