#!/usr/bin/env node
// One of `npm test`'s set-up steps in a process of its own, so that scripts/run-tests.mjs can make several at once
// (code-server's install, Chromium's unpacking and the torch venv take minutes each on a fresh machine, and their
// helpers block while they work) and run the test files that need none of them meanwhile:
//   node scripts/test-setup.mjs code-server|chromium|torch
// Progress lines go to stdout as they come; the last line is `result <JSON>`: the environment the tests get from it.
// A failure prints its reason on stderr and exits 1.
import { tsImport } from 'tsx/esm/api';

const helper = (name) => tsImport(`../test/helpers/${name}.ts`, import.meta.url);
const log = (line) => console.log(line);

const STEPS = {
  'code-server': async () => {
    (await helper('code-server')).ensureCodeServer(log);
    return {};
  },
  chromium: async () => {
    const found = (await helper('browser')).ensureChromium(log);
    log(`test setup: chromium (${found.source}) ${found.path}`);
    return {};
  },
  torch: async () => {
    const python = await (await helper('torch')).ensureTorchPython(log);
    log(`test setup: the torch engine runs on ${python}`);
    return { AGL_PYTHON: python };
  },
};

const name = process.argv[2];
if (!Object.hasOwn(STEPS, name)) {
  console.error(`test-setup: no step '${name}': one of ${Object.keys(STEPS).join(', ')}`);
  process.exit(2);
}
try {
  console.log(`result ${JSON.stringify(await STEPS[name]())}`);
} catch (e) {
  console.error(e instanceof Error ? e.message : String(e));
  process.exit(1);
}
