/**
 * The webview panels' API for the rest of the extension:
 *   openTrajectoryViewer(context, client, { rolloutId } | { agent } | { runId, step })
 *   openTrainingDashboard(context, client, { runId })
 *   registerPanelSerializers(context, client)   // once, in activate(): restores panels after a reload
 * `client` is an AglClient or a function returning the current one (undefined = daemon down).
 * The two panels link to each other (a step on the dashboard opens its groups; a group opens its run's
 * dashboard) through the links wired here, so neither panel module imports the other.
 */
import * as vscode from 'vscode';
import { DASHBOARD_VIEW_TYPE } from '../../protocol/webview-dashboard.js';
import { TRAJECTORY_VIEW_TYPE } from '../../protocol/webview-trajectory.js';
import type { ClientSource } from './client-source.js';
import * as dashboard from './dashboard-panel.js';
import * as trajectory from './trajectory-panel.js';

export type { ClientSource } from './client-source.js';
export { notifyDaemonEvent, notifyDaemonState } from './panel-host.js';
export type { DashboardTarget } from './dashboard-panel.js';
export type { TrajectoryTarget } from './trajectory-panel.js';
export { TRAJECTORY_VIEW_TYPE, DASHBOARD_VIEW_TYPE };

function trajectoryLinks(context: vscode.ExtensionContext): trajectory.TrajectoryLinks {
  return { openDashboard: (client, runId) => openTrainingDashboard(context, client, { runId }) };
}
function dashboardLinks(context: vscode.ExtensionContext): dashboard.DashboardLinks {
  return { openGroups: (client, target) => openTrajectoryViewer(context, client, target, vscode.ViewColumn.Beside) };
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

export function registerPanelSerializers(context: vscode.ExtensionContext, client: ClientSource): void {
  context.subscriptions.push(
    vscode.window.registerWebviewPanelSerializer(TRAJECTORY_VIEW_TYPE, trajectory.trajectorySerializer(context, client, trajectoryLinks(context))),
    vscode.window.registerWebviewPanelSerializer(DASHBOARD_VIEW_TYPE, dashboard.dashboardSerializer(context, client, dashboardLinks(context))),
  );
}
