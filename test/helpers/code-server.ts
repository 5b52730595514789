/**
 * code-server (real VS Code in a browser) for the end-to-end test, installed from the npm registry into the
 * test cache (~/.cache/agl-e2e, or AGL_E2E_HOME) outside the project's dependencies, without root and without
 * downloads from anywhere else. scripts/run-tests.mjs calls ensureCodeServer() before test/e2e; when it is
 * there already this costs one stat.
 * code-server's own postinstall runs `npm install` in lib/vscode, where two packages cannot install offline:
 * kerberos (proxy authentication only; builds against the system's Kerberos headers) and @vscode/ripgrep
 * (downloads rg from GitHub). So the install runs without scripts, then builds exactly the native modules VS Code
 * needs on this platform, and hands @vscode/ripgrep the rg that the npm package @vscode/ripgrep-<platform>
 * ships inside its tarball. See test/e2e/README.md.
 */
import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clearStaleStages, E2E_HOME } from './browser.js';

/** The newest code-server that installs on Node 20 (VS Code 1.100.3). */
export const CODE_SERVER_VERSION = '4.100.3';
const RIPGREP_VERSION = '1.18.0';
const DIR = join(E2E_HOME, `code-server-${CODE_SERVER_VERSION}`);
export const CODE_SERVER = join(DIR, 'node_modules', '.bin', 'code-server');
const READY = join(DIR, '.agl-ready');
/** Native modules of VS Code's server that need a build here (the Windows-only ones and kerberos are left out). */
const NATIVE = ['@parcel/watcher', '@vscode/deviceid', '@vscode/spdlog', 'native-watchdog', 'node-pty'];

export function codeServerReady(): boolean {
  return existsSync(READY) && existsSync(CODE_SERVER);
}

function run(cmd: string, args: string[], opts: SpawnSyncOptions & { cwd: string }): void {
  const r = spawnSync(cmd, args, { ...opts, encoding: 'utf8' });
  if (r.status !== 0) {
    throw new Error(
      `test setup: \`${cmd} ${args.join(' ')}\` in ${opts.cwd} failed (${r.status ?? r.signal}):\n${String(r.stdout).slice(-3000)}\n${String(r.stderr).slice(-3000)}`,
    );
  }
}

/** Installs code-server into the cache unless it is there; returns the path of its launcher. */
export function ensureCodeServer(log: (line: string) => void = () => {}): string {
  if (codeServerReady()) return CODE_SERVER;
  log(`test setup: installing code-server ${CODE_SERVER_VERSION} from npm into ${DIR} (once, 1-3 min, ~330 MB)`);
  clearStaleStages(DIR);
  const stage = `${DIR}.tmp-${process.pid}`;
  try {
    install(stage);
  } catch (e) {
    rmSync(stage, { recursive: true, force: true });
    throw e;
  }
  rmSync(DIR, { recursive: true, force: true });
  renameSync(stage, DIR);
  return CODE_SERVER;
}

function install(stage: string): void {
  const rg = `@vscode/ripgrep-${process.platform}-${process.arch}`;
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(join(stage, 'tmp'), { recursive: true });
  writeFileSync(join(stage, 'package.json'), '{"name":"agl-e2e-code-server","private":true}\n');
  const major = process.versions.node.split('.')[0]!;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TMPDIR: join(stage, 'tmp'),
    npm_config_yes: 'true', // node-pty's build runs `npx node-gyp`
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    // code-server's postinstall checks Node's major version from npm's user agent; 4.100 is built for Node 20.
    npm_config_user_agent: `npm node/v${process.versions.node} ${process.platform} ${process.arch}`,
    ...(major !== '20' ? { FORCE_NODE_VERSION: major } : {}),
  };
  delete env.NODE_OPTIONS;
  // 1. code-server and the platform's ripgrep package, no scripts (code-server's postinstall runs below).
  run('npm', ['install', '--no-save', '--ignore-scripts', `code-server@${CODE_SERVER_VERSION}`, `${rg}@${RIPGREP_VERSION}`], { cwd: stage, env });
  // 2. code-server's postinstall (VS Code's dependencies, its extensions' dependencies, links), scripts off inside.
  const pkg = join(stage, 'node_modules', 'code-server');
  // (As root it insists on npm's old unsafe-perm flag, which npm 11 no longer reads.)
  run('sh', ['./postinstall.sh'], { cwd: pkg, env: { ...env, npm_config_ignore_scripts: 'true', npm_config_unsafe_perm: 'true' } });
  // 3. The native modules: argon2 (code-server loads it at start) and VS Code's server modules.
  run('npm', ['rebuild', 'argon2'], { cwd: stage, env });
  const vscode = join(pkg, 'lib', 'vscode');
  run('npm', ['rebuild', ...NATIVE], { cwd: vscode, env });
  // 4. rg where @vscode/ripgrep's download would have put it.
  const exe = process.platform === 'win32' ? 'rg.exe' : 'rg';
  mkdirSync(join(vscode, 'node_modules', '@vscode', 'ripgrep', 'bin'), { recursive: true });
  const rgBin = join(vscode, 'node_modules', '@vscode', 'ripgrep', 'bin', exe);
  copyFileSync(join(stage, 'node_modules', ...rg.split('/'), 'bin', exe), rgBin);
  chmodSync(rgBin, 0o755);
  rmSync(join(stage, 'tmp'), { recursive: true, force: true });
  writeFileSync(join(stage, '.agl-ready'), `${CODE_SERVER_VERSION}\n`);
}
