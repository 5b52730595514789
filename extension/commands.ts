/**
 * Every command of package.json contributes.commands, registered in one place. Commands that need the
 * daemon ask Ctx.requireDaemon, which explains (and offers to start it) when it is down; none fails
 * silently. Command ids are protocol/commands.ts COMMANDS (the CodeLens invokes them too).
 */
import * as vscode from 'vscode';
import { COMMANDS } from '../protocol/commands.js';
import { markAsAgent } from '../protocol/lsp.js';
import type { Ctx } from './ctx.js';
import { cursorEditor } from './pickers.js';
import { optimizeCommand } from './optimize-command.js';
import { runRolloutCommand } from './rollout-command.js';
import { trainCommand } from './train-command.js';
import { showOptimizationView, showTrainingDashboard, showTrajectoryViewer } from './views.js';

/** Runs a command body, turning an unexpected error into a message that points at the log. */
export function guarded(ctx: Ctx, name: string, body: (...args: unknown[]) => Promise<unknown>): (...args: unknown[]) => Promise<void> {
  return async (...args) => {
    try {
      await body(...args);
    } catch (err) {
      ctx.log(`${name} failed: ${(err as Error).stack ?? err}`);
      const choice = await vscode.window.showErrorMessage(`Agent Lightning: ${name} failed: ${(err as Error).message}`, 'Show Log');
      if (choice) ctx.output.show();
    }
  };
}

export function registerCommands(ctx: Ctx): vscode.Disposable[] {
  const reg = (id: string, name: string, body: (...args: unknown[]) => Promise<unknown>) => vscode.commands.registerCommand(id, guarded(ctx, name, body));
  return [
    reg(COMMANDS.train, 'Train This Agent', (agent) => trainCommand(ctx, agent)),
    reg(COMMANDS.run, 'Run Rollout', (agent) => runRolloutCommand(ctx, agent)),
    reg(COMMANDS.trajectories, 'Open Trajectory Viewer', async (agent) => {
      if (!(await ctx.requireDaemon('open the trajectory viewer'))) return;
      await showTrajectoryViewer(ctx, { agent: typeof agent === 'string' ? agent : undefined });
    }),
    reg(COMMANDS.openTrainingDashboard, 'Open Training Dashboard', async (runId) => {
      if (!(await ctx.requireDaemon('open the training dashboard'))) return;
      await showTrainingDashboard(ctx, { runId: typeof runId === 'string' ? runId : undefined });
    }),
    reg(COMMANDS.optimizePrompt, 'Optimize This Prompt', (prompt) => optimizeCommand(ctx, prompt)),
    reg(COMMANDS.openOptimizationView, 'Open Optimization View', async (runId) => {
      if (!(await ctx.requireDaemon('open the optimization view'))) return;
      await showOptimizationView(ctx, { runId: typeof runId === 'string' ? runId : undefined });
    }),
    reg(COMMANDS.markAsAgent, 'Mark Function as Agent', () => markFunctionAsAgent(ctx)),
    reg(COMMANDS.startDaemon, 'Start Daemon', async () => {
      if (await ctx.start()) void vscode.window.showInformationMessage(`Agent Lightning: daemon ready at ${ctx.daemon?.endpoint.url}.`);
    }),
    reg(COMMANDS.stopDaemon, 'Stop Daemon', async () => {
      if (!ctx.daemon) {
        void vscode.window.showInformationMessage('Agent Lightning: the daemon is not running.');
        return;
      }
      if (!ctx.daemon.child) {
        const ok = await vscode.window.showWarningMessage(
          `The daemon at ${ctx.daemon.endpoint.url} was not started by this window (pid ${ctx.daemon.pid}); other clients may be using it. Stop it anyway?`,
          { modal: true },
          'Stop',
        );
        if (ok !== 'Stop') return;
      }
      await ctx.stop();
    }),
    reg(COMMANDS.restartDaemon, 'Restart Daemon', () => ctx.restart()),
    reg(COMMANDS.showDaemonLog, 'Show Daemon Log', async () => ctx.output.show(true)),
    reg(COMMANDS.showActions, 'Show Actions', () => showActions(ctx)),
  ];
}

async function markFunctionAsAgent(ctx: Ctx): Promise<void> {
  const editor = cursorEditor();
  if (!editor) {
    void vscode.window.showWarningMessage('Agent Lightning: open the file with the function and put the cursor inside it first.');
    return;
  }
  if (!ctx.lsp) {
    void vscode.window.showErrorMessage('Agent Lightning: the language server is not running; see the "Agent Lightning" output.');
    return;
  }
  const pos = editor.selection.active;
  const result = await ctx.lsp.sendRequest(markAsAgent, { uri: editor.document.uri.toString(), position: { line: pos.line, character: pos.character } });
  if ('error' in result) {
    void vscode.window.showWarningMessage(`Agent Lightning: ${result.error}`);
    return;
  }
  const edit = new vscode.WorkspaceEdit();
  for (const e of result.edits) {
    edit.replace(editor.document.uri, new vscode.Range(e.range.start.line, e.range.start.character, e.range.end.line, e.range.end.character), e.newText);
  }
  if (await vscode.workspace.applyEdit(edit)) void vscode.window.setStatusBarMessage(`Agent Lightning: ${result.name} is now an agent`, 4000);
}

async function showActions(ctx: Ctx): Promise<void> {
  const up = ctx.daemon !== null;
  const items: Array<vscode.QuickPickItem & { command: string }> = [
    { label: '$(zap) Train This Agent', command: COMMANDS.train },
    { label: '$(play) Run Rollout', command: COMMANDS.run },
    { label: '$(list-tree) Open Trajectory Viewer', command: COMMANDS.trajectories },
    { label: '$(graph-line) Open Training Dashboard', command: COMMANDS.openTrainingDashboard },
    { label: '$(sparkle) Optimize This Prompt', command: COMMANDS.optimizePrompt },
    { label: '$(type-hierarchy) Open Optimization View', command: COMMANDS.openOptimizationView },
    up ? { label: '$(debug-stop) Stop Daemon', command: COMMANDS.stopDaemon } : { label: '$(debug-start) Start Daemon', command: COMMANDS.startDaemon },
    { label: '$(debug-restart) Restart Daemon', command: COMMANDS.restartDaemon },
    { label: '$(output) Show Daemon Log', command: COMMANDS.showDaemonLog },
  ];
  const picked = await vscode.window.showQuickPick(items, {
    title: up ? `Agent Lightning · daemon at ${ctx.daemon!.endpoint.url}` : 'Agent Lightning · daemon not running',
  });
  if (picked) await vscode.commands.executeCommand(picked.command);
}
