/**
 * Real VS Code for the end-to-end test: code-server 4.100.3 (installed from npm into the test cache by
 * test/helpers/code-server.ts, which `npm test` runs first) with our packaged .vsix installed, driven through
 * playwright-core by the Chromium test/helpers/browser.ts finds (Debian's, or the npm build).
 * Everything lands in one scratch folder (user data, extensions, TMPDIR, XDG dirs, the daemon's data
 * dir); code-server runs in its own process group, so stopping it also stops the extension host, the
 * language server and the daemon the extension started. See README.md here.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Frame, FrameLocator, Locator, Page } from 'playwright-core';
import { findChromium, launchChromium, NO_CHROMIUM } from '../helpers/browser.js';
import { CODE_SERVER, codeServerReady } from '../helpers/code-server.js';
import { freePort } from '../helpers/net.js';

/** Why the e2e cannot run here, or null. The test fails with this (never skips). */
export function missingTools(): string | null {
  const missing: string[] = [];
  if (!codeServerReady()) missing.push(`code-server (expected at ${CODE_SERVER})`);
  if (!findChromium()) missing.push(`chromium (${NO_CHROMIUM})`);
  if (missing.length === 0) return null;
  return `the end-to-end test needs ${missing.join(' and ')}: run it through \`npm test -- test/e2e\` (or \`npm run test:e2e\`), which installs them into the test cache first`;
}

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Where the e2e tests' screenshots go (`npm test` empties it before the run). */
export const SHOTS = join(ROOT, 'test-results', 'e2e');

/**
 * The extension packaged as a .vsix (`npm run package`). `npm test` packages it once before the e2e files run
 * (several may run at once) and names it in AGL_E2E_VSIX; without it, this packages it.
 */
export function packagedVsix(): string {
  const given = process.env.AGL_E2E_VSIX;
  if (given && existsSync(given)) return given;
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'package-vsix.mjs')], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`npm run package failed:\n${r.stdout}\n${r.stderr}`);
  return join(ROOT, `${pkg.name}-${pkg.version}.vsix`);
}

/** Every "Agent Lightning" output channel log code-server wrote (for failure reports). */
export function extensionLogs(scratch: string): string {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else if (/Agent Lightning|exthost\.log/.test(n)) out.push(`--- ${n}\n${readFileSync(p, 'utf8').slice(-6000)}`);
    }
  };
  try {
    walk(join(scratch, 'user', 'logs'));
  } catch {
    /* none yet */
  }
  return out.join('\n');
}

/**
 * The start of an e2e test: fails naming what is missing when run without `npm test`'s set-up, makes the
 * screenshot folder, and returns a clock: `mark(name)` records the seconds since start under that name.
 */
export function beginE2e(): { timings: Record<string, number>; mark: (name: string) => void } {
  const missing = missingTools();
  assert.equal(missing, null, missing ?? '');
  mkdirSync(SHOTS, { recursive: true });
  const timings: Record<string, number> = {};
  const t0 = Date.now();
  return {
    timings,
    mark: (name) => {
      timings[name] = Math.round((Date.now() - t0) / 100) / 10;
    },
  };
}

export { freePort };

export interface CodeServer {
  url: string;
  scratch: string;
  dataDir: string;
  log: () => string;
  stop: () => Promise<void>;
}

/** Installs the .vsix and starts code-server with our settings; resolves when /healthz answers. `dataDir`: the
 * daemon's data dir (a store made beforehand, e.g. by `agl train`; the caller removes it), else a fresh one in the scratch folder. */
export async function startCodeServer(vsix: string, settings: Record<string, unknown>, opts: { dataDir?: string } = {}): Promise<CodeServer> {
  const scratch = mkdtempSync(join(tmpdir(), 'agl-e2e-'));
  const dirs = Object.fromEntries(
    ['user', 'extensions', 'tmp', 'xdg-config', 'xdg-data', 'agl-data'].map((d) => {
      const p = join(scratch, d);
      mkdirSync(p, { recursive: true });
      return [d, p];
    }),
  );
  mkdirSync(join(dirs.user!, 'User'), { recursive: true });
  writeFileSync(
    join(dirs.user!, 'User', 'settings.json'),
    JSON.stringify(
      {
        'workbench.startupEditor': 'none',
        'security.workspace.trust.enabled': false,
        'telemetry.telemetryLevel': 'off',
        'extensions.autoCheckUpdates': false,
        'extensions.autoUpdate': false,
        'workbench.tips.enabled': false,
        'editor.codeLens': true,
        // No animation to paint frame by frame in a software-rendered browser (progress bars, smooth scrolling):
        // the views are checked at rest, and our webviews follow the same preference (prefers-reduced-motion).
        'workbench.reduceMotion': 'on',
        // VS Code's own TypeScript service would type-check the opened samples in the background (a core for many
        // seconds per test); nothing here reads its results (our CodeLens and views come from agl's LSP and daemon):
        // its syntax-only server still colours and outlines the agents' code.
        'typescript.tsserver.useSyntaxServer': 'always',
        'git.openRepositoryInParentFolders': 'never',
        ...settings,
      },
      null,
      2,
    ),
  );
  const dataDir = opts.dataDir ?? dirs['agl-data']!;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TMPDIR: dirs.tmp,
    XDG_CONFIG_HOME: dirs['xdg-config'],
    XDG_DATA_HOME: dirs['xdg-data'],
    AGL_DATA_DIR: dataDir,
  };
  delete env.NODE_OPTIONS; // the test runner's tsx loader must not leak into VS Code's processes
  const common = ['--user-data-dir', dirs.user!, '--extensions-dir', dirs.extensions!];
  const install = spawnSync(CODE_SERVER, [...common, '--install-extension', vsix], { env, encoding: 'utf8' });
  if (install.status !== 0 || !/successfully installed/i.test(install.stdout + install.stderr)) {
    throw new Error(`code-server --install-extension failed (${install.status}): ${install.stdout}\n${install.stderr}`);
  }
  const port = await freePort();
  let output = '';
  const child: ChildProcess = spawn(
    CODE_SERVER,
    [
      '--bind-addr',
      `127.0.0.1:${port}`,
      '--auth',
      'none',
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      '--disable-getting-started-override',
      ...common,
    ],
    { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  ); // detached = setsid: its own process group
  child.stdout!.on('data', (c) => {
    output += c;
  });
  child.stderr!.on('data', (c) => {
    output += c;
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`code-server exited (${child.exitCode}): ${output}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      /* not yet */
    }
    if (Date.now() > deadline) throw new Error(`code-server did not answer /healthz within 60 s: ${output}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    url,
    scratch,
    dataDir,
    log: () => output,
    stop: async () => {
      // The daemon the extension started is in code-server's process group, but stop it by pid too.
      const daemonPid = readDaemonPid(dataDir);
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        /* already gone */
      }
      await new Promise((r) => setTimeout(r, 1500));
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
      if (daemonPid) {
        try {
          process.kill(daemonPid, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
      // Wait until the whole group is gone: a process still exiting could write into the folder we remove.
      const gone = () => {
        try {
          process.kill(-child.pid!, 0);
          return false;
        } catch {
          return true;
        }
      };
      for (let i = 0; i < 50 && !gone(); i++) await new Promise((r) => setTimeout(r, 100));
      // The logs worth keeping were printed on failure; the rest (user data, extension copy, store) goes.
      rmSync(scratch, { recursive: true, force: true, maxRetries: 3 });
    },
  };
}

function readDaemonPid(dataDir: string): number | null {
  try {
    return (JSON.parse(readFileSync(join(dataDir, 'daemon.json'), 'utf8')) as { pid: number | null }).pid;
  } catch {
    return null;
  }
}

/** Headless chromium; playwright gives it a fresh temporary profile (it refuses --user-data-dir with launch). */
export async function launchBrowser(): Promise<Browser> {
  // Reduced motion as VS Code's own setting above asks (workbench.reduceMotion): nothing animates while nobody looks.
  return launchChromium({ args: ['--force-prefers-reduced-motion'] });
}

/** Waits until the status bar says the extension's daemon is ready. */
export async function waitReady(page: Page, timeout = 30_000): Promise<void> {
  await page.locator('.statusbar-item', { hasText: 'Agent Lightning: ready' }).waitFor({ state: 'visible', timeout });
}

/** One real VS Code session of an e2e test (inWorkbench). */
export interface Workbench {
  server: CodeServer;
  page: Page;
  /** Saves test-results/e2e/<shots>-<name>.png. */
  shot: (name: string) => Promise<void>;
  /** Notes the seconds since the test began under `name` (printed at the end). */
  mark: (name: string) => void;
}

export interface WorkbenchOptions {
  /** The screenshots' name prefix. */
  shots: string;
  /** The folder VS Code opens; absent: the body opens one (`${server.url}/?folder=...`), and waits for the daemon itself. */
  folder?: string;
  /** Settings over { 'agentLightning.daemon.port': 0 } (a free port for the daemon the extension starts). */
  settings?: Record<string, unknown>;
  /** The daemon's data dir (a store made beforehand; the caller removes it), else a fresh one. */
  dataDir?: string;
  viewport?: { width: number; height: number };
  /** How long the daemon may take to be ready (default 120 s); null: the body waits itself. */
  readyTimeout?: number | null;
  /** The test's clock when work came before VS Code opened (beginE2e()), else one starts here. */
  clock?: ReturnType<typeof beginE2e>;
}

/**
 * Runs `body` in real VS Code: code-server with the packaged extension and the settings, a headless Chromium page on
 * the folder, once the extension's daemon is ready. On a failure it saves `<shots>-failure.png` and prints code-server's
 * log and the extension's; the browser and code-server stop either way, and the timings marked are printed.
 */
export async function inWorkbench(o: WorkbenchOptions, body: (w: Workbench) => Promise<void>): Promise<void> {
  const { timings, mark } = o.clock ?? beginE2e();
  const server = await startCodeServer(packagedVsix(), { 'agentLightning.daemon.port': 0, ...o.settings }, { dataDir: o.dataDir });
  let browser: Browser | null = null;
  let page: Page | null = null;
  const shot = async (name: string) => {
    await page?.screenshot({ path: join(SHOTS, `${o.shots}-${name}.png`) });
  };
  try {
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: o.viewport ?? { width: 1400, height: 900 } });
    if (o.folder !== undefined) await page.goto(`${server.url}/?folder=${encodeURIComponent(o.folder)}`);
    if (o.folder !== undefined && o.readyTimeout !== null) {
      await waitReady(page, o.readyTimeout ?? 120_000);
      mark('daemon ready');
    }
    await body({ server, page, shot, mark });
  } catch (err) {
    await shot('failure').catch(() => undefined);
    console.error(`code-server log:\n${server.log().slice(-4000)}\n${extensionLogs(server.scratch)}`);
    throw err;
  } finally {
    await browser?.close().catch(() => undefined);
    await server.stop();
    console.log(`e2e timings (s since start): ${JSON.stringify(timings)}`);
  }
}

/** Moves the keyboard focus out of any webview into the workbench: a click on the side bar's title (or the status bar's). */
async function focusWorkbench(page: Page): Promise<void> {
  const title = page.locator('.part.sidebar .composite.title .title-label').first();
  if (await title.isVisible().catch(() => false)) await title.click({ timeout: 5_000 }).catch(() => undefined);
  else
    await page
      .locator('.part.statusbar')
      .click({ position: { x: 400, y: 5 }, timeout: 5_000 })
      .catch(() => undefined);
}

/**
 * Opens a quick input with `key` (F1 the palette, Control+P Quick Open, Control+G Go to Line) and types `text` into
 * it. It closes when something takes the focus as it opens (a view or webview coming up, a tab just clicked): then the
 * workbench gets the focus and it is opened again.
 */
async function typeInQuickInput(page: Page, key: string, text: string): Promise<Locator> {
  const input = page.locator('.quick-input-widget .quick-input-box input');
  for (let tries = 1; ; tries++) {
    await page.keyboard.press(key);
    try {
      await input.waitFor({ state: 'visible', timeout: 10_000 });
      await input.fill(text, { timeout: 5_000 });
      return input;
    } catch (e) {
      if (tries === 3) throw e;
      // The key went to a webview that holds the focus (a dashboard just opened), or the input lost it.
      await focusWorkbench(page);
    }
  }
}

/** Runs a command from the palette by its exact label. */
export async function runCommand(page: Page, label: string): Promise<void> {
  await typeInQuickInput(page, 'F1', `>${label}`);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: label }).first().waitFor({ state: 'visible' });
  await page.keyboard.press('Enter');
}

/** Picks the quick pick item whose text contains `text` (after filtering by it), optionally checking the title. */
export async function pickItem(page: Page, text: string, title?: RegExp, timeout = 30_000): Promise<void> {
  const widget = page.locator('.quick-input-widget');
  await widget.waitFor({ state: 'visible', timeout });
  if (title) await page.locator('.quick-input-widget .quick-input-title', { hasText: title }).waitFor({ state: 'visible', timeout });
  await page.locator('.quick-input-list .monaco-list-row', { hasText: text }).first().waitFor({ state: 'visible', timeout });
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.fill(text);
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: text }).first();
  await row.waitFor({ state: 'visible', timeout });
  await row.click();
}

/** Opens a file by (part of) its workspace path with Quick Open. */
export async function openFile(page: Page, relPath: string): Promise<void> {
  await typeInQuickInput(page, 'Control+P', relPath);
  const parts = relPath.split('/');
  const name = parts.pop()!;
  // The row of this file (its folder is in the row's description): Enter could still pick a recently opened file of
  // the same name before the list follows the typed filter.
  const row = page
    .locator('.quick-input-list .monaco-list-row', { hasText: name })
    .filter({ hasText: parts.at(-1) ?? '' })
    .first();
  await row.waitFor({ state: 'visible' });
  await row.click();
  await page.locator('.tab.active', { hasText: name }).waitFor({ state: 'visible' });
}

/** Scrolls the active editor to `line` (1-based) with Go to Line, so its CodeLens is rendered in view. */
export async function gotoLine(page: Page, line: number): Promise<void> {
  const input = await typeInQuickInput(page, 'Control+G', `:${line}`);
  await page.keyboard.press('Enter');
  await input.waitFor({ state: 'hidden' });
}

/** The content frame of the visible webview panel titled `title`. */
export function webview(page: Page): FrameLocator {
  return page.frameLocator('iframe.webview.ready >> visible=true').frameLocator('#active-frame');
}

/**
 * The content frame of the open webview whose page shows `selector`, when several are open side by side
 * (the dashboard and the trajectory viewer beside it); waits until one does.
 */
export async function webviewWith(page: Page, selector: string, timeout = 30_000): Promise<FrameLocator> {
  const frames = page.frameLocator('iframe.webview.ready');
  const deadline = Date.now() + timeout;
  for (;;) {
    const n = await page.locator('iframe.webview.ready').count();
    for (let i = 0; i < n; i++) {
      const content = frames.nth(i).frameLocator('#active-frame');
      if ((await content.locator(selector).count()) > 0) return content;
    }
    if (Date.now() > deadline) throw new Error(`no webview shows ${selector} within ${timeout / 1000} s (${n} open)`);
    await page.waitForTimeout(200);
  }
}

type Box = { x: number; y: number; width: number; height: number };

/**
 * The boxes of `locators`, read together once every one is visible and none moved since the previous read
 * (250 ms apart). An editor that is still being analysed re-renders its lines: a line can be detached or hidden
 * for a moment (boundingBox() is then null), and CodeLenses arriving push lines down.
 */
export async function settledBoxes(page: Page, locators: Locator[], timeout = 30_000): Promise<Box[]> {
  const deadline = Date.now() + timeout;
  let previous: (Box | null)[] = [];
  for (;;) {
    const boxes = await Promise.all(locators.map((l) => l.boundingBox({ timeout: 1_000 }).catch(() => null)));
    const settled = boxes.every((b, i) => b && previous[i] && b.x === previous[i]!.x && b.y === previous[i]!.y && b.height === previous[i]!.height);
    if (settled) return boxes as Box[];
    if (Date.now() > deadline) throw new Error(`elements did not settle within ${timeout / 1000} s: ${JSON.stringify(boxes)}`);
    previous = boxes;
    await page.waitForTimeout(250);
  }
}

export type { Browser, Frame, FrameLocator, Locator, Page };

/** What in `selector` sticks out past the right edge of its webview (cut off), as "tag.class" names. */
export function cutOff(frame: FrameLocator, selector: string): Promise<string[]> {
  return frame
    .locator(selector)
    .first()
    .evaluate((root) => {
      const right = document.documentElement.clientWidth;
      return [root, ...root.querySelectorAll('*')]
        .filter((e) => e.getBoundingClientRect().right > right + 1)
        .map((e) => `${e.tagName.toLowerCase()}${[...e.classList].map((c) => `.${c}`).join('')}`);
    });
}
