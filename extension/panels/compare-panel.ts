/**
 * The compare view's panel (one per window): two eval runs side by side (webview/compare/, its messages
 * protocol/webview-compare.ts); the webview asks for the eval runs and the comparison (data.ts compareHandlers), is told
 * when an eval run appears or ends (the daemon's events), and a task's rollout opens in the trajectory viewer beside it
 * through the link index.ts wires.
 */
import * as vscode from 'vscode';
import type { DaemonEvent } from '../../protocol/events.js';
import { COMPARE_VIEW_TYPE, CompareProtocol } from '../../protocol/webview-compare.js';
import { lazyHandlers, type ClientSource } from './client-source.js';
import { compareHandlers } from './data.js';
import { OnePanel, type MakeArgs, type OpenPanel } from './one-panel.js';
import { PanelHost } from './panel-host.js';

/** What the view opens on: two runs (else it offers the newest two). */
export interface CompareTarget {
  baseRunId?: string;
  runId?: string;
}

/** Where the view's links lead outside it. */
export interface CompareLinks {
  openRollout(client: ClientSource, rolloutId: string): void;
}

/** Does this event add or end an eval run (the pickers then list them again)? */
export function evalRunsMoved(event: DaemonEvent): boolean {
  if (event.type === 'hello') return true;
  return event.type === 'store' && (event.change.truncated || event.change.runs.some((r) => r.kind === 'eval'));
}

function make({ context, client, links, existing, forget }: MakeArgs<OpenPanel, CompareLinks>): OpenPanel {
  const panel: OpenPanel = { host: undefined as unknown as PanelHost, client };
  panel.host = new PanelHost(
    context,
    {
      viewType: COMPARE_VIEW_TYPE,
      title: 'Agent Lightning: Compare Evals',
      bundle: 'compare',
      handlers: lazyHandlers(() => panel.client, compareHandlers, CompareProtocol),
      onCommand: (method, params) => {
        if (method === CompareProtocol.openRollout.method) links.openRollout(panel.client, (params as { rolloutId: string }).rolloutId);
      },
      onDaemonEvent: (event) => evalRunsMoved(event) && panel.host.notify(CompareProtocol.runsChanged, {}),
      onDispose: () => forget(panel),
    },
    existing,
  );
  return panel;
}

const compare = new OnePanel(make);

/** Opens (or reveals) the compare view, on `opts`' two runs. */
export function openCompareView(context: vscode.ExtensionContext, client: ClientSource, opts: CompareTarget, links: CompareLinks): vscode.WebviewPanel {
  const { host } = compare.open(context, client, links);
  if (opts.baseRunId && opts.runId) host.notify(CompareProtocol.show, { baseRunId: opts.baseRunId, runId: opts.runId });
  return host.panel;
}

export function compareSerializer(context: vscode.ExtensionContext, client: ClientSource, links: CompareLinks): vscode.WebviewPanelSerializer {
  return compare.serializer(context, client, links);
}
