#!/usr/bin/env node
// Runs every test file (test/**/*.test.ts, samples/**/*.test.ts) with node's test runner, TypeScript
// loaded through tsx. `npm test -- store` runs only files whose path contains "store".
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const roots = ['test', 'samples'];
const files = [];
function walk(dir) {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name.startsWith('.')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (/\.test\.(ts|mts|js|mjs)$/.test(name)) files.push(relative(root, p));
  }
}
for (const r of roots) { try { walk(join(root, r)); } catch { /* folder may not exist yet */ } }
const filters = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const selected = files.sort().filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)));
if (selected.length === 0) {
  console.error(`no test files matched ${filters.join(' ') || '(all)'}`);
  process.exit(1);
}
const extra = process.argv.slice(2).filter((a) => a.startsWith('-'));
const res = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...extra, ...selected], {
  cwd: root, stdio: 'inherit', env: { ...process.env, AGL_TEST: '1' },
});
process.exit(res.status ?? 1);
