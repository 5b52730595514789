/**
 * The Chromium the browser tests drive through playwright-core (test/webview, test/e2e), found or fetched
 * without root. First found wins:
 *   1. AGL_CHROMIUM (a path to a Chromium/Chrome executable);
 *   2. a system one: Debian's /usr/bin/chromium, chromium-browser, google-chrome, or Chrome on macOS;
 *   3. on Linux x64, the headless Chromium that the npm package @sparticuz/chromium ships inside its tarball
 *      (brotli-compressed, with the NSS libraries it links against), unpacked once into the test cache
 *      (~/.cache/agl-e2e, or AGL_E2E_HOME) by ensureChromium(), which scripts/run-tests.mjs calls before
 *      the browser tests. Nothing is downloaded from anywhere but the npm registry.
 * Anything else is an error naming what to install: the tests never skip.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { brotliDecompressSync } from 'node:zlib';
import { chromium, type Browser, type LaunchOptions } from 'playwright-core';

export const E2E_HOME = process.env.AGL_E2E_HOME || join(homedir(), '.cache', 'agl-e2e');
/** The npm Chromium: @sparticuz/chromium 143.0.4 is the newest whose engines allow Node 20. */
export const NPM_CHROMIUM_VERSION = '143.0.4';
const NPM_DIR = join(E2E_HOME, `chromium-${NPM_CHROMIUM_VERSION}`);

const SYSTEM_CANDIDATES = [
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome',
  '/usr/bin/google-chrome-stable',
  '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome',
  '/Applications/Chromium.app/Contents/MacOS/Chromium',
];

export interface FoundChromium {
  path: string;
  /** 'env' (AGL_CHROMIUM), 'system' or 'npm'. */
  source: 'env' | 'system' | 'npm';
  /** Extra environment for the browser process (the bundled libraries of the npm build). */
  env: Record<string, string>;
}

function npmChromium(): FoundChromium | null {
  const path = join(NPM_DIR, 'chromium');
  if (!existsSync(path)) return null;
  // Under the C/POSIX locale (C.UTF-8, or none set) this build reports navigator.language 'en-US@posix', which
  // Intl rejects (Debian's chromium says 'en-US'): give it the language Chromium would have picked.
  const locale = process.env.LC_ALL || process.env.LC_MESSAGES || process.env.LANG || '';
  const lang: Record<string, string> = /^(C|POSIX)?([.@].*)?$/.test(locale) ? { LANG: 'en_US.UTF-8', LC_ALL: 'en_US.UTF-8' } : {};
  return { path, source: 'npm', env: { ...lang, LD_LIBRARY_PATH: [join(NPM_DIR, 'lib'), process.env.LD_LIBRARY_PATH].filter(Boolean).join(':') } };
}

/** The Chromium to use, or null when there is none yet (ensureChromium can then fetch one). */
export function findChromium(): FoundChromium | null {
  const fromEnv = process.env.AGL_CHROMIUM;
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new Error(`AGL_CHROMIUM=${fromEnv} does not exist`);
    return { path: fromEnv, source: 'env', env: {} };
  }
  if (process.env.AGL_TEST_BROWSER !== 'npm') {
    const system = SYSTEM_CANDIDATES.find((p) => existsSync(p));
    if (system) return { path: system, source: 'system', env: {} };
  }
  return npmChromium();
}

export const NO_CHROMIUM =
  'the browser tests need Chromium: none found (AGL_CHROMIUM, /usr/bin/chromium, Chrome), and the npm ' +
  `build (@sparticuz/chromium) exists only for Linux x64. Install one (Debian/Ubuntu: \`apt-get install chromium\`; ` +
  'macOS: Google Chrome) or point AGL_CHROMIUM at it.';

/** Removes `<dir>.tmp-<pid>` staging folders of installs whose process is gone (an interrupted run). */
export function clearStaleStages(dir: string): void {
  const prefix = `${basename(dir)}.tmp-`;
  let names: string[];
  try {
    names = readdirSync(dirname(dir));
  } catch {
    return;
  }
  for (const name of names.filter((n) => n.startsWith(prefix))) {
    const pid = Number(name.slice(prefix.length));
    let alive = false;
    try {
      process.kill(pid, 0);
      alive = true;
    } catch {
      /* gone */
    }
    if (!alive) rmSync(join(dirname(dir), name), { recursive: true, force: true });
  }
}

/** findChromium(), else (Linux x64) installs @sparticuz/chromium from the npm registry into the cache and unpacks it. */
export function ensureChromium(log: (line: string) => void = () => {}): FoundChromium {
  const found = findChromium();
  if (found) return found;
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error(NO_CHROMIUM);
  log(`test setup: unpacking Chromium from npm @sparticuz/chromium@${NPM_CHROMIUM_VERSION} into ${NPM_DIR} (once, ~20 s, ~260 MB)`);
  clearStaleStages(NPM_DIR);
  const stage = `${NPM_DIR}.tmp-${process.pid}`;
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(join(stage, 'pkg'), { recursive: true });
  writeFileSync(join(stage, 'pkg', 'package.json'), '{"name":"agl-test-chromium","private":true}\n');
  const npm = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--no-save', '--ignore-scripts', `@sparticuz/chromium@${NPM_CHROMIUM_VERSION}`], {
    cwd: join(stage, 'pkg'),
    encoding: 'utf8',
  });
  if (npm.status !== 0) throw new Error(`npm install @sparticuz/chromium failed (${npm.status}): ${npm.stderr || npm.error}\n${NO_CHROMIUM}`);
  const bin = join(stage, 'pkg', 'node_modules', '@sparticuz', 'chromium', 'bin');
  writeFileSync(join(stage, 'chromium'), brotliDecompressSync(readFileSync(join(bin, 'chromium.br'))), { mode: 0o755 });
  // al2023.tar: the NSS/NSPR/expat libraries the binary links against, for machines without them.
  writeFileSync(join(stage, 'libs.tar'), brotliDecompressSync(readFileSync(join(bin, 'al2023.tar.br'))));
  const tar = spawnSync('tar', ['-xf', 'libs.tar'], { cwd: stage, encoding: 'utf8' });
  if (tar.status !== 0) throw new Error(`unpacking the Chromium libraries failed: ${tar.stderr || tar.error}`);
  rmSync(join(stage, 'libs.tar'));
  rmSync(join(stage, 'pkg'), { recursive: true, force: true });
  rmSync(NPM_DIR, { recursive: true, force: true });
  renameSync(stage, NPM_DIR);
  return npmChromium()!;
}

/** Flags for a headless Chromium on a machine whose network is closed (no background connections). */
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Launches the found Chromium headless; playwright gives it a fresh temporary profile. */
export async function launchChromium(options: LaunchOptions = {}): Promise<Browser> {
  const found = findChromium();
  if (!found) throw new Error(`${NO_CHROMIUM} (\`npm test\` unpacks the npm build before the browser tests)`);
  return chromium.launch({
    ...options,
    executablePath: found.path,
    headless: true,
    args: [...ARGS, ...(options.args ?? [])],
    env: { ...process.env, ...found.env, ...options.env } as Record<string, string>,
  });
}
