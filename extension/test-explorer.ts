/**
 * Eval datasets in VS Code's Test Explorer (#42 item 4): every dataset the workspace names (`*.eval.jsonl` files,
 * found by a glob and followed as they are created, changed and deleted, and the setting agentLightning.evalDatasets)
 * is a suite with one item per task, a bad row an error item in `agl eval`'s words (eval-datasets.ts). Run runs a suite
 * through `agl eval --json` as a child (eval-run-command.ts), with progress and cancel. Each item's description says
 * how it did on the agent versions its past eval runs measured, read from the store ("passed on warmup, fails on
 * run-abc step 40"); a failed item's message opens its trajectory, and a suite compares its last two runs.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import * as vscode from 'vscode';
import { AglClient } from '../client/client.js';
import { evalRunInfo, evalSummaryOf } from '../protocol/eval-compare.js';
import type { EvalTaskResult } from '../protocol/eval.js';
import type { Ctx } from './ctx.js';
import { datasetItems, datasetsFromSetting, historyWords, type NamedDataset, type TaskHistoryEntry } from './eval-datasets.js';
import { runEvalSuite, type SuiteRun } from './eval-run-command.js';

/** Test item ids: a suite `agl-eval:<file>`, a task `agl-eval:<file>#<task id>`, a bad row `agl-eval:<file>:<line>!`. */
export const SUITE_PREFIX = 'agl-eval:';
const EXCLUDE = '**/{node_modules,dist,out,.git,test-results}/**';

/** A suite's dataset, its items by task id, and where each task's last rollouts are (for Open Trajectory). */
export interface Suite {
  dataset: NamedDataset;
  item: vscode.TestItem;
  tasks: Map<string, vscode.TestItem>;
}

export class EvalTestExplorer implements vscode.Disposable {
  readonly controller = vscode.tests.createTestController('agentLightning.evals', 'Agent Lightning Evals');
  readonly suites = new Map<string, Suite>();
  /** The rollouts of each task item's latest result (item id -> rollout ids), this session's runs and the store's. */
  readonly rollouts = new Map<string, string[]>();
  /** The task items whose latest result failed or errored. */
  readonly failed = new Set<string>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly ctx: Ctx) {
    this.controller.resolveHandler = async (item) => {
      if (!item) await this.refresh();
    };
    this.controller.refreshHandler = () => this.refresh();
    this.controller.createRunProfile('Run', vscode.TestRunProfileKind.Run, (request, token) => this.run(request, token), true);
    const watcher = vscode.workspace.createFileSystemWatcher('**/*.eval.jsonl');
    this.disposables.push(
      this.controller,
      watcher,
      watcher.onDidCreate((uri) => this.fileChanged(uri.fsPath)),
      watcher.onDidChange((uri) => this.fileChanged(uri.fsPath)),
      watcher.onDidDelete((uri) => this.dropFile(uri.fsPath)),
      vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration('agentLightning.evalDatasets') && void this.refresh()),
      ctx.onDidChangeDaemon((up) => up && void this.readHistory()),
    );
    void this.refresh().catch((e: Error) => ctx.log(`Test Explorer: the eval datasets could not be listed: ${e.message}`));
  }

  /** Every dataset the workspace names, read again; suites of files no longer named go. */
  async refresh(): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? null;
    const setting = datasetsFromSetting(vscode.workspace.getConfiguration('agentLightning').get('evalDatasets'), folder);
    for (const p of setting.problems) this.ctx.log(`Test Explorer: ${p}`);
    const found = await vscode.workspace.findFiles('**/*.eval.jsonl', EXCLUDE);
    const named = new Map<string, NamedDataset>(found.map((u) => [u.fsPath, { file: u.fsPath, agent: null }]));
    for (const d of setting.datasets) named.set(d.file, d);
    for (const file of [...this.suites.keys()]) if (!named.has(file)) this.dropFile(file);
    for (const d of named.values()) this.readFile(d.file, d);
    await this.readHistory();
  }

  /** (Re)reads one dataset into its suite: a task per row, an error item per bad row. */
  readFile(file: string, dataset?: NamedDataset): void {
    const suite = this.suites.get(file);
    const named = dataset ?? suite?.dataset ?? { file, agent: null };
    const uri = vscode.Uri.file(file);
    const item = suite?.item ?? this.controller.createTestItem(`${SUITE_PREFIX}${file}`, basename(file), uri);
    item.description = vscode.workspace.asRelativePath(uri, false);
    const tasks = new Map<string, vscode.TestItem>();
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
      item.error = undefined;
    } catch (e) {
      item.error = `cannot read ${file}: ${(e as Error).message}`;
      text = '';
    }
    const children = datasetItems(file, text).map((d) => {
      const id = d.kind === 'task' ? `${item.id}#${d.id}` : `${item.id}:${d.line}!`;
      const child = this.controller.createTestItem(id, d.kind === 'task' ? d.label : `line ${d.line}: bad row`, uri);
      child.range = new vscode.Range(d.line - 1, 0, d.line - 1, 0);
      if (d.kind === 'bad') child.error = d.error;
      else tasks.set(d.id, child);
      return child;
    });
    item.children.replace(children);
    this.controller.items.add(item);
    this.suites.set(file, { dataset: named, item, tasks });
  }

  private fileChanged(file: string): void {
    if (/[\\/](node_modules|dist|out|\.git|test-results)[\\/]/.test(file)) return;
    this.readFile(file);
    void this.readHistory();
  }

  dropFile(file: string): void {
    const suite = this.suites.get(file);
    if (!suite) return;
    this.controller.items.delete(suite.item.id);
    this.suites.delete(file);
  }

  /** Each task's results on the agent versions its dataset's past eval runs measured, as its description. */
  async readHistory(): Promise<void> {
    const d = this.ctx.daemon;
    if (!d || !this.suites.size) return;
    const runs = await new AglClient({ url: d.endpoint.url, token: d.endpoint.token }).listTrainingRuns(undefined, 'eval').catch((e: Error) => {
      this.ctx.log(`Test Explorer: the past eval runs could not be read: ${e.message}`);
      return null;
    });
    if (!runs) return;
    const history = new Map<string, TaskHistoryEntry[]>();
    for (const run of runs.sort((a, b) => a.createdAt - b.createdAt)) {
      const info = evalRunInfo(run);
      const suite = this.suites.get(info.data);
      if (!suite) continue;
      for (const result of evalSummaryOf(run)?.tasks ?? []) {
        const item = suite.tasks.get(result.id);
        if (!item) continue;
        history.set(item.id, [...(history.get(item.id) ?? []), { run: info, result }]);
        this.noteResult(item.id, result);
      }
    }
    for (const suite of this.suites.values()) for (const item of suite.tasks.values()) item.description = historyWords(history.get(item.id) ?? []) ?? undefined;
  }

  /** Where a task item's latest result is: its rollouts, and whether it failed. */
  noteResult(itemId: string, result: EvalTaskResult): void {
    this.rollouts.set(itemId, result.rolloutIds);
    if (result.passed) this.failed.delete(itemId);
    else this.failed.add(itemId);
  }

  /** The suite a test item belongs to: the suite's own item, or one of its tasks. */
  suiteOf(item: vscode.TestItem): Suite | undefined {
    return [...this.suites.values()].find((s) => s.item.id === item.id || item.id.startsWith(`${s.item.id}#`));
  }

  /** The suites a run request covers, each with the task items to report (all of a suite when it is included whole). */
  private requested(request: vscode.TestRunRequest): SuiteRun[] {
    const out = new Map<string, SuiteRun>();
    const skip = new Set((request.exclude ?? []).map((i) => i.id));
    const include = request.include ?? [...this.suites.values()].map((s) => s.item);
    for (const item of include) {
      const suite = this.suiteOf(item);
      if (!suite) continue;
      const run = out.get(suite.dataset.file) ?? { dataset: suite.dataset, tasks: suite.tasks, items: [] };
      const items = item.id === suite.item.id ? [...suite.tasks.values()] : [item];
      for (const i of items) if (!skip.has(i.id) && !run.items.includes(i)) run.items.push(i);
      out.set(suite.dataset.file, run);
    }
    return [...out.values()].filter((r) => r.items.length);
  }

  private async run(request: vscode.TestRunRequest, token: vscode.CancellationToken): Promise<void> {
    for (const suiteRun of this.requested(request)) {
      if (token.isCancellationRequested) break;
      await runEvalSuite(this.ctx, this, request, suiteRun, token);
    }
    await this.readHistory();
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
