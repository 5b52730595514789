#!/usr/bin/env node
// The `agl` command. From a checkout it runs the TypeScript sources through tsx; from a packaged
// install (no sources) it runs the esbuild bundle in dist/.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const src = fileURLToPath(new URL('../daemon/cli.ts', import.meta.url));
const bundle = fileURLToPath(new URL('../dist/agl.mjs', import.meta.url));
if (existsSync(src)) {
  // The package has no "type": "module", so tsx loads our .ts files as CommonJS: both hooks are needed.
  (await import('tsx/esm/api')).register();
  (await import('tsx/cjs/api')).register();
  await import(pathToFileURL(src).href);
} else {
  await import(pathToFileURL(bundle).href);
}
