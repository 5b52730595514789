/**
 * The extension's entry points into the webview panels (trajectory viewer, training dashboard), whose UI
 * lives in webview/ and extension/panels/ (the webview area). Commands call these, never the panels
 * directly, so the panels' API is used in one place.
 */
import * as vscode from 'vscode';
import type { Ctx } from './ctx.js';

export interface TrajectoryTarget { agent?: string; rolloutId?: string }
export interface DashboardTarget { runId?: string; agent?: string }

export async function showTrajectoryViewer(ctx: Ctx, target: TrajectoryTarget): Promise<void> {
  ctx.log(`trajectory viewer: ${JSON.stringify(target)}`);
  void vscode.window.showInformationMessage(`Agent Lightning: the trajectory viewer is not part of this build yet (${target.rolloutId ?? target.agent ?? 'all rollouts'}).`);
}

export async function showTrainingDashboard(ctx: Ctx, target: DashboardTarget): Promise<void> {
  ctx.log(`training dashboard: ${JSON.stringify(target)}`);
}
