/**
 * Where the runner's companion files are: the JS worker entry, the Python helper, the tsx loader.
 * Works from the TypeScript sources (run through tsx, as CommonJS or ESM) and from an ESM bundle.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

function moduleDir(): string {
  if (typeof __dirname === 'string') return __dirname;
  return dirname(fileURLToPath(import.meta.url));
}

const here = moduleDir();
const fromSources = here.endsWith(join('daemon', 'runner'));

/** The worker entry for TS/JS agents (sources: worker-js.ts; bundle: worker-js.mjs beside it). */
export const JS_WORKER_ENTRY = fromSources ? join(here, 'worker-js.ts') : join(here, 'worker-js.mjs');
/** The standard-library-only Python helper. */
export const PY_RUNNER = fromSources ? join(here, '..', '..', 'sdk', 'python', 'agl_runner.py') : join(here, 'python', 'agl_runner.py');

/** file:// URL of tsx's loader, for `node --import` (agents in TypeScript). */
export function tsxLoaderUrl(): string {
  return pathToFileURL(
    createRequire(join(here, 'noop.js'))
      .resolve('tsx')
      .replace(/loader\.cjs$/, 'loader.mjs'),
  ).href;
}
