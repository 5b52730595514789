/**
 * The webview panels' API for the rest of the extension:
 *   openTrajectoryViewer(context, client, { rolloutId } | { agent } | { runId, step })
 *   openTrainingDashboard(context, client, { runId })
 *   registerPanelSerializers(context, client)   // once, in activate(): restores panels after a reload
 * `client` is an AglClient or a function returning the current one (undefined = daemon down).
 */
import * as vscode from 'vscode';
import { DASHBOARD_VIEW_TYPE } from '../../protocol/webview-dashboard.js';
import { TRAJECTORY_VIEW_TYPE } from '../../protocol/webview-trajectory.js';
import { dashboardSerializer } from './dashboard-panel.js';
import { trajectorySerializer, type ClientSource } from './trajectory-panel.js';

export { openTrajectoryViewer, notifyRolloutsChanged, type ClientSource, type TrajectoryTarget } from './trajectory-panel.js';
export { openTrainingDashboard } from './dashboard-panel.js';
export { TRAJECTORY_VIEW_TYPE, DASHBOARD_VIEW_TYPE };

export function registerPanelSerializers(context: vscode.ExtensionContext, client: ClientSource): void {
  context.subscriptions.push(
    vscode.window.registerWebviewPanelSerializer(TRAJECTORY_VIEW_TYPE, trajectorySerializer(context, client)),
    vscode.window.registerWebviewPanelSerializer(DASHBOARD_VIEW_TYPE, dashboardSerializer(context, client)),
  );
}
