/**
 * Ctx: the one owner of the daemon's lifecycle (find/attach, start, restart, stop, watch its health), the
 * language client of `agl lsp`, the status bar and the "Agent Lightning" output channel with the daemon's
 * log. While a daemon is up Ctx holds the window's one subscription to its event stream (client/events.ts):
 * the panels get its events through `onDidReceiveEvent`, and a stream that drops is the sign to check the daemon's
 * health (nothing polls it). Start/stop/restart are serialized, so two clicks never spawn two daemons. Commands ask Ctx for a
 * client with `requireDaemon`, which explains (and offers to start) when the daemon is down.
 */
import type { ChildProcess } from 'node:child_process';
import * as vscode from 'vscode';
import { LanguageClient, TransportKind, type LanguageClientOptions, type ServerOptions } from 'vscode-languageclient/node';
import { daemonChanged, refreshStats, type LspInitializationOptions } from '../protocol/lsp.js';
import type { DaemonEvent } from '../protocol/events.js';
import { AglClient } from '../client/client.js';
import { DaemonEventStream } from '../client/events.js';
import { aglEntry, nodeCommand, readSettings, workspaceRoot } from './config.js';
import { DaemonStartError, findRunningDaemon, healthy, spawnDaemon, stopDaemon, type DaemonHandle } from './daemon.js';
import { StatusBar } from './status.js';

/** A daemon whose stream dropped is down unless /health answers within this long. */
const HEALTH_TIMEOUT_MS = 4000;
const SERVED_MODEL_KEY = 'agentLightning.servedModel';

/** Resolves once `child` has exited (at once if it has), or after `timeoutMs`. */
function exitOf(child: ChildProcess, timeoutMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

export class Ctx implements vscode.Disposable {
  readonly output = vscode.window.createOutputChannel('Agent Lightning');
  readonly status = new StatusBar();
  private handle: DaemonHandle | null = null;
  private downReason = 'not started yet';
  private lifecycle: Promise<unknown> = Promise.resolve();
  private events: DaemonEventStream | null = null;
  private stoppedByUser = false;
  private languageClient: LanguageClient | null = null;
  private readonly changed = new vscode.EventEmitter<DaemonHandle | null>();
  /** Fires when the daemon comes up, moves or goes down. */
  readonly onDidChangeDaemon = this.changed.event;
  private readonly received = new vscode.EventEmitter<DaemonEvent>();
  /** The daemon's events (protocol/events.ts): `hello` after every (re)connection, then what the store committed. */
  readonly onDidReceiveEvent = this.received.event;

  constructor(readonly extension: vscode.ExtensionContext) {}

  get daemon(): DaemonHandle | null {
    return this.handle;
  }
  get lsp(): LanguageClient | null {
    return this.languageClient;
  }
  get extensionPath(): string {
    return this.extension.extensionPath;
  }

  log(line: string): void {
    this.output.appendLine(line);
  }

  /** The policy a daemon started here serves (Run Rollout's "current policy"): the last served checkpoint, else the default model. */
  get servedModel(): string {
    return this.extension.workspaceState.get<string>(SERVED_MODEL_KEY) ?? readSettings().defaultModel;
  }

  /**
   * Serves `model` (e.g. a checkpoint `agl train` wrote) from now on: restarts a daemon this window started
   * with it. A daemon started elsewhere keeps its model; false tells the caller to explain that.
   */
  async serveModel(model: string): Promise<boolean> {
    await this.extension.workspaceState.update(SERVED_MODEL_KEY, model);
    if (this.handle && !this.handle.child) return false;
    this.log(`Serving ${model}: restarting the daemon with --model.`);
    return this.restart();
  }

  /** Serializes lifecycle operations: each waits for the previous one to settle. */
  private serialize<T>(op: () => Promise<T>): Promise<T> {
    const next = this.lifecycle.then(op, op);
    this.lifecycle = next.catch(() => undefined);
    return next;
  }

  /** Attach to the running daemon of the data dir, or start one. Resolves true when it is up. */
  start(): Promise<boolean> {
    return this.serialize(() => this.doStart());
  }
  stop(): Promise<void> {
    return this.serialize(() => this.doStop(true));
  }
  restart(): Promise<boolean> {
    return this.serialize(async () => {
      await this.doStop(false);
      return this.doStart();
    });
  }

  private async doStart(): Promise<boolean> {
    if (this.handle && (await healthy(this.handle.endpoint.url))) return true;
    this.stoppedByUser = false;
    this.status.setDaemon({ kind: 'starting' });
    void this.languageClient?.sendNotification(daemonChanged, { daemon: null, starting: true }).catch(() => undefined);
    const settings = readSettings();
    try {
      let handle = await findRunningDaemon(settings.dataDir);
      if (handle) {
        this.log(
          `Attached to the running daemon at ${handle.endpoint.url} (pid ${handle.pid}, data dir ${handle.dataDir}). Its log is wherever it was started.`,
        );
      } else {
        const node = nodeCommand(settings);
        const spawnWith = (port: number) =>
          spawnDaemon({
            node: node.command,
            agl: aglEntry(this.extensionPath),
            port,
            dataDir: settings.dataDir,
            storeUrl: settings.storeUrl,
            model: this.servedModel,
            cwd: workspaceRoot(),
            onOutput: (l) => this.log(l),
          });
        try {
          handle = await spawnWith(settings.port);
        } catch (err) {
          // Port taken by something else: any free port will do (nothing to configure for the user).
          if (!(err instanceof DaemonStartError && err.portTaken && settings.port !== 0)) throw err;
          this.log(`Port ${settings.port} is taken; starting on a free port instead.`);
          handle = await spawnWith(0);
        }
        this.watchChild(handle);
      }
      this.setHandle(handle);
      return true;
    } catch (err) {
      this.markDown((err as Error).message);
      void vscode.window.showErrorMessage(`Agent Lightning: the daemon did not start: ${(err as Error).message}`, 'Show Log', 'Retry').then((choice) => {
        if (choice === 'Show Log') this.output.show();
        if (choice === 'Retry') void this.start();
      });
      return false;
    }
  }

  private async doStop(byUser: boolean): Promise<void> {
    const handle = this.handle;
    this.stoppedByUser = byUser;
    this.setHandle(null);
    if (!handle) return;
    this.log(`Stopping the daemon (pid ${handle.pid})…`);
    await stopDaemon(handle);
    this.log('Daemon stopped.');
    if (byUser) this.status.setDaemon({ kind: 'stopped' });
  }

  private watchChild(handle: DaemonHandle): void {
    handle.child?.once('exit', (code, signal) => {
      if (this.handle !== handle) return; // stopped on purpose, or replaced
      this.markDown(`the daemon exited (${signal ?? `code ${code}`}); see the log`);
      void vscode.window.showErrorMessage('Agent Lightning: the daemon stopped unexpectedly.', 'Restart', 'Show Log').then((c) => {
        if (c === 'Restart') void this.restart();
        if (c === 'Show Log') this.output.show();
      });
    });
  }

  private setHandle(handle: DaemonHandle | null): void {
    this.handle = handle;
    this.events?.close();
    this.events = null;
    if (handle) {
      this.status.setDaemon({ kind: 'ready', url: handle.endpoint.url, attached: handle.child === null, model: handle.child ? this.servedModel : null });
      this.events = this.subscribe(handle);
    }
    void this.languageClient?.sendNotification(daemonChanged, { daemon: handle ? handle.endpoint : null }).catch(() => undefined);
    void vscode.commands.executeCommand('setContext', 'agentLightning.daemonRunning', handle !== null);
    this.changed.fire(handle);
  }

  /** The daemon's event stream, for the panels; its dropping (it reconnects by itself) makes Ctx check the daemon. */
  private subscribe(handle: DaemonHandle): DaemonEventStream {
    return new DaemonEventStream({
      url: handle.endpoint.url,
      token: handle.endpoint.token,
      onEvent: (e) => this.received.fire(e),
      onDrop: ({ reason }) => {
        this.log(`Event stream from ${handle.endpoint.url} dropped (${reason}); reconnecting.`);
        void this.checkHealth(handle);
      },
      log: (m) => this.log(m),
    });
  }

  private async checkHealth(handle: DaemonHandle): Promise<void> {
    if (this.handle !== handle || (await healthy(handle.endpoint.url, HEALTH_TIMEOUT_MS))) return;
    // A daemon this window started that died is told by its exit (watchChild: "stopped unexpectedly", Restart).
    if (handle.child) await exitOf(handle.child, HEALTH_TIMEOUT_MS);
    if (this.handle !== handle) return;
    this.markDown(`the daemon at ${handle.endpoint.url} stopped answering`);
  }

  private markDown(reason: string): void {
    this.downReason = reason;
    if (this.handle) this.setHandle(null);
    else void this.languageClient?.sendNotification(daemonChanged, { daemon: null }).catch(() => undefined); // no longer "starting…"
    this.status.setDaemon(this.stoppedByUser ? { kind: 'stopped' } : { kind: 'down', reason });
    this.log(`Daemon down: ${reason}`);
  }

  /** A store client when the daemon is up; otherwise explains why not, offers to start it, and waits for that. */
  async requireDaemon(what: string): Promise<AglClient | undefined> {
    if (this.handle) return new AglClient({ url: this.handle.endpoint.url, token: this.handle.endpoint.token });
    const why = this.stoppedByUser ? 'it was stopped' : this.downReason;
    const choice = await vscode.window.showWarningMessage(`Agent Lightning: cannot ${what}: the daemon is not running (${why}).`, 'Start Daemon', 'Show Log');
    if (choice === 'Show Log') this.output.show();
    if (choice !== 'Start Daemon' || !(await this.start()) || !this.handle) return undefined;
    const h = this.handle as DaemonHandle;
    return new AglClient({ url: h.endpoint.url, token: h.endpoint.token });
  }

  /** Tells the language server that results changed (after a rollout or training step). */
  refreshLenses(agent?: string): void {
    void this.languageClient?.sendNotification(refreshStats, { agent }).catch(() => undefined);
  }

  async startLanguageClient(): Promise<void> {
    const settings = readSettings();
    const node = nodeCommand(settings);
    const run = {
      command: node.command,
      args: [aglEntry(this.extensionPath), 'lsp'],
      transport: TransportKind.stdio,
      options: { cwd: workspaceRoot(), env: { ...process.env, ...node.env } },
    };
    const serverOptions: ServerOptions = { run, debug: run };
    // Activation starts the daemon right after the language server: until it is up, lenses say "starting…".
    const init: LspInitializationOptions = {
      daemon: this.handle?.endpoint ?? null,
      starting: this.handle === null && !this.stoppedByUser,
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: ['typescript', 'typescriptreact', 'javascript', 'javascriptreact', 'python'].map((language) => ({ scheme: 'file', language })),
      initializationOptions: init,
    };
    this.languageClient = new LanguageClient('agentLightning', 'Agent Lightning Language Server', serverOptions, clientOptions);
    await this.languageClient.start();
  }

  async dispose(): Promise<void> {
    this.events?.close();
    this.events = null;
    const client = this.languageClient;
    this.languageClient = null;
    await client?.stop().catch(() => undefined);
    // A daemon this window started goes with it; one it attached to keeps running for its other users.
    if (this.handle?.child) await stopDaemon(this.handle).catch(() => undefined);
    this.handle = null;
    this.status.dispose();
    this.changed.dispose();
    this.received.dispose();
    this.output.dispose();
  }
}
