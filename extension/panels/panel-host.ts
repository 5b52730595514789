/**
 * The extension-host side of one webview panel: creates (or adopts, after a restart) the WebviewPanel
 * with local resources limited to dist/webview, serves the CSP'd HTML, answers the webview's typed
 * requests from a handler table, hands its commands to the panel, and holds back notifications while the
 * panel is hidden or its script not yet ready (the last of each method wins), sending them when it shows.
 * What every panel shares is here too: an error state's "Start Daemon" runs the extension's command,
 * `notifyDaemonState` tells every open panel when the daemon comes or goes, and `notifyDaemonEvent` hands each
 * open panel the daemon's events (the one stream Ctx holds), which the panel turns into its webview's updates.
 */
import * as vscode from 'vscode';
import { COMMANDS } from '../../protocol/commands.js';
import type { DaemonEvent } from '../../protocol/events.js';
import { DaemonMessages, type IpcNotificationType } from '../../protocol/webview-ipc.js';
import type { RequestHandlers } from './data.js';
import { makeNonce, webviewHtml } from './html.js';
import { routeWebviewMessage } from './router.js';

export interface PanelHostOptions {
  viewType: string;
  title: string;
  /** Bundle name under dist/webview: `trajectory` -> trajectory.js + trajectory.css. */
  bundle: string;
  handlers: RequestHandlers;
  onCommand: (method: string, params: unknown) => void | Promise<void>;
  onDispose?: () => void;
  /** Called when the panel is shown or hidden. */
  onVisibility?: (visible: boolean) => void;
  /** Each event of the daemon's stream (protocol/events.ts), while the panel is open. */
  onDaemonEvent?: (event: DaemonEvent) => void;
}

/** Every live panel, for what all of them are told (the daemon's state). */
const livePanels = new Set<PanelHost>();

/** Tells every open panel that the daemon came up or went down (a webview showing an error then reloads). */
export function notifyDaemonState(up: boolean): void {
  for (const host of livePanels) host.notify(DaemonMessages.state, { up });
}

/** Hands every open panel an event of the daemon's stream. */
export function notifyDaemonEvent(event: DaemonEvent): void {
  for (const host of livePanels) host.daemonEvent(event);
}

export class PanelHost {
  readonly panel: vscode.WebviewPanel;
  private ready = false;
  private readonly held = new Map<string, unknown>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    context: vscode.ExtensionContext,
    private readonly options: PanelHostOptions,
    existing?: vscode.WebviewPanel,
    column = vscode.ViewColumn.Active,
  ) {
    const root = vscode.Uri.joinPath(context.extensionUri, 'dist', 'webview');
    this.panel =
      existing ??
      vscode.window.createWebviewPanel(options.viewType, options.title, column, {
        enableScripts: true,
        retainContextWhenHidden: false,
        localResourceRoots: [root],
      });
    this.panel.webview.options = { enableScripts: true, localResourceRoots: [root] };
    const webview = this.panel.webview;
    webview.html = webviewHtml({
      title: options.title,
      cspSource: webview.cspSource,
      nonce: makeNonce(),
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(root, `${options.bundle}.js`)).toString(),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(root, `${options.bundle}.css`)).toString(),
    });
    this.disposables.push(
      webview.onDidReceiveMessage((m: unknown) => void this.receive(m)),
      this.panel.onDidChangeViewState(() => {
        // A hidden webview (retainContextWhenHidden off) is torn down and reloads from its saved state.
        if (!this.panel.visible) this.ready = false;
        options.onVisibility?.(this.panel.visible);
      }),
      this.panel.onDidDispose(() => this.dispose()),
    );
    livePanels.add(this);
  }

  notify<P>(type: IpcNotificationType<P>, params: P): void {
    if (this.ready && this.panel.visible) void this.panel.webview.postMessage({ method: type.method, params });
    else this.held.set(type.method, params);
  }

  daemonEvent(event: DaemonEvent): void {
    this.options.onDaemonEvent?.(event);
  }

  reveal(): void {
    this.panel.reveal(undefined, false);
  }

  private receive(message: unknown): Promise<void> {
    return routeWebviewMessage(message, {
      handlers: this.options.handlers,
      post: (m) => void this.panel.webview.postMessage(m),
      onCommand: async (method, params) => {
        if (method === DaemonMessages.startDaemon.method) await vscode.commands.executeCommand(COMMANDS.startDaemon);
        else await this.options.onCommand(method, params);
      },
      onReady: () => {
        this.ready = true;
        for (const [method, params] of this.held) void this.panel.webview.postMessage({ method, params });
        this.held.clear();
      },
      onCommandError: (err) => void vscode.window.showErrorMessage(`Agent Lightning: ${err.message}`),
    });
  }

  private dispose(): void {
    livePanels.delete(this);
    for (const d of this.disposables) d.dispose();
    this.options.onDispose?.();
  }
}
