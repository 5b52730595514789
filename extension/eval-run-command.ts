/**
 * Running one eval suite from the Test Explorer: which agent runs it (the setting's, else the one remembered for the
 * file, else the agent beside it, a quick pick once when there are several: eval-datasets.ts agentsBeside), then
 * `agl eval AGENT --data FILE --json` as a child (agl-process.ts, like train and optimize), with a cancellable
 * notification counting the rollouts that ended (the daemon's events) and the Test Explorer's stop: either sends the
 * child SIGINT, so `agl eval` records its run cancelled and nothing half-written is read as a result. At the end each
 * item is marked from the outcome it printed: passed, failed (its answer against what was expected, the grader's
 * reason, a message that opens its trajectory) or errored (its rollout failed).
 */
import { basename } from 'node:path';
import * as vscode from 'vscode';
import { sameAgent } from '../protocol/agent-id.js';
import type { EvalTaskResult } from '../protocol/eval.js';
import { listAgents, type AgentInfo } from '../protocol/lsp.js';
import { TERMINAL_ROLLOUT_STATUSES } from '../protocol/store.js';
import { lastError, runAgl } from './agl-process.js';
import type { Ctx } from './ctx.js';
import { agentsBeside, evalArgs, readEvalOutcome, type NamedDataset } from './eval-datasets.js';
import { visibleText } from '../protocol/visible-text.js';

/** A suite to run: its dataset, its task items by task id, and the items to report. */
export interface SuiteRun {
  dataset: NamedDataset;
  tasks: Map<string, vscode.TestItem>;
  items: vscode.TestItem[];
}

/** What a run reports to: the Test Explorer's controller, and where a task's latest result is kept. */
export interface SuiteRunHost {
  controller: vscode.TestController;
  noteResult(itemId: string, result: EvalTaskResult): void;
}

/** The context value of a failed item's message: its menu (package.json testing/message/context) opens the trajectory. */
export const ROLLOUT_MESSAGE = 'agl-eval-rollout';
const TERMINAL = new Set<string>(TERMINAL_ROLLOUT_STATUSES);
const agentKey = (file: string) => `agentLightning.evalAgent:${file}`;

/** The agent that runs `suite`'s dataset, or undefined (the reason told) when none can be found or the pick was dismissed. */
async function agentFor(ctx: Ctx, dataset: NamedDataset): Promise<string | undefined> {
  const file = dataset.file;
  if (dataset.agent) return dataset.agent;
  const remembered = ctx.extension.workspaceState.get<string>(agentKey(file));
  if (remembered) return remembered;
  if (!ctx.lsp) {
    void vscode.window.showErrorMessage('Agent Lightning: the language server is not running, so the agent beside the dataset cannot be found.');
    return undefined;
  }
  const all = (await ctx.lsp.sendRequest(listAgents, {})).agents;
  const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
  const beside: AgentInfo[] = agentsBeside(file, all, folders);
  if (beside.length === 0) {
    void vscode.window.showErrorMessage(
      `Agent Lightning: no agent beside ${vscode.workspace.asRelativePath(file)}: name the one that runs it in the setting agentLightning.evalDatasets ({ "data": ..., "agent": "file.ts#export" }).`,
    );
    return undefined;
  }
  let agent = beside[0]!.id;
  if (beside.length > 1) {
    const picked = await vscode.window.showQuickPick(
      beside.map((a) => ({ label: a.name, description: a.id, id: a.id })),
      { title: `Which agent runs ${basename(file)}? (remembered for this dataset)` },
    );
    if (!picked) return undefined;
    agent = picked.id;
  }
  await ctx.extension.workspaceState.update(agentKey(file), agent);
  return agent;
}

/** The item's result in the Test Explorer. */
function mark(run: vscode.TestRun, item: vscode.TestItem, t: EvalTaskResult | undefined, ms: number): void {
  if (!t) {
    run.errored(item, new vscode.TestMessage('agl eval did not report this task'));
    return;
  }
  if (t.passed) {
    run.passed(item, ms);
    return;
  }
  // Unprintable characters (an answer of broken bytes) escaped visibly, in the message and in the diff alike.
  const said = visibleText(`score ${t.mean.toFixed(3)} (${t.grader}): ${t.reason}`);
  const answer = t.answer === null ? null : visibleText(t.answer);
  const message =
    t.expected !== null
      ? vscode.TestMessage.diff(said, visibleText(t.expected), answer ?? '(no answer)')
      : new vscode.TestMessage(`${said}\nanswer: ${answer ?? '(none)'}`);
  message.contextValue = ROLLOUT_MESSAGE;
  if (item.uri && item.range) message.location = new vscode.Location(item.uri, item.range);
  if (t.errored) run.errored(item, message, ms);
  else run.failed(item, message, ms);
}

/** Runs one suite to its end (or its cancel), marking its items. */
export async function runEvalSuite(ctx: Ctx, host: SuiteRunHost, request: vscode.TestRunRequest, s: SuiteRun, token: vscode.CancellationToken): Promise<void> {
  const file = s.dataset.file;
  const run = host.controller.createTestRun(request, `agl eval ${basename(file)}`);
  const agent = (await ctx.requireDaemon('run evals')) ? await agentFor(ctx, s.dataset) : undefined;
  if (!agent) {
    for (const item of s.items) run.skipped(item);
    run.end();
    return;
  }
  for (const item of s.items) run.started(item);
  // The version the run records: the model the daemon this window started serves (one attached to keeps its own).
  const model = ctx.daemon?.child ? ['--model', ctx.servedModel] : [];
  const started = Date.now();
  const chosen = [...s.tasks].filter(([, item]) => s.items.includes(item)).map(([id]) => id);
  const args = evalArgs(agent, file, chosen, s.tasks.size, model);
  const proc = runAgl(ctx, args, (line, stream) => stream === 'stderr' && run.appendOutput(`${line}\r\n`));
  const total = chosen.length;
  const ended = new Set<string>();
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Agent Lightning: eval of ${basename(file)}`, cancellable: true },
    async (progress, cancel) => {
      const stop = () => proc.child.exitCode === null && proc.child.kill('SIGINT');
      const subs = [
        cancel.onCancellationRequested(stop),
        token.onCancellationRequested(stop),
        ctx.onDidReceiveEvent((e) => {
          if (e.type !== 'store') return;
          const before = ended.size;
          for (const r of e.change.rollouts) if (r.agent && sameAgent(r.agent, agent) && TERMINAL.has(r.status)) ended.add(r.id);
          if (ended.size > before)
            progress.report({ message: `${Math.min(ended.size, total)} of ${total} tasks ended`, increment: ((ended.size - before) / total) * 100 });
        }),
      ];
      progress.report({ message: `running ${total} tasks on ${agent}…` });
      try {
        return { ...(await proc.done), cancelled: cancel.isCancellationRequested || token.isCancellationRequested };
      } finally {
        for (const d of subs) d.dispose();
      }
    },
  );
  const outcome = result.cancelled ? null : readEvalOutcome(result.stdout);
  if (!outcome) {
    const why = result.cancelled
      ? 'cancelled: nothing is read from a stopped eval (its run, once recorded, is recorded cancelled)'
      : `agl eval failed: ${lastError(result.stderr.length ? result.stderr : result.stdout)}`;
    for (const item of s.items) {
      if (result.cancelled) run.skipped(item);
      else run.errored(item, new vscode.TestMessage(why));
    }
    run.appendOutput(`${why}\r\n`);
    run.end();
    if (!result.cancelled) void vscode.window.showErrorMessage(`Agent Lightning: ${why}`);
    return;
  }
  const byId = new Map(outcome.summary.tasks.map((t) => [t.id, t]));
  const each = Math.round((Date.now() - started) / Math.max(1, outcome.summary.tasks.length));
  for (const [taskId, item] of s.tasks) {
    const t = byId.get(taskId);
    if (t) host.noteResult(item.id, t);
    if (s.items.includes(item)) mark(run, item, t, each);
  }
  run.appendOutput(`mean ${outcome.summary.mean.toFixed(3)}; pass@${outcome.summary.repeat} ${outcome.summary.passAtK.toFixed(3)}; run ${outcome.runId}\r\n`);
  run.end();
}
