/**
 * "Agent Lightning: Run Rollout": asks for a task (the last one used for this agent, a line of a JSONL
 * file, or typed JSON), runs one rollout with `agl rollout` against the current policy, and opens the
 * trajectory viewer on it. The rollout is found in the store afterwards (newest of the agent since the
 * start), so the flow does not depend on the command's output format.
 */
import * as vscode from 'vscode';
import type { Rollout } from '../protocol/store.js';
import { ROLLOUT_COMMAND } from '../protocol/cli-commands.js';
import { commandLine } from '../protocol/cli-options.js';
import { lastError, runAgl } from './agl-process.js';
import type { Ctx } from './ctx.js';
import { pickJsonlFile, pickJsonlLine, rememberAgent, resolveAgent } from './pickers.js';
import { showTrajectoryViewer } from './views.js';

const taskKey = (agent: string) => `agentLightning.task:${agent}`;
const fileKey = (agent: string) => `agentLightning.taskFile:${agent}`;

async function askTask(ctx: Ctx, agentId: string, agentName: string): Promise<unknown | undefined> {
  const state = ctx.extension.workspaceState;
  const last = state.get<string>(taskKey(agentId));
  type Item = vscode.QuickPickItem & { kind2: 'last' | 'file' | 'json' };
  const items: Item[] = [];
  if (last) items.push({ label: last.slice(0, 200), description: 'last used task', kind2: 'last' });
  items.push({ label: '$(list-flat) Pick a task from a JSONL file…', kind2: 'file' }, { label: '$(edit) Enter the task as JSON…', kind2: 'json' });
  const picked = await vscode.window.showQuickPick(items, { title: `Run ${agentName}: which task?`, ignoreFocusOut: true });
  if (!picked) return undefined;
  let task: unknown;
  if (picked.kind2 === 'last') task = JSON.parse(last!);
  else if (picked.kind2 === 'file') {
    const file = await pickJsonlFile(`Run ${agentName}: tasks file`, state.get<string>(fileKey(agentId)));
    if (!file) return undefined;
    await state.update(fileKey(agentId), file);
    task = await pickJsonlLine(file);
    if (task === undefined) return undefined;
  } else {
    const text = await vscode.window.showInputBox({
      title: `Run ${agentName}: task`,
      prompt: 'The task as JSON, passed to the agent as its first argument',
      value: last ?? '{}',
      ignoreFocusOut: true,
      validateInput: (v) => {
        try {
          JSON.parse(v);
          return null;
        } catch (err) {
          return `Not valid JSON: ${(err as Error).message}`;
        }
      },
    });
    if (text === undefined) return undefined;
    task = JSON.parse(text);
  }
  await state.update(taskKey(agentId), JSON.stringify(task));
  return task;
}

export async function runRolloutCommand(ctx: Ctx, arg?: unknown): Promise<void> {
  const client = await ctx.requireDaemon('run a rollout');
  if (!client) return;
  const agent = await resolveAgent(ctx, arg, 'run');
  if (!agent) return;
  let task: unknown;
  try {
    task = await askTask(ctx, agent.id, agent.name);
  } catch (err) {
    void vscode.window.showErrorMessage(`Agent Lightning: ${(err as Error).message}`);
    return;
  }
  if (task === undefined) return; // cancelled at a pick: the agent last used stays the one it was
  await rememberAgent(ctx, agent);
  const started = Date.now();
  const proc = runAgl(ctx, commandLine(ROLLOUT_COMMAND, { task: JSON.stringify(task) }, [agent.id]));
  const end = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Agent Lightning: running ${agent.name}`, cancellable: true },
    async (_progress, token) => {
      token.onCancellationRequested(() => proc.child.kill('SIGINT'));
      return proc.done;
    },
  );
  ctx.refreshLenses(agent.id);
  const page = await client.queryRollouts({ agent: agent.id, order: 'desc', limit: 5 }).catch(() => ({ items: [] as Rollout[] }));
  const rollout = page.items.find((r) => r.createdAt >= started - 2000);
  if (end.code !== 0 && !rollout) {
    const choice = await vscode.window.showErrorMessage(
      `Agent Lightning: the rollout of ${agent.name} failed: ${lastError(end.stderr.length ? end.stderr : end.stdout)}`,
      'Show Log',
    );
    if (choice) ctx.output.show();
    return;
  }
  if (rollout) await showTrajectoryViewer(ctx, { agent: agent.id, rolloutId: rollout.id });
  if (rollout?.status === 'failed') void vscode.window.showWarningMessage(`Agent Lightning: the rollout of ${agent.name} failed; its trajectory shows where.`);
}
