/**
 * The training dashboard panel (one per window): the webview asks for runs and metrics (data.ts); while it is
 * visible the panel pushes the new points of the shown run and the compared ones as the daemon's events say they
 * land, and says when a run appears (live-updates.ts); a click on a step opens that step's GRPO groups in the
 * trajectory viewer beside it.
 */
import * as vscode from 'vscode';
import { DASHBOARD_VIEW_TYPE, DashboardProtocol } from '../../protocol/webview-dashboard.js';
import { dashboardHandlers } from './data.js';
import { RunMetricsFeed } from './live-updates.js';
import { PanelHost } from './panel-host.js';
import { lazyHandlers, resolveClient, type ClientSource } from './client-source.js';
import { OnePanel, type MakeArgs } from './one-panel.js';

/** What the dashboard opens on: a run (else the newest). */
export interface DashboardTarget {
  runId?: string;
}

/** Where the dashboard's links lead outside it (wired by index.ts, so the panels do not import each other). */
export interface DashboardLinks {
  openGroups(client: ClientSource, target: { runId: string; step: number }): void;
  openEvalCompare(client: ClientSource): void;
}

interface DashboardPanel {
  host: PanelHost;
  client: ClientSource;
  feed: RunMetricsFeed;
}

function make({ context, client, links, existing, forget }: MakeArgs<DashboardPanel, DashboardLinks>): DashboardPanel {
  const panel: DashboardPanel = {
    host: undefined as unknown as PanelHost,
    client,
    feed: new RunMetricsFeed(
      () => resolveClient(panel.client),
      (run, points) => panel.host.notify(DashboardProtocol.metrics, { run, points }),
      () => panel.host.notify(DashboardProtocol.runAppeared, {}),
    ),
  };
  panel.host = new PanelHost(
    context,
    {
      viewType: DASHBOARD_VIEW_TYPE,
      title: 'Agent Lightning: Training',
      bundle: 'dashboard',
      handlers: lazyHandlers(() => panel.client, dashboardHandlers, DashboardProtocol),
      onCommand: async (method, params) => {
        if (method === DashboardProtocol.watchRun.method) {
          const { runId, compare = [] } = params as { runId: string; compare?: string[] };
          if (panel.host.panel.visible) panel.feed.watch([runId, ...compare]);
        } else if (method === DashboardProtocol.openGroups.method) {
          const { runId, step } = params as { runId: string; step: number };
          links.openGroups(panel.client, { runId, step });
        } else if (method === DashboardProtocol.openEvalCompare.method) {
          links.openEvalCompare(panel.client);
        }
      },
      // A hidden dashboard is torn down, and asks again (watchRun) when it shows.
      onVisibility: (visible) => visible || panel.feed.stop(),
      onDaemonEvent: (event) => panel.host.panel.visible && panel.feed.onEvent(event),
      onDispose: () => {
        panel.feed.stop();
        forget(panel);
      },
    },
    existing,
  );
  return panel;
}

const dashboard = new OnePanel(make);

/** Opens (or reveals) the training dashboard, on `opts.runId` or the newest run. */
export function openTrainingDashboard(
  context: vscode.ExtensionContext,
  client: ClientSource,
  opts: DashboardTarget,
  links: DashboardLinks,
): vscode.WebviewPanel {
  const { host } = dashboard.open(context, client, links);
  if (opts.runId) host.notify(DashboardProtocol.show, { runId: opts.runId });
  return host.panel;
}

export function dashboardSerializer(context: vscode.ExtensionContext, client: ClientSource, links: DashboardLinks): vscode.WebviewPanelSerializer {
  return dashboard.serializer(context, client, links);
}
