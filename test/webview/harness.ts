/**
 * Loads a built webview bundle (dist/webview/*.js) in real chromium (test/helpers/browser.ts) the way VS Code does: the
 * panels' own HTML shell (extension/panels/html.ts, strict CSP with a nonce) served over HTTP, the VS Code
 * theme variables on <html>, and an `acquireVsCodeApi` shim whose postMessage goes to the panels' real
 * host-side router and data handlers (extension/panels/router.ts, data.ts) talking to a real daemon
 * (SQLite store + HTTP API) through the typed client, and the panels' live updates fed by the daemon's event
 * stream (liveTrajectory, liveDashboard, liveOptimize). getState/setState persist across reloads like VS Code's. CSP violations, page errors and console errors are collected for the tests to assert on.
 */
import { mkdtempSync, readFileSync, rmSync, existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { closeGracefully, createApp, listen } from '../../daemon/server/app.js';
import { createServerContext } from '../../daemon/server/server-context.js';
import { SqliteStore } from '../../daemon/store/index.js';
import { launchChromium } from '../helpers/browser.js';
import { makeNonce, webviewHtml } from '../../extension/panels/html.js';
import type { RequestHandlers } from '../../extension/panels/data.js';
import { routeWebviewMessage } from '../../extension/panels/router.js';
import { AglClient } from '../../client/client.js';
import { DaemonEventStream } from '../../client/events.js';
import { OptimizationRefresh, RolloutsRefresh, RunMetricsFeed } from '../../extension/panels/live-updates.js';
import { DashboardProtocol } from '../../protocol/webview-dashboard.js';
import { OptimizeProtocol } from '../../protocol/webview-optimize.js';
import { TrajectoryProtocol } from '../../protocol/webview-trajectory.js';
import { DARK_MODERN, LIGHT_MODERN } from './theme.js';

/** The repository root: the test runner (scripts/run-tests.mjs) runs tests from there. */
export const ROOT = process.cwd();
export const SCREENSHOTS = join(ROOT, 'test-results', 'webview');
const DIST = join(ROOT, 'dist', 'webview');

export interface Daemon {
  client: AglClient;
  url: string;
  token: string;
  close(): Promise<void>;
}

export async function startDaemon(): Promise<Daemon> {
  const dir = mkdtempSync(join(tmpdir(), 'agl-webview-'));
  const store = new SqliteStore(join(dir, 'store.sqlite'));
  const ctx = createServerContext({ store, token: 'webview-test-token', dataDir: dir, log: () => {} });
  const server = await listen(createApp(ctx), ctx, '127.0.0.1', 0);
  return {
    client: new AglClient({ url: ctx.url, token: 'webview-test-token' }),
    url: ctx.url,
    token: 'webview-test-token',
    async close() {
      await closeGracefully(server, 500);
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A panel's live updates as the extension wires them (extension/panels/*-panel.ts, live-updates.ts): the daemon's
 * event stream (the subscription Ctx holds, client/events.ts) handed to `onEvent`, and the webview's commands to
 * `onCommand`; `attach` names the webview they notify.
 */
export interface LiveUpdates {
  attach(view: WebviewSession): void;
  onCommand(method: string, params: unknown, view: WebviewSession): void;
  close(): void;
}

/** The trajectory panel's: the rollouts the daemon says changed, told to the webview (TrajectoryProtocol.changed). */
export function liveTrajectory(daemon: Daemon): LiveUpdates {
  let view: WebviewSession | undefined;
  const refresh = new RolloutsRefresh((changed) => void view?.notify(TrajectoryProtocol.changed.method, changed));
  const stream = new DaemonEventStream({ url: daemon.url, token: daemon.token, onEvent: (e) => refresh.onEvent(e) });
  return {
    attach: (v) => (view = v),
    onCommand: (_method, _params, v) => (view = v),
    close() {
      stream.close();
      refresh.stop();
    },
  };
}

/** The dashboard panel's: the watched runs' new points (watchRun) and new runs, as the daemon's events say they land. */
export function liveDashboard(daemon: Daemon): LiveUpdates {
  let view: WebviewSession | undefined;
  const feed = new RunMetricsFeed(
    async () => daemon.client,
    (run, points) => void view?.notify(DashboardProtocol.metrics.method, { run, points }),
    () => void view?.notify(DashboardProtocol.runAppeared.method, {}),
  );
  const stream = new DaemonEventStream({ url: daemon.url, token: daemon.token, onEvent: (e) => feed.onEvent(e) });
  return {
    attach: (v) => (view = v),
    onCommand(method, params, v) {
      view = v;
      if (method !== DashboardProtocol.watchRun.method) return;
      const { runId, compare = [] } = params as { runId: string; compare?: string[] };
      feed.watch([runId, ...compare]);
    },
    close() {
      stream.close();
      feed.stop();
    },
  };
}

/** The optimization view's: the watched run's moves (watchRun) and new optimizations, as the daemon's events say. */
export function liveOptimize(daemon: Daemon): LiveUpdates {
  let view: WebviewSession | undefined;
  const refresh = new OptimizationRefresh(
    (runId) => void view?.notify(OptimizeProtocol.changed.method, { runId }),
    () => void view?.notify(OptimizeProtocol.runAppeared.method, {}),
  );
  const stream = new DaemonEventStream({ url: daemon.url, token: daemon.token, onEvent: (e) => refresh.onEvent(e) });
  return {
    attach: (v) => (view = v),
    onCommand(method, params, v) {
      view = v;
      if (method !== OptimizeProtocol.watchRun.method) return;
      const { runId, agent } = params as { runId: string; agent: string };
      refresh.watch(runId, agent);
    },
    close() {
      stream.close();
      refresh.stop();
    },
  };
}

const MIME: Record<string, string> = { '.js': 'text/javascript', '.css': 'text/css', '.ttf': 'font/ttf', '.map': 'application/json', '.html': 'text/html' };

/** Serves `/<bundle>.html` (the panel's shell) and the files of dist/webview. */
async function serveWebviews(): Promise<{ origin: string; server: Server }> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const origin = `http://${req.headers.host}`;
    const page = /^\/(\w+)\.html$/.exec(url.pathname);
    if (page) {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(
        webviewHtml({ title: page[1], cspSource: origin, nonce: makeNonce(), scriptUri: `${origin}/${page[1]}.js`, styleUri: `${origin}/${page[1]}.css` }),
      );
      return;
    }
    if (url.pathname === '/favicon.ico') {
      res.writeHead(204).end();
      return;
    }
    const file = normalize(join(DIST, url.pathname));
    if (!file.startsWith(DIST) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': MIME[extname(file)] ?? 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/**
 * What VS Code gives a webview before its script runs: theme variables on <html>, a theme class on <body>,
 * and acquireVsCodeApi() (once per page) with postMessage and a state that survives reloads. Plain
 * JavaScript text: the page runs it as is.
 */
function hostShim(theme: Record<string, string>, themeClass: string): string {
  return `(() => {
  const theme = ${JSON.stringify(theme)};
  const applyTheme = () => {
    for (const [k, v] of Object.entries(theme)) document.documentElement.style.setProperty('--vscode-' + k, v);
    if (document.body) document.body.classList.add(${JSON.stringify(themeClass)});
  };
  document.addEventListener('securitypolicyviolation', (e) => {
    window.__aglCspViolation(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' (' + e.sourceFile + ':' + e.lineNumber + ')');
  });
  let acquired = false;
  window.acquireVsCodeApi = () => {
    if (acquired) throw new Error('acquireVsCodeApi can only be called once');
    acquired = true;
    applyTheme();
    return {
      postMessage: (m) => window.__aglToHost(JSON.stringify(m)),
      getState: () => { const s = sessionStorage.getItem('vscode-state'); return s ? JSON.parse(s) : undefined; },
      setState: (s) => { sessionStorage.setItem('vscode-state', JSON.stringify(s)); return s; },
    };
  };
})();`;
}

export interface HostMessage {
  method: string;
  params: unknown;
}

export interface WebviewSession {
  page: Page;
  /** CSP violations, uncaught errors and console errors seen so far. */
  problems: string[];
  /** Commands the webview sent to the host (openCode, openGroups...). */
  commands: HostMessage[];
  /** The first command with this method the webview sent, waiting for it to arrive (postMessage is async). */
  nextCommand(method: string, timeoutMs?: number): Promise<HostMessage>;
  /** Push a notification to the webview, as the panel does. */
  notify(method: string, params: unknown): Promise<void>;
  screenshot(name: string): Promise<string>;
  /** Switches the theme of the open page as VS Code does (its webview host's applyStyles): the --vscode-* variables on <html> replaced, the body's theme class and data-vscode-theme-kind set. */
  setTheme(theme: 'dark' | 'light'): Promise<void>;
  close(): Promise<void>;
}

export async function openWebview(
  bundle: 'trajectory' | 'dashboard' | 'optimize' | 'compare',
  handlers: RequestHandlers,
  opts: {
    width?: number;
    height?: number;
    theme?: 'dark' | 'light';
    onCommand?: (method: string, params: unknown, session: WebviewSession) => void;
    /** Runs before the page loads (e.g. routes that fail the bundle's first requests). */
    beforeLoad?: (page: Page) => Promise<void>;
  } = {},
): Promise<WebviewSession> {
  if (!existsSync(join(DIST, `${bundle}.js`))) throw new Error(`dist/webview/${bundle}.js is missing: run \`npm run build\` first`);
  const { origin, server } = await serveWebviews();
  const browser: Browser = await launchChromium(); // headless, a fresh profile dir
  const page = await browser.newPage({ viewport: { width: opts.width ?? 1400, height: opts.height ?? 900 } });
  const problems: string[] = [];
  const commands: HostMessage[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
  });
  const post = (message: unknown): void => {
    void page.evaluate(`window.postMessage(${JSON.stringify(message)}, '*')`).catch(() => {});
  };
  await page.exposeBinding('__aglCspViolation', (_src, text: string) => {
    problems.push(`CSP violation: ${text}`);
  });
  await page.exposeBinding('__aglToHost', async (_src, json: string) => {
    const message = JSON.parse(json) as HostMessage & { id?: number };
    await routeWebviewMessage(message, {
      handlers,
      post,
      onCommand: (method, params) => {
        commands.push({ method, params });
        opts.onCommand?.(method, params, session);
      },
      onReady: () => {},
    });
  });
  await page.addInitScript({ content: opts.theme === 'light' ? hostShim(LIGHT_MODERN, 'vscode-light') : hostShim(DARK_MODERN, 'vscode-dark') });
  await opts.beforeLoad?.(page);
  await page.goto(`${origin}/${bundle}.html`);
  mkdirSync(SCREENSHOTS, { recursive: true });
  const session: WebviewSession = {
    page,
    problems,
    commands,
    async nextCommand(method, timeoutMs = 5000) {
      for (const until = Date.now() + timeoutMs; Date.now() < until; await new Promise((r) => setTimeout(r, 20))) {
        const found = commands.find((c) => c.method === method);
        if (found) return found;
      }
      throw new Error(`the webview sent no '${method}' command within ${timeoutMs} ms (sent: ${commands.map((c) => c.method).join(', ') || 'none'})`);
    },
    notify: async (method, params) => {
      await page.evaluate(`window.postMessage(${JSON.stringify({ method, params })}, '*')`);
    },
    async setTheme(theme) {
      const vars = theme === 'light' ? LIGHT_MODERN : DARK_MODERN;
      const kind = theme === 'light' ? 'vscode-light' : 'vscode-dark';
      await page.evaluate(
        ({ vars, kind }) => {
          const style = document.documentElement.style;
          for (let i = style.length - 1; i >= 0; i--) if (style[i]!.startsWith('--vscode-')) style.removeProperty(style[i]!);
          for (const [k, v] of Object.entries(vars)) style.setProperty(`--vscode-${k}`, v);
          document.body.classList.remove('vscode-light', 'vscode-dark', 'vscode-high-contrast');
          document.body.classList.add(kind);
          document.body.dataset.vscodeThemeKind = kind;
        },
        { vars, kind },
      );
    },
    async screenshot(name) {
      const path = join(SCREENSHOTS, `${name}.png`);
      await page.screenshot({ path, fullPage: true });
      return path;
    },
    async close() {
      await browser.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return session;
}
