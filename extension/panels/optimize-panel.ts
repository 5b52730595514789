/**
 * The optimization view's panel (one per window): the webview asks for the optimizations and a run's view (data.ts);
 * while it is visible the panel tells it when the shown run moved, as the daemon's events say (live-updates.ts
 * OptimizationRefresh), and when an optimization appeared; a candidate's rollouts and a grid cell's rollout open in the
 * trajectory viewer beside it, and Apply goes to the editor's apply (extension/optimize-apply.ts), through the links.
 */
import * as vscode from 'vscode';
import { OPTIMIZE_VIEW_TYPE, OptimizeProtocol } from '../../protocol/webview-optimize.js';
import { lazyHandlers, type ClientSource } from './client-source.js';
import { optimizeHandlers } from './data.js';
import { OptimizationRefresh } from './live-updates.js';
import { OnePanel, type MakeArgs } from './one-panel.js';
import { PanelHost } from './panel-host.js';

/** What the view opens on: a run (else the newest), a candidate in it. */
export interface OptimizeTarget {
  runId?: string;
  candidateId?: string;
}

/** Where the view's links lead outside it (wired by index.ts and views.ts, so the panels do not import each other). */
export interface OptimizeLinks {
  openRollouts(client: ClientSource, target: { runId: string; candidateId: string }): void;
  openRollout(client: ClientSource, rolloutId: string): void;
  apply(target: { runId: string; candidateId: string }): Promise<void>;
}

interface OptimizePanel {
  host: PanelHost;
  client: ClientSource;
  refresh: OptimizationRefresh;
}

function make({ context, client, links, existing, forget }: MakeArgs<OptimizePanel, OptimizeLinks>): OptimizePanel {
  const panel: OptimizePanel = {
    host: undefined as unknown as PanelHost,
    client,
    refresh: new OptimizationRefresh(
      (runId) => panel.host.notify(OptimizeProtocol.changed, { runId }),
      () => panel.host.notify(OptimizeProtocol.runAppeared, {}),
    ),
  };
  panel.host = new PanelHost(
    context,
    {
      viewType: OPTIMIZE_VIEW_TYPE,
      title: 'Agent Lightning: Optimization',
      bundle: 'optimize',
      handlers: lazyHandlers(() => panel.client, optimizeHandlers, OptimizeProtocol),
      onCommand: async (method, params) => {
        if (method === OptimizeProtocol.watchRun.method) {
          const { runId, agent } = params as { runId: string; agent: string };
          if (panel.host.panel.visible) panel.refresh.watch(runId, agent);
        } else if (method === OptimizeProtocol.openRollouts.method) {
          links.openRollouts(panel.client, params as { runId: string; candidateId: string });
        } else if (method === OptimizeProtocol.openRollout.method) {
          links.openRollout(panel.client, (params as { rolloutId: string }).rolloutId);
        } else if (method === OptimizeProtocol.apply.method) {
          await links.apply(params as { runId: string; candidateId: string });
        }
      },
      // A hidden view is torn down, and asks again (watchRun) when it shows.
      onVisibility: (visible) => visible || panel.refresh.stop(),
      onDaemonEvent: (event) => panel.host.panel.visible && panel.refresh.onEvent(event),
      onDispose: () => {
        panel.refresh.stop();
        forget(panel);
      },
    },
    existing,
  );
  return panel;
}

const optimization = new OnePanel(make);

/** Opens (or reveals) the optimization view, on `opts.runId` (else the newest) and `opts.candidateId`. */
export function openOptimizationView(context: vscode.ExtensionContext, client: ClientSource, opts: OptimizeTarget, links: OptimizeLinks): vscode.WebviewPanel {
  const { host } = optimization.open(context, client, links);
  if (opts.runId) host.notify(OptimizeProtocol.show, { runId: opts.runId, ...(opts.candidateId ? { candidateId: opts.candidateId } : {}) });
  return host.panel;
}

export function optimizeSerializer(context: vscode.ExtensionContext, client: ClientSource, links: OptimizeLinks): vscode.WebviewPanelSerializer {
  return optimization.serializer(context, client, links);
}
