/**
 * The torch engine's Python for tests: scripts/run-tests.mjs calls ensureTorchPython() before any test file that
 * imports this helper, which makes a venv with engines/torch/requirements.txt (pinned: torch 2.13.0, transformers,
 * trl, peft) in the test cache (~/.cache/agl-e2e/torch-venv-<hash of the pins>, or AGL_E2E_HOME) once, and hands
 * its Python to the tests as AGL_PYTHON, with engines/torch/requirements-dev.txt (ruff, mypy, pytest) added for the
 * tests of the engine's own Python (test/engine/python.test.ts). AGL_PYTHON already set: that Python is used and nothing is
 * installed.
 * Without a Python 3.10+ with venv the set-up fails, saying what to install.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { installTorchEnv, requirementsHash, TORCH_ENGINE_DIR, torchEnvReady, venvPython } from '../../daemon/model/torch-env.js';
import { clearStaleStages, E2E_HOME } from './browser.js';

export const TORCH_VENV = join(E2E_HOME, `torch-venv-${requirementsHash()}`);
const DEV_REQUIREMENTS = join(TORCH_ENGINE_DIR, 'requirements-dev.txt');
const DEV_READY = '.agl-dev-ready';

export async function ensureTorchPython(log: (line: string) => void = () => {}): Promise<string> {
  if (process.env.AGL_PYTHON) return process.env.AGL_PYTHON;
  const python = await ensureEngineEnv(log);
  ensureDevTools(python, log);
  return python;
}

async function ensureEngineEnv(log: (line: string) => void): Promise<string> {
  if (torchEnvReady(TORCH_VENV)) return venvPython(TORCH_VENV);
  log(`test setup: installing the torch engine's Python environment into ${TORCH_VENV} (once, 1-3 min, ~1.5 GB)`);
  clearStaleStages(TORCH_VENV);
  let last = 0;
  return installTorchEnv(TORCH_VENV, {
    python: process.env.AGL_PYTHON_BASE,
    log: (line) => {
      if (/^(Successfully|creating|installing)/.test(line) || Date.now() - last > 30_000) {
        last = Date.now();
        log(`  ${line}`);
      }
    },
  });
}

/** ruff, mypy and pytest (pinned in requirements-dev.txt) in the test venv, installed once per version of that file. */
function ensureDevTools(python: string, log: (line: string) => void): void {
  const want = createHash('sha256').update(readFileSync(DEV_REQUIREMENTS)).digest('hex').slice(0, 12);
  const marker = join(TORCH_VENV, DEV_READY);
  if (existsSync(marker) && readFileSync(marker, 'utf8').trim() === want) return;
  log(`test setup: adding ${DEV_REQUIREMENTS} (ruff, mypy, pytest) to ${TORCH_VENV}`);
  const r = spawnSync(python, ['-m', 'pip', 'install', '--disable-pip-version-check', '--progress-bar', 'off', '-r', DEV_REQUIREMENTS], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`test setup: pip could not install ${DEV_REQUIREMENTS}:\n${(r.stderr || r.stdout).slice(-3000)}`);
  writeFileSync(marker, `${want}\n`);
}

/** The Python the tests run the engine with (set by npm test). */
export function torchPython(): string {
  const p = process.env.AGL_PYTHON;
  if (!p) throw new Error("AGL_PYTHON is not set: run the tests through `npm test`, which makes the torch engine's Python environment");
  return p;
}

/** Runs `python <args>` with the engine's Python (stdin optional); returns stdout's last JSON line, or throws with stderr. */
export function runPython<T = unknown>(args: string[], input?: unknown, timeoutMs = 300_000): T {
  const r = spawnSync(torchPython(), args, {
    encoding: 'utf8',
    input: input === undefined ? undefined : JSON.stringify(input),
    timeout: timeoutMs,
    maxBuffer: 256 * 2 ** 20,
    env: { ...process.env, HF_HUB_OFFLINE: '1', TOKENIZERS_PARALLELISM: 'false', PYTHONPATH: join(process.cwd(), 'engines', 'torch') },
  });
  if (r.status !== 0) throw new Error(`python ${args.join(' ')} failed (${r.status ?? r.signal}):\n${(r.stderr ?? '').slice(-4000)}`);
  const line = r.stdout
    .trim()
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('{'));
  if (!line) throw new Error(`python ${args.join(' ')} printed no JSON:\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-2000)}`);
  return JSON.parse(line) as T;
}
