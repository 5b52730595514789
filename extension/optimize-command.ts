/**
 * "Agent Lightning: Optimize This Prompt" (the palette, the editor's context menu, and the Optimize lens above an
 * `llm.prompt(name, seed)` call): which prompt (the lens's, the one under the cursor, else a pick), the agent reading
 * it, then seven picks with sensible defaults remembered per agent (workspaceState): the prompts to optimize together,
 * the train, val and test tasks (the agent's own files first: train-choices.ts dataOptions), the budget in rollouts,
 * the optimizer's endpoint (the settings agentLightning.optimizer.*, asked and saved when empty) and the agent's model.
 * Then `agl optimize --json` runs as a child process against the extension's daemon, its progress in a cancellable
 * notification as Train This Agent's (rollouts of the budget, best val so far: optimize-progress.ts) with the
 * optimization view opened on the run; cancelling sends SIGINT (everything scored is kept; --resume continues). At the
 * end: seed against best, and "Apply Best…" (optimize-apply.ts: asked first) or the view.
 */
import { readFileSync } from 'node:fs';
import * as vscode from 'vscode';
import { listPrompts, promptAt, type AgentInfo, type PromptInfo } from '../protocol/lsp.js';
import type { OptimizationSummary } from '../protocol/prompts.js';
import type { TrainingRun } from '../protocol/store.js';
import type { AglClient } from '../client/client.js';
import { isFixturePath, workspaceRelative } from './agent-choice.js';
import { lastError, runAgl } from './agl-process.js';
import { readSettings } from './config.js';
import type { Ctx } from './ctx.js';
import { applyCandidate } from './optimize-apply.js';
import { agentPromptNames, describeOptimization, improved, lastOptimizeTaskFiles, leastBudget, optimizeArgs, type OptimizeChoice } from './optimize-choices.js';
import { pickAgentModel, pickBudget, pickOptimizer, pickPrompts } from './optimize-picks.js';
import { OptimizationWatch, optimizationMoved } from './optimize-progress.js';
import { cursorEditor, NO_FILE, pickTaskFile, rememberAgent, resolveAgent, workspaceJsonlFiles } from './pickers.js';
import { agentTrainConfig, configTaskFiles, dataOptions, type DataOrigin, lastRunTaskFiles, type TaskFiles } from './train-choices.js';
import { onRunProgress } from './train-progress.js';
import { showOptimizationView } from './views.js';

const stateKey = (agent: string) => `agentLightning.optimize:${agent}`;
const STEPS = 7;

const isPrompt = (arg: unknown): arg is PromptInfo =>
  typeof arg === 'object' && arg !== null && typeof (arg as PromptInfo).name === 'string' && typeof (arg as PromptInfo).uri === 'string';

/** The prompt to optimize: the lens's, the one under the cursor, else a pick (the open file's first; no tests or fixtures). */
async function resolvePrompt(ctx: Ctx, arg: unknown): Promise<{ prompt: PromptInfo; all: PromptInfo[] } | undefined> {
  const lsp = ctx.lsp;
  if (!lsp) {
    void vscode.window.showErrorMessage('Agent Lightning: the language server is not running, so prompts cannot be found. See the "Agent Lightning" output.');
    return undefined;
  }
  const all = (await lsp.sendRequest(listPrompts, {})).prompts;
  if (isPrompt(arg)) return { prompt: arg, all };
  const editor = cursorEditor();
  if (editor) {
    const pos = editor.selection.active;
    const here = (await lsp.sendRequest(promptAt, { uri: editor.document.uri.toString(), position: { line: pos.line, character: pos.character } })).prompt;
    if (here) return { prompt: here, all };
  }
  const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  const open = editor?.document.uri.toString();
  const offered = all.filter((p) => p.uri === open || !isFixturePath(workspaceRelative(vscode.Uri.parse(p.uri).fsPath, folders) ?? 'test/'));
  if (!offered.length) {
    void vscode.window.showWarningMessage(
      'Agent Lightning: no llm.prompt(name, seed) call in this workspace. An agent reads a prompt it can optimize with llm.prompt("system", "You are ...") (TypeScript or Python).',
    );
    return undefined;
  }
  offered.sort((a, b) => Number(b.uri === open) - Number(a.uri === open));
  const picked = await vscode.window.showQuickPick(
    offered.map((p) => ({
      label: p.name,
      description: `${vscode.workspace.asRelativePath(vscode.Uri.parse(p.uri))}:${p.range.start.line + 1}`,
      detail: p.agent ?? undefined,
      prompt: p,
    })),
    { title: 'Agent Lightning: which prompt to optimize?', ignoreFocusOut: true, matchOnDescription: true, matchOnDetail: true },
  );
  return picked && { prompt: picked.prompt, all };
}

/** Where the agent's own task files are named, in the order they win: its last choice here, its train.yaml's data:, its last optimization's, its last training run's. */
async function taskSources(ctx: Ctx, client: AglClient, agent: AgentInfo, last: OptimizeChoice | undefined) {
  const sources: { origin: DataOrigin; files: TaskFiles }[] = [];
  if (last) sources.push({ origin: 'remembered', files: { train: last.train, val: last.val, ...(last.test ? { test: last.test } : {}) } });
  const config = agent.uri ? agentTrainConfig(vscode.Uri.parse(agent.uri).fsPath) : null;
  if (config) {
    try {
      sources.push({ origin: 'config', files: configTaskFiles(config) });
    } catch (err) {
      ctx.log(`Optimize ${agent.name}: the data: of ${config} is not offered: ${(err as Error).message}`);
    }
  }
  try {
    sources.push({ origin: 'optimization', files: lastOptimizeTaskFiles(await client.listTrainingRuns(agent.id, 'optimize')) });
    sources.push({ origin: 'run', files: lastRunTaskFiles(await client.listTrainingRuns(agent.id, 'train')) });
  } catch (err) {
    ctx.log(`Optimize ${agent.name}: its earlier runs could not be read: ${(err as Error).message}`);
  }
  return sources;
}

const countTasks = (file: string | null): number =>
  file
    ? readFileSync(file, 'utf8')
        .split(/\r?\n/)
        .filter((l) => l.trim()).length
    : 0;

/** The train, val and test task files (steps 2-4), the agent's own first. */
async function pickData(
  ctx: Ctx,
  client: AglClient,
  agent: AgentInfo,
  last: OptimizeChoice | undefined,
): Promise<Pick<OptimizeChoice, 'train' | 'val' | 'test'> | undefined> {
  const agentFile = agent.uri ? vscode.Uri.parse(agent.uri).fsPath : '';
  const sources = await taskSources(ctx, client, agent, last);
  const workspaceFiles = await workspaceJsonlFiles();
  const title = (what: string, step: number) => `Optimize ${agent.name}: ${what} (${step}/${STEPS})`;
  const train = await pickTaskFile(
    title('tasks to learn from (minibatches)', 2),
    dataOptions('train', { agentFile, sources, workspaceFiles }),
    agent,
    'training tasks',
  );
  if (!train) return undefined;
  const val = await pickTaskFile(
    title('val tasks every kept candidate is scored on', 3),
    dataOptions('val', { agentFile, sources, workspaceFiles, train }),
    agent,
    'val tasks',
  );
  if (!val) return undefined;
  const test = await pickTaskFile(
    title('held-out test tasks, scored for the seed and the best at the end', 4),
    dataOptions('test', { agentFile, sources, workspaceFiles, train }),
    agent,
    'test tasks',
    'No test set: judge the best on val only',
  );
  if (!test) return undefined;
  return { train, val, test: test === NO_FILE ? null : test };
}

async function askChoice(ctx: Ctx, client: AglClient, agent: AgentInfo, prompt: PromptInfo, all: PromptInfo[]): Promise<OptimizeChoice | undefined> {
  const last = ctx.extension.workspaceState.get<OptimizeChoice>(stateKey(agent.id));
  const names = agentPromptNames(all, agent.id, prompt.name);
  const prompts = await pickPrompts(agent, names, prompt.name, last?.prompts, STEPS);
  if (!prompts) return undefined;
  const data = await pickData(ctx, client, agent, last);
  if (!data) return undefined;
  const least = leastBudget(countTasks(data.val), countTasks(data.test));
  const budget = await pickBudget(agent, least, last?.budget, STEPS);
  if (!budget) return undefined;
  const optimizer = await pickOptimizer(agent, readSettings().optimizer, STEPS);
  if (!optimizer) return undefined;
  const agentModel = await pickAgentModel(agent, optimizer, last?.agentModel, STEPS);
  if (!agentModel) return undefined;
  const choice: OptimizeChoice = { prompts, ...data, budget, optimizer, agentModel };
  await ctx.extension.workspaceState.update(stateKey(agent.id), choice);
  return choice;
}

/** The agent reading the prompt: the language server's, else the agent chooser's (a prompt in a helper of several agents). */
async function promptAgent(ctx: Ctx, prompt: PromptInfo): Promise<AgentInfo | undefined> {
  return resolveAgent(ctx, prompt.agent ?? undefined, `optimize "${prompt.name}" of`);
}

export async function optimizeCommand(ctx: Ctx, arg?: unknown): Promise<void> {
  const client = await ctx.requireDaemon('optimize a prompt');
  if (!client) return;
  const found = await resolvePrompt(ctx, arg);
  if (!found) return;
  const agent = await promptAgent(ctx, found.prompt);
  if (!agent) return;
  const choice = await askChoice(ctx, client, agent, found.prompt, found.all);
  if (!choice) return;
  await rememberAgent(ctx, agent);
  const started = Date.now();
  const proc = runAgl(ctx, optimizeArgs(agent.id, choice));
  const watch = new OptimizationWatch(ctx, client, agent, started);
  const what = choice.prompts.map((p) => `"${p}"`).join(', ');
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Agent Lightning: optimizing ${what} of ${agent.name}`, cancellable: true },
    async (progress, token) => {
      token.onCancellationRequested(() => {
        ctx.log('Stopping the optimization (SIGINT): everything scored is kept…');
        proc.child.kill('SIGINT');
      });
      progress.report({ message: 'reading the seed…' });
      const events = onRunProgress(ctx, () => watch.read(progress, token), optimizationMoved(agent.id));
      try {
        const end = await proc.done;
        await events.stop();
        await watch.read(progress, token);
        return { ...end, cancelled: token.isCancellationRequested };
      } finally {
        void events.stop();
        ctx.refreshLenses(agent.id);
      }
    },
  );
  await optimizationEnded(ctx, client, agent, what, result, watch.run);
}

/** The run's last word: stopped (and how to continue), failed (why), or seed against best with what to do next. */
async function optimizationEnded(
  ctx: Ctx,
  client: AglClient,
  agent: AgentInfo,
  what: string,
  result: Awaited<ReturnType<typeof runAgl>['done']> & { cancelled: boolean },
  seen: TrainingRun | null,
): Promise<void> {
  const run = seen ? ((await client.getTrainingRun(seen.id).catch(() => null)) ?? seen) : null;
  const view = run ? ['Open Optimization'] : [];
  let picked: string | undefined;
  if (result.cancelled) {
    picked = await vscode.window.showInformationMessage(
      `Agent Lightning: optimization of ${what} stopped${run ? ` after ${describeOptimization(run)}; everything scored is kept (agl optimize --resume ${run.id} continues it)` : ''}.`,
      ...view,
    );
  } else if (result.code !== 0) {
    picked = await vscode.window.showErrorMessage(
      `Agent Lightning: optimizing ${what} of ${agent.name} failed: ${lastError(result.stderr.length ? result.stderr : result.stdout)}`,
      'Show Log',
      ...view,
    );
  } else if (run && improved(run)) {
    picked = await vscode.window.showInformationMessage(
      `Agent Lightning: optimized ${what} of ${agent.name}: ${describeOptimization(run)}.`,
      'Apply Best…',
      ...view,
    );
  } else {
    picked = await vscode.window.showWarningMessage(
      `Agent Lightning: no candidate beat the seed of ${what}${run ? `: ${describeOptimization(run)}` : ''}. The view shows what was tried and why each was not kept.`,
      ...view,
    );
  }
  if (picked === 'Show Log') ctx.output.show();
  if (picked === 'Open Optimization' && run) void showOptimizationView(ctx, { runId: run.id });
  const best = run && (run.summary as OptimizationSummary).bestCandidate;
  if (picked === 'Apply Best…' && run && best) {
    void showOptimizationView(ctx, { runId: run.id, candidateId: best });
    await applyCandidate(ctx, { runId: run.id, candidateId: best });
  }
}
