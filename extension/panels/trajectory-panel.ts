/**
 * The trajectory viewer panel (one per window): opened on a rollout, an agent's rollouts, or a training
 * step's GRPO groups; answers the webview from the daemon (data.ts); opens agent code at the line that
 * made an LLM call; restored after a reload by its serializer.
 */
import * as vscode from 'vscode';
import { TRAJECTORY_VIEW_TYPE, TrajectoryProtocol, type TrajectoryView } from '../../protocol/webview-trajectory.js';
import type { AglClient } from '../../sdk/client.js';
import { trajectoryHandlers, type RequestHandlers } from './data.js';
import { PanelHost } from './panel-host.js';
import { definitionLine, findSourceFile } from './source.js';

/** An AglClient, or a function giving the current one (the daemon may restart on another port). */
export type ClientSource = AglClient | (() => Promise<AglClient | undefined> | AglClient | undefined);

export async function resolveClient(source: ClientSource): Promise<AglClient> {
  const client = typeof source === 'function' ? await source() : source;
  if (!client) throw new Error('the Agent Lightning daemon is not running: start it with "Agent Lightning: Start Daemon"');
  return client;
}

/** Handlers that look the client up on every request, so a restarted daemon is picked up. */
export function lazyHandlers(source: () => ClientSource, build: (c: AglClient) => RequestHandlers, methods: string[]): RequestHandlers {
  return new Map(methods.map((m) => [m, async (params: unknown) => build(await resolveClient(source())).get(m)!(params)]));
}

export interface TrajectoryTarget { rolloutId?: string; agent?: string; runId?: string; step?: number }

let current: { host: PanelHost; client: ClientSource } | undefined;

/** Opens `filepath` (absolute, or relative to a workspace folder) at `lineno` (1-based), or at `symbol`'s definition. */
async function openCode(filepath: string, lineno: number | null, symbol?: string): Promise<void> {
  const found = findSourceFile(filepath, (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath));
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(found));
  const line = lineno !== null ? Math.max(0, lineno - 1) : symbol ? definitionLine(doc.getText(), symbol) : 0;
  await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.One, selection: new vscode.Range(line, 0, line, 0) });
}

function create(context: vscode.ExtensionContext, client: ClientSource, existing?: vscode.WebviewPanel, column?: vscode.ViewColumn): PanelHost {
  const methods = Object.values(TrajectoryProtocol).filter((t) => t.kind === 'request').map((t) => t.method);
  const host = new PanelHost(context, {
    viewType: TRAJECTORY_VIEW_TYPE,
    title: 'Agent Lightning: Trajectories',
    bundle: 'trajectory',
    handlers: lazyHandlers(() => current?.client ?? client, trajectoryHandlers, methods),
    onCommand: async (method, params) => {
      if (method === TrajectoryProtocol.openCode.method) {
        const p = params as { filepath: string; lineno: number | null; symbol?: string };
        await openCode(p.filepath, p.lineno, p.symbol);
      } else if (method === TrajectoryProtocol.openDashboard.method) {
        const { openTrainingDashboard } = await import('./dashboard-panel.js');
        openTrainingDashboard(context, current?.client ?? client, { runId: (params as { runId: string }).runId });
      }
    },
    onDispose: () => { if (current?.host === host) current = undefined; },
  }, existing, column);
  current = { host, client };
  return host;
}

function viewFor(target: TrajectoryTarget): TrajectoryView | null {
  if (target.rolloutId) return { kind: 'rollout', rolloutId: target.rolloutId };
  if (target.runId) return { kind: 'group', runId: target.runId, step: target.step };
  if (target.agent) return { kind: 'rollouts' };
  return null;
}

/** Opens (or reveals) the trajectory viewer, showing `opts`' rollout, agent's rollouts, or step's groups. */
export function openTrajectoryViewer(context: vscode.ExtensionContext, client: ClientSource, opts: TrajectoryTarget = {},
  column: vscode.ViewColumn = vscode.ViewColumn.Active): vscode.WebviewPanel {
  let host: PanelHost;
  if (current) { host = current.host; current.client = client; host.reveal(); } else host = create(context, client, undefined, column);
  const view = viewFor(opts);
  if (view) host.notify(TrajectoryProtocol.show, { view, filter: opts.agent ? { agent: opts.agent } : undefined });
  return host.panel;
}

/** Tells an open viewer that rollouts changed (new spans, ended rollouts) so it reloads what it shows. */
export function notifyRolloutsChanged(rolloutIds: string[]): void {
  current?.host.notify(TrajectoryProtocol.changed, { rolloutIds });
}

export function trajectorySerializer(context: vscode.ExtensionContext, client: ClientSource): vscode.WebviewPanelSerializer {
  return {
    async deserializeWebviewPanel(panel: vscode.WebviewPanel): Promise<void> {
      // The webview restores its own view from getState(); the host only re-attaches.
      if (current) current.host.panel.dispose();
      create(context, client, panel);
    },
  };
}
