/**
 * Every command of package.json contributes.commands, registered in one place. Commands that need the
 * daemon ask Ctx.requireDaemon, which explains (and offers to start it) when it is down; none fails
 * silently. Command ids are shared with the CodeLens (daemon/lsp/codelens.ts COMMANDS).
 */
import * as vscode from 'vscode';
import { markAsAgent } from '../protocol/lsp.js';
import { COMMANDS } from '../daemon/lsp/codelens.js';
import type { Ctx } from './ctx.js';
import { cursorEditor } from './pickers.js';
import { runRolloutCommand } from './rollout.js';
import { trainCommand } from './train.js';
import { showTrainingDashboard, showTrajectoryViewer } from './views.js';

export const COMMAND_IDS = {
  ...COMMANDS,
  stopDaemon: 'agentLightning.stopDaemon',
  restartDaemon: 'agentLightning.restartDaemon',
  showDaemonLog: 'agentLightning.showDaemonLog',
  markAsAgent: 'agentLightning.markAsAgent',
  openTrainingDashboard: 'agentLightning.openTrainingDashboard',
  showActions: 'agentLightning.showActions',
} as const;

/** Runs a command body, turning an unexpected error into a message that points at the log. */
function guarded(ctx: Ctx, name: string, body: (...args: unknown[]) => Promise<unknown>): (...args: unknown[]) => Promise<void> {
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
    reg(COMMAND_IDS.train, 'Train This Agent', (agent) => trainCommand(ctx, agent)),
    reg(COMMAND_IDS.run, 'Run Rollout', (agent) => runRolloutCommand(ctx, agent)),
    reg(COMMAND_IDS.trajectories, 'Open Trajectory Viewer', async (agent) => {
      if (!(await ctx.requireDaemon('open the trajectory viewer'))) return;
      await showTrajectoryViewer(ctx, { agent: typeof agent === 'string' ? agent : undefined });
    }),
    reg(COMMAND_IDS.openTrainingDashboard, 'Open Training Dashboard', async (runId) => {
      if (!(await ctx.requireDaemon('open the training dashboard'))) return;
      await showTrainingDashboard(ctx, { runId: typeof runId === 'string' ? runId : undefined });
    }),
    reg(COMMAND_IDS.markAsAgent, 'Mark Function as Agent', () => markFunctionAsAgent(ctx)),
    reg(COMMAND_IDS.startDaemon, 'Start Daemon', async () => {
      if (await ctx.start()) void vscode.window.showInformationMessage(`Agent Lightning: daemon ready at ${ctx.daemon?.endpoint.url}.`);
    }),
    reg(COMMAND_IDS.stopDaemon, 'Stop Daemon', async () => {
      if (!ctx.daemon) { void vscode.window.showInformationMessage('Agent Lightning: the daemon is not running.'); return; }
      if (!ctx.daemon.child) {
        const ok = await vscode.window.showWarningMessage(
          `The daemon at ${ctx.daemon.endpoint.url} was not started by this window (pid ${ctx.daemon.pid}); other clients may be using it. Stop it anyway?`,
          { modal: true }, 'Stop');
        if (ok !== 'Stop') return;
      }
      await ctx.stop();
    }),
    reg(COMMAND_IDS.restartDaemon, 'Restart Daemon', () => ctx.restart()),
    reg(COMMAND_IDS.showDaemonLog, 'Show Daemon Log', async () => ctx.output.show(true)),
    reg(COMMAND_IDS.showActions, 'Show Actions', () => showActions(ctx)),
  ];
}

async function markFunctionAsAgent(ctx: Ctx): Promise<void> {
  const editor = cursorEditor();
  if (!editor) { void vscode.window.showWarningMessage('Agent Lightning: open the file with the function and put the cursor inside it first.'); return; }
  if (!ctx.lsp) { void vscode.window.showErrorMessage('Agent Lightning: the language server is not running; see the "Agent Lightning" output.'); return; }
  const pos = editor.selection.active;
  const result = await ctx.lsp.sendRequest(markAsAgent, { uri: editor.document.uri.toString(), position: { line: pos.line, character: pos.character } });
  if ('error' in result) { void vscode.window.showWarningMessage(`Agent Lightning: ${result.error}`); return; }
  const edit = new vscode.WorkspaceEdit();
  for (const e of result.edits) {
    edit.replace(editor.document.uri, new vscode.Range(e.range.start.line, e.range.start.character, e.range.end.line, e.range.end.character), e.newText);
  }
  if (await vscode.workspace.applyEdit(edit)) void vscode.window.setStatusBarMessage(`Agent Lightning: ${result.name} is now an agent`, 4000);
}

async function showActions(ctx: Ctx): Promise<void> {
  const up = ctx.daemon !== null;
  const items: Array<vscode.QuickPickItem & { command: string }> = [
    { label: '$(zap) Train This Agent', command: COMMAND_IDS.train },
    { label: '$(play) Run Rollout', command: COMMAND_IDS.run },
    { label: '$(list-tree) Open Trajectory Viewer', command: COMMAND_IDS.trajectories },
    { label: '$(graph-line) Open Training Dashboard', command: COMMAND_IDS.openTrainingDashboard },
    up ? { label: '$(debug-stop) Stop Daemon', command: COMMAND_IDS.stopDaemon } : { label: '$(debug-start) Start Daemon', command: COMMAND_IDS.startDaemon },
    { label: '$(debug-restart) Restart Daemon', command: COMMAND_IDS.restartDaemon },
    { label: '$(output) Show Daemon Log', command: COMMAND_IDS.showDaemonLog },
  ];
  const picked = await vscode.window.showQuickPick(items, {
    title: up ? `Agent Lightning · daemon at ${ctx.daemon!.endpoint.url}` : 'Agent Lightning · daemon not running',
  });
  if (picked) await vscode.commands.executeCommand(picked.command);
}

