/**
 * The eval commands around the Test Explorer (test-explorer.ts): Open Eval Trajectory (a task item's, or its failed
 * message's, latest rollout in the trajectory viewer; from the palette a pick of the failed tasks), Compare Eval Runs
 * (two run ids, as `agl eval --baseline` names them; a suite's or a task's last two runs of its dataset; else the
 * view's own pick of the newest two), and the URI `vscode://agent-lightning.agent-lightning-vscode/compare?base=A&run=B`
 * that `agl eval --baseline` prints, which opens the same view.
 */
import * as vscode from 'vscode';
import { evalRunInfo, evalSummaryOf } from '../protocol/eval-compare.js';
import { COMMANDS } from '../protocol/commands.js';
import { guarded } from './commands.js';
import type { Ctx } from './ctx.js';
import { SUITE_PREFIX, type EvalTestExplorer } from './test-explorer.js';
import { showCompareView, showTrajectoryViewer } from './views.js';

/** The test item a menu passes: the item itself (testing/item/context), or { test, message } (testing/message/context). */
function itemOf(arg: unknown): vscode.TestItem | null {
  if (!arg || typeof arg !== 'object') return null;
  const a = arg as { id?: unknown; test?: { id?: unknown } };
  if (typeof a.id === 'string') return arg as vscode.TestItem;
  if (a.test && typeof a.test.id === 'string') return a.test as vscode.TestItem;
  return null;
}

/** The dataset file of a test item (a suite's or a task's). */
function datasetOf(explorer: EvalTestExplorer, item: vscode.TestItem): string | null {
  const suite = explorer.suiteOf(item);
  if (suite) return suite.dataset.file;
  return item.id.startsWith(SUITE_PREFIX) ? item.id.slice(SUITE_PREFIX.length).replace(/#.*$/, '') : null;
}

async function openEvalTrajectory(ctx: Ctx, explorer: EvalTestExplorer, arg: unknown): Promise<void> {
  if (!(await ctx.requireDaemon('open a trajectory'))) return;
  let item = itemOf(arg);
  if (!item) {
    const failed = [...explorer.suites.values()].flatMap((s) => [...s.tasks.values()].filter((t) => explorer.failed.has(t.id)));
    const picked = await vscode.window.showQuickPick(
      failed.map((t) => ({ label: t.label, description: t.description, item: t })),
      { title: failed.length ? 'Open the trajectory of a failed eval task' : 'No failed eval task: run a dataset from the Test Explorer' },
    );
    item = picked?.item ?? null;
  }
  if (!item) return;
  const rollout = explorer.rollouts.get(item.id)?.[0];
  if (!rollout) {
    void vscode.window.showInformationMessage(`Agent Lightning: ${item.label} has no eval result yet: run it from the Test Explorer.`);
    return;
  }
  await showTrajectoryViewer(ctx, { rolloutId: rollout });
}

async function compareEvalRuns(ctx: Ctx, explorer: EvalTestExplorer, a: unknown, b: unknown): Promise<void> {
  const client = await ctx.requireDaemon('compare eval runs');
  if (!client) return;
  if (typeof a === 'string' && typeof b === 'string') return showCompareView(ctx, { baseRunId: a, runId: b });
  const item = itemOf(a);
  const file = item ? datasetOf(explorer, item) : null;
  if (!file) return showCompareView(ctx, {});
  const runs = (await client.listTrainingRuns(undefined, 'eval'))
    .filter((r) => evalSummaryOf(r) && evalRunInfo(r).data === file)
    .sort((x, y) => y.createdAt - x.createdAt);
  if (runs.length < 2) {
    void vscode.window.showInformationMessage(
      `Agent Lightning: ${vscode.workspace.asRelativePath(file)} has ${runs.length ? 'one finished eval run' : 'no finished eval run'}: run it again (after a change) to compare.`,
    );
    return;
  }
  await showCompareView(ctx, { baseRunId: runs[1]!.id, runId: runs[0]!.id });
}

export function registerEvalCommands(ctx: Ctx, explorer: EvalTestExplorer): vscode.Disposable[] {
  const guard = (name: string, body: (...args: unknown[]) => Promise<unknown>) => guarded(ctx, name, body);
  return [
    vscode.commands.registerCommand(
      COMMANDS.openEvalTrajectory,
      guard('Open Eval Trajectory', (arg) => openEvalTrajectory(ctx, explorer, arg)),
    ),
    vscode.commands.registerCommand(
      COMMANDS.compareEvalRuns,
      guard('Compare Eval Runs', (a, b) => compareEvalRuns(ctx, explorer, a, b)),
    ),
    vscode.window.registerUriHandler({
      handleUri(uri: vscode.Uri) {
        const q = new URLSearchParams(uri.query);
        if (uri.path === '/compare') void vscode.commands.executeCommand(COMMANDS.compareEvalRuns, q.get('base') ?? undefined, q.get('run') ?? undefined);
      },
    }),
  ];
}
