/**
 * The trajectory viewer panel (one per window): opened on a rollout, an agent's rollouts, or a training
 * step's GRPO groups; answers the webview from the daemon (data.ts); while visible, tells the webview which
 * rollouts the daemon's events say changed (live-updates.ts), so new ones appear in the list and an open rollout
 * shows its new spans; opens agent code at the line that made an LLM call; adds rollouts to a dataset the user picks
 * (dataset-add.ts, dataset-picks.ts); restored after a reload by its serializer.
 */
import * as vscode from 'vscode';
import { TRAJECTORY_VIEW_TYPE, TrajectoryProtocol, type TrajectoryView } from '../../protocol/webview-trajectory.js';
import { lazyHandlers, type ClientSource } from './client-source.js';
import { trajectoryHandlers } from './data.js';
import { vscodeDatasetChooser } from './dataset-picks.js';
import { RolloutsRefresh } from './live-updates.js';
import { OnePanel, type MakeArgs, type OpenPanel } from './one-panel.js';
import { PanelHost } from './panel-host.js';
import { definitionLine, findSourceFile } from './source.js';

/** What the viewer opens on: a rollout, an agent's rollouts, a prompt candidate's rollouts, or a training step's GRPO groups. */
export interface TrajectoryTarget {
  rolloutId?: string;
  agent?: string;
  /** A prompt candidate (with its optimization's `runId`): the list filtered by it. */
  candidate?: string;
  runId?: string;
  step?: number;
}

/** Where the viewer's links lead outside it (wired by index.ts, so the panels do not import each other). */
export interface TrajectoryLinks {
  openDashboard(client: ClientSource, runId: string): void;
}

interface TrajectoryPanel extends OpenPanel {
  refresh: RolloutsRefresh;
}

/** Opens `filepath` (absolute, or relative to a workspace folder) at `lineno` (1-based), or at `symbol`'s definition. */
async function openCode(filepath: string, lineno: number | null, symbol?: string): Promise<void> {
  const found = findSourceFile(
    filepath,
    (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
  );
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(found));
  const line = lineno !== null ? Math.max(0, lineno - 1) : symbol ? definitionLine(doc.getText(), symbol) : 0;
  await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.One, selection: new vscode.Range(line, 0, line, 0) });
}

function make({ context, client, links, existing, column, forget }: MakeArgs<TrajectoryPanel, TrajectoryLinks>): TrajectoryPanel {
  const panel: TrajectoryPanel = {
    host: undefined as unknown as PanelHost,
    client,
    refresh: new RolloutsRefresh((changed) => panel.host.notify(TrajectoryProtocol.changed, changed)),
  };
  panel.host = new PanelHost(
    context,
    {
      viewType: TRAJECTORY_VIEW_TYPE,
      title: 'Agent Lightning: Trajectories',
      bundle: 'trajectory',
      handlers: lazyHandlers(
        () => panel.client,
        (c) => trajectoryHandlers(c, vscodeDatasetChooser),
        TrajectoryProtocol,
      ),
      onCommand: async (method, params) => {
        if (method === TrajectoryProtocol.openCode.method) {
          const p = params as { filepath: string; lineno: number | null; symbol?: string };
          await openCode(p.filepath, p.lineno, p.symbol);
        } else if (method === TrajectoryProtocol.openDashboard.method) {
          links.openDashboard(panel.client, (params as { runId: string }).runId);
        }
      },
      // A hidden viewer is torn down and reloads when shown: it needs no news meanwhile.
      onVisibility: (visible) => visible || panel.refresh.stop(),
      onDaemonEvent: (event) => panel.host.panel.visible && panel.refresh.onEvent(event),
      onDispose: () => {
        panel.refresh.stop();
        forget(panel);
      },
    },
    existing,
    column,
  );
  return panel;
}

const viewer = new OnePanel(make);

function viewFor(target: TrajectoryTarget): TrajectoryView | null {
  if (target.rolloutId) return { kind: 'rollout', rolloutId: target.rolloutId };
  if (target.candidate) return { kind: 'rollouts' };
  if (target.runId) return { kind: 'group', runId: target.runId, step: target.step };
  if (target.agent) return { kind: 'rollouts' };
  return null;
}

/** Opens (or reveals) the trajectory viewer, showing `opts`' rollout, agent's rollouts, or step's groups. */
export function openTrajectoryViewer(
  context: vscode.ExtensionContext,
  client: ClientSource,
  opts: TrajectoryTarget,
  column: vscode.ViewColumn,
  links: TrajectoryLinks,
): vscode.WebviewPanel {
  const { host } = viewer.open(context, client, links, column);
  const view = viewFor(opts);
  const filter = opts.candidate ? { candidate: opts.candidate, ...(opts.runId ? { runId: opts.runId } : {}) } : opts.agent ? { agent: opts.agent } : undefined;
  if (view) host.notify(TrajectoryProtocol.show, { view, filter });
  return host.panel;
}

export function trajectorySerializer(context: vscode.ExtensionContext, client: ClientSource, links: TrajectoryLinks): vscode.WebviewPanelSerializer {
  // The webview restores its own view from getState(); the host only re-attaches.
  return viewer.serializer(context, client, links);
}
