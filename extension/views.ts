/**
 * The extension's entry points into the webview panels (trajectory viewer, training dashboard, optimization view,
 * the compare view of two eval runs),
 * whose UI lives in webview/ and extension/panels/ (the webview area). Commands call these, never the panels
 * directly, so the panels' API is used in one place. The panels get the store client through Ctx, so a
 * panel restored after a reload or a daemon restart talks to the current daemon, and every open panel gets the
 * daemon's events from Ctx's one stream (a new rollout appears in the open list, a metric on the open dashboard).
 */
import * as vscode from 'vscode';
import { AglClient } from '../client/client.js';
import type { Ctx } from './ctx.js';
import { applyCandidate, registerPromptTexts } from './optimize-apply.js';
import {
  type CompareTarget,
  type DashboardTarget,
  type OptimizeTarget,
  type TrajectoryTarget,
  notifyDaemonEvent,
  notifyDaemonState,
  openCompareView,
  openOptimizationView,
  openTrainingDashboard,
  openTrajectoryViewer,
  registerPanelSerializers,
} from './panels/index.js';

/** The current daemon's client, or undefined while it is down (the panels then say so). */
function clientOf(ctx: Ctx): () => AglClient | undefined {
  return () => {
    const d = ctx.daemon;
    return d ? new AglClient({ url: d.endpoint.url, token: d.endpoint.token }) : undefined;
  };
}

/** The optimization view's Apply, which needs more of VS Code than a panel (the diff editor, edits, dialogs). */
const applyOf = (ctx: Ctx) => (target: { runId: string; candidateId: string }) => applyCandidate(ctx, target);

export function registerViews(ctx: Ctx): void {
  registerPanelSerializers(ctx.extension, clientOf(ctx), applyOf(ctx));
  // Open panels learn when the daemon comes back (or goes), so an error on screen recovers by itself.
  ctx.extension.subscriptions.push(
    registerPromptTexts(),
    ctx.onDidChangeDaemon((handle) => notifyDaemonState(handle !== null)),
    ctx.onDidReceiveEvent((event) => notifyDaemonEvent(event)),
  );
}

export async function showTrajectoryViewer(ctx: Ctx, target: TrajectoryTarget): Promise<void> {
  ctx.log(`Opening the trajectory viewer on ${JSON.stringify(target)}`);
  openTrajectoryViewer(ctx.extension, clientOf(ctx), target, vscode.ViewColumn.Beside);
}

export async function showTrainingDashboard(ctx: Ctx, target: DashboardTarget): Promise<void> {
  ctx.log(`Opening the training dashboard on ${JSON.stringify(target)}`);
  openTrainingDashboard(ctx.extension, clientOf(ctx), { runId: target.runId });
}

export async function showOptimizationView(ctx: Ctx, target: OptimizeTarget): Promise<void> {
  ctx.log(`Opening the optimization view on ${JSON.stringify(target)}`);
  openOptimizationView(ctx.extension, clientOf(ctx), target, applyOf(ctx));
}

export async function showCompareView(ctx: Ctx, target: CompareTarget): Promise<void> {
  ctx.log(`Opening the compare view on ${JSON.stringify(target)}`);
  openCompareView(ctx.extension, clientOf(ctx), target);
}
