/**
 * The webview panels' API for the rest of the extension:
 *   openTrajectoryViewer(context, client, { rolloutId } | { agent } | { candidate, runId } | { runId, step })
 *   openTrainingDashboard(context, client, { runId })
 *   openOptimizationView(context, client, { runId, candidateId }, apply)
 *   openCompareView(context, client, { baseRunId, runId })   // two eval runs side by side
 *   registerPanelSerializers(context, client, apply)   // once, in activate(): restores panels after a reload
 * `client` is an AglClient or a function returning the current one (undefined = daemon down); `apply` is the editor's
 * Apply of a candidate (extension/optimize-apply.ts, which needs more of VS Code than a panel).
 * The panels link to each other (a step on the dashboard opens its groups; a group opens its run's dashboard; a
 * candidate opens its rollouts) through the links wired here, so no panel module imports another.
 */
import * as vscode from 'vscode';
import { COMPARE_VIEW_TYPE } from '../../protocol/webview-compare.js';
import { DASHBOARD_VIEW_TYPE } from '../../protocol/webview-dashboard.js';
import { OPTIMIZE_VIEW_TYPE } from '../../protocol/webview-optimize.js';
import { TRAJECTORY_VIEW_TYPE } from '../../protocol/webview-trajectory.js';
import type { ClientSource } from './client-source.js';
import * as compare from './compare-panel.js';
import * as dashboard from './dashboard-panel.js';
import * as optimize from './optimize-panel.js';
import * as trajectory from './trajectory-panel.js';

export type { ClientSource } from './client-source.js';
export { notifyDaemonEvent, notifyDaemonState } from './panel-host.js';
export type { DashboardTarget } from './dashboard-panel.js';
export type { OptimizeTarget } from './optimize-panel.js';
export type { TrajectoryTarget } from './trajectory-panel.js';
export type { CompareTarget } from './compare-panel.js';
export { TRAJECTORY_VIEW_TYPE, DASHBOARD_VIEW_TYPE, OPTIMIZE_VIEW_TYPE, COMPARE_VIEW_TYPE };

/** The editor's Apply of a candidate (asks first; a file seed in the diff editor, a string seed promoted). */
export type ApplyCandidate = (target: { runId: string; candidateId: string }) => Promise<void>;

function trajectoryLinks(context: vscode.ExtensionContext): trajectory.TrajectoryLinks {
  return { openDashboard: (client, runId) => openTrainingDashboard(context, client, { runId }) };
}
function dashboardLinks(context: vscode.ExtensionContext): dashboard.DashboardLinks {
  return {
    openGroups: (client, target) => openTrajectoryViewer(context, client, target, vscode.ViewColumn.Beside),
    openEvalCompare: (client) => openCompareView(context, client, {}),
  };
}
function compareLinks(context: vscode.ExtensionContext): compare.CompareLinks {
  return { openRollout: (client, rolloutId) => openTrajectoryViewer(context, client, { rolloutId }, vscode.ViewColumn.Beside) };
}
function optimizeLinks(context: vscode.ExtensionContext, apply: ApplyCandidate): optimize.OptimizeLinks {
  return {
    openRollouts: (client, { runId, candidateId }) => openTrajectoryViewer(context, client, { runId, candidate: candidateId }, vscode.ViewColumn.Beside),
    openRollout: (client, rolloutId) => openTrajectoryViewer(context, client, { rolloutId }, vscode.ViewColumn.Beside),
    apply,
  };
}

/** Opens (or reveals) the trajectory viewer on a rollout, an agent's rollouts, or a training step's groups. */
export function openTrajectoryViewer(
  context: vscode.ExtensionContext,
  client: ClientSource,
  opts: trajectory.TrajectoryTarget = {},
  column: vscode.ViewColumn = vscode.ViewColumn.Active,
): vscode.WebviewPanel {
  return trajectory.openTrajectoryViewer(context, client, opts, column, trajectoryLinks(context));
}

/** Opens (or reveals) the training dashboard, on `opts.runId` or the newest run. */
export function openTrainingDashboard(context: vscode.ExtensionContext, client: ClientSource, opts: dashboard.DashboardTarget = {}): vscode.WebviewPanel {
  return dashboard.openTrainingDashboard(context, client, opts, dashboardLinks(context));
}

/** Opens (or reveals) the optimization view, on `opts.runId` (else the newest) and its candidate `opts.candidateId`. */
export function openOptimizationView(
  context: vscode.ExtensionContext,
  client: ClientSource,
  opts: optimize.OptimizeTarget,
  apply: ApplyCandidate,
): vscode.WebviewPanel {
  return optimize.openOptimizationView(context, client, opts, optimizeLinks(context, apply));
}

/** Opens (or reveals) the compare view on two eval runs (`opts.runId` against `opts.baseRunId`). */
export function openCompareView(context: vscode.ExtensionContext, client: ClientSource, opts: compare.CompareTarget): vscode.WebviewPanel {
  return compare.openCompareView(context, client, opts, compareLinks(context));
}

export function registerPanelSerializers(context: vscode.ExtensionContext, client: ClientSource, apply: ApplyCandidate): void {
  context.subscriptions.push(
    vscode.window.registerWebviewPanelSerializer(TRAJECTORY_VIEW_TYPE, trajectory.trajectorySerializer(context, client, trajectoryLinks(context))),
    vscode.window.registerWebviewPanelSerializer(DASHBOARD_VIEW_TYPE, dashboard.dashboardSerializer(context, client, dashboardLinks(context))),
    vscode.window.registerWebviewPanelSerializer(OPTIMIZE_VIEW_TYPE, optimize.optimizeSerializer(context, client, optimizeLinks(context, apply))),
    vscode.window.registerWebviewPanelSerializer(COMPARE_VIEW_TYPE, compare.compareSerializer(context, client, compareLinks(context))),
  );
}
