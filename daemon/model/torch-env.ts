/**
 * Where the PyTorch engine's Python comes from, and how to make one: `agl engine install torch` (and `npm test`)
 * create a virtual environment and install engines/torch/requirements.txt (pinned) into it; the engine's own
 * package (engines/torch/agl_torch) is put on PYTHONPATH when the daemon starts it, never installed.
 * Which Python runs the engine: --python / `engine.python`, else AGL_PYTHON, else the venv that
 * `agl engine install torch` made, one per user in the user's cache (so every data dir, the editor's daemon and
 * the benches find it), else a venv an older agl made beside a data dir (<data dir>/torch-venv, this one's or
 * the default one's), else `python3` on the PATH.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DATA_DIR_ENV, DEFAULT_DATA_DIR_NAME } from '../../protocol/daemon-state.js';

function moduleDir(): string {
  if (typeof __dirname === 'string') return __dirname;
  return dirname(fileURLToPath(import.meta.url));
}
const here = moduleDir();
const fromSources = here.endsWith(join('daemon', 'model'));

/** The folder holding agl_torch/ and requirements.txt (sources: engines/torch; bundle: dist/engines/torch). */
export const TORCH_ENGINE_DIR = fromSources ? join(here, '..', '..', 'engines', 'torch') : join(here, 'engines', 'torch');
export const TORCH_REQUIREMENTS = join(TORCH_ENGINE_DIR, 'requirements.txt');
export const MIN_PYTHON: [number, number] = [3, 10];

/** The user's cache folder: XDG_CACHE_HOME (else ~/.cache), ~/Library/Caches on macOS, %LOCALAPPDATA% on Windows. */
export function userCacheDir(): string {
  if (process.platform === 'win32') return process.env.LOCALAPPDATA || join(homedir(), 'AppData', 'Local');
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Caches');
  return process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
}

/** The venv `agl engine install torch` makes by default: one per user, whatever data dir a daemon keeps. */
export function defaultTorchVenv(): string {
  return join(userCacheDir(), 'agent-lightning', 'torch-venv');
}

/** Where agl made the venv before it was per user: beside a data dir (this one's, then the default one's). */
function olderTorchVenvs(dataDir?: string): string[] {
  const dirs = [dataDir, process.env[DATA_DIR_ENV], join(homedir(), DEFAULT_DATA_DIR_NAME)].filter((d): d is string => !!d);
  return [...new Set(dirs.map((d) => join(resolve(d), 'torch-venv')))];
}

export function venvPython(venv: string): string {
  return process.platform === 'win32' ? join(venv, 'Scripts', 'python.exe') : join(venv, 'bin', 'python');
}

export interface TorchPythonChoice {
  python: string;
  /** Why this one, in words. */
  source: string;
  /** Which data dirs this choice holds for (an older venv serves only the data dir it sits in). */
  scope: 'every data dir' | 'this data dir only' | 'every data dir without a venv of its own';
}

/** The Python that runs the engine for a daemon keeping `dataDir`, and why that one. */
export function resolveTorchPython(explicit?: string | null, dataDir?: string): TorchPythonChoice {
  if (explicit) return { python: explicit, source: '--python / engine.python', scope: 'every data dir' };
  if (process.env.AGL_PYTHON) return { python: process.env.AGL_PYTHON, source: 'AGL_PYTHON', scope: 'every data dir' };
  const own = venvPython(defaultTorchVenv());
  if (existsSync(own)) return { python: own, source: 'the venv of agl engine install', scope: 'every data dir' };
  for (const venv of olderTorchVenvs(dataDir)) {
    if (!existsSync(venvPython(venv))) continue;
    const source = `a venv an older agl engine install made in ${dirname(venv)}; \`agl engine install torch\` makes one for every data dir`;
    return { python: venvPython(venv), source, scope: 'this data dir only' };
  }
  return { python: 'python3', source: 'python3 on the PATH', scope: 'every data dir without a venv of its own' };
}

export const INSTALL_HINT =
  'run `agl engine install torch` (a venv with engines/torch/requirements.txt, ~1.5 GB on a CPU machine), ' +
  'or point AGL_PYTHON (or --python) at a Python 3.10+ where `pip install -r engines/torch/requirements.txt` was run';

/** The Python version of `python`, or an error that says what to install. */
export function checkPython(python: string): { version: string } {
  const r = spawnSync(python, ['-c', 'import sys, venv; print("%d.%d.%d" % sys.version_info[:3])'], { encoding: 'utf8' });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') {
    throw new Error(
      `Python was not found (\`${python}\`): install Python ${MIN_PYTHON.join('.')}+ with its venv module ` +
        '(Debian/Ubuntu: apt-get install python3 python3-venv; macOS: brew install python) or name one with --python',
    );
  }
  if (r.status !== 0) {
    throw new Error(
      `\`${python}\` cannot make virtual environments (${(r.stderr || String(r.error ?? '')).trim().split('\n').pop()}): ` +
        'install its venv module (Debian/Ubuntu: apt-get install python3-venv) or name another Python with --python',
    );
  }
  const version = r.stdout.trim();
  const [maj, min] = version.split('.').map(Number);
  if (maj < MIN_PYTHON[0] || (maj === MIN_PYTHON[0] && min < MIN_PYTHON[1])) {
    throw new Error(`\`${python}\` is Python ${version}; the torch engine needs ${MIN_PYTHON.join('.')}+ (name a newer one with --python)`);
  }
  return { version };
}

/** A short hash of the pinned requirements: a venv made from other pins is made again. */
export function requirementsHash(): string {
  return createHash('sha256').update(readFileSync(TORCH_REQUIREMENTS)).digest('hex').slice(0, 12);
}

const READY = '.agl-ready';

export function torchEnvReady(venv: string): boolean {
  try {
    return readFileSync(join(venv, READY), 'utf8').trim() === requirementsHash() && existsSync(venvPython(venv));
  } catch {
    return false;
  }
}

/**
 * Makes `venv` (unless it is ready with these pins): `python -m venv`, then pip installs the pinned
 * requirements, printing pip's progress through `log`. Built beside and renamed into place, so an interrupted
 * install never leaves a venv that looks ready. Returns the venv's Python.
 */
export async function installTorchEnv(venv: string, o: { python?: string; log?: (line: string) => void; force?: boolean } = {}): Promise<string> {
  const log = o.log ?? (() => {});
  if (!o.force && torchEnvReady(venv)) return venvPython(venv);
  const base = o.python ?? 'python3';
  const { version } = checkPython(base);
  const stage = `${venv}.tmp-${process.pid}`;
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(dirname(venv), { recursive: true });
  log(`creating a Python ${version} venv in ${venv}`);
  await runLogged(base, ['-m', 'venv', stage], log);
  const py = venvPython(stage);
  log(`installing ${TORCH_REQUIREMENTS} (torch, transformers, trl, peft; pinned)`);
  await runLogged(py, ['-m', 'pip', 'install', '--disable-pip-version-check', '--progress-bar', 'off', '-r', TORCH_REQUIREMENTS], log);
  writeFileSync(join(stage, READY), `${requirementsHash()}\n`);
  rmSync(venv, { recursive: true, force: true });
  renameSync(stage, venv);
  // A venv's scripts name their folder; the interpreter itself is found by path, so the rename is safe for `python -m`.
  return venvPython(venv);
}

function runLogged(cmd: string, args: string[], log: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const tail: string[] = [];
    const onData = (buf: Buffer) => {
      for (const line of buf.toString('utf8').split('\n')) {
        if (!line.trim() || /is ignored: it is neither a file nor a directory/.test(line)) continue;
        tail.push(line);
        if (tail.length > 30) tail.shift();
        log(line);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', (e) => reject(new Error(`${cmd}: ${e.message}`)));
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`\`${cmd} ${args.join(' ')}\` failed (exit ${code}):\n${tail.join('\n')}`))));
  });
}

/** `python -m agl_torch doctor`: versions, devices and distributed backends of the engine's Python (for agl doctor). */
export function torchDoctor(python: string): Record<string, unknown> & { error?: string } {
  const r = spawnSync(python, ['-m', 'agl_torch', 'doctor'], { encoding: 'utf8', env: engineEnv(), timeout: 120_000 });
  if (r.error) return { error: (r.error as NodeJS.ErrnoException).code === 'ENOENT' ? `Python not found (\`${python}\`)` : r.error.message };
  const line = r.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return { error: (r.stderr || r.stdout).trim().split('\n').slice(-3).join(' ') || `exit ${r.status}` };
  }
}

/** The environment an engine process runs in: our package on PYTHONPATH, transformers quiet about the hub. */
export function engineEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const path = [TORCH_ENGINE_DIR, process.env.PYTHONPATH].filter(Boolean).join(process.platform === 'win32' ? ';' : ':');
  return {
    ...process.env,
    PYTHONPATH: path,
    PYTHONUNBUFFERED: '1',
    HF_HUB_OFFLINE: process.env.HF_HUB_OFFLINE ?? '1',
    TRANSFORMERS_NO_ADVISORY_WARNINGS: '1',
    TOKENIZERS_PARALLELISM: 'false',
    ...extra,
  };
}
