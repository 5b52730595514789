// How scripts/run-tests.mjs runs the selected test files: what each needs set up first (found in its text and in the
// test modules it imports), those set-up steps started at once (scripts/test-setup.mjs, PostgreSQL, the bundles), and
// the files two at a time: a heavy lane (real training, the torch engine, VS Code: files that keep a core busy for
// minutes) and a light lane (the rest), each lane taking a file from the other once its own has none ready, so both
// cores stay busy to the end. A file starts once the set-up steps it needs are done; its spec output is printed whole
// when it ends (never interleaved with the other lane's), and its TAP gives its counts.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';

/** Markers of the set-up steps a file needs in its text or in a test module it imports. */
const MARKERS = [
  ['helpers/postgres', 'postgres'],
  ['helpers/torch', 'torch'],
];

/** The text of `file` and of every module under test/ it imports, transitively (test helpers import one another). */
function testModuleTexts(root, file, seen = new Map()) {
  const abs = resolve(root, file);
  if (seen.has(abs) || !existsSync(abs)) return seen;
  const text = readFileSync(abs, 'utf8');
  seen.set(abs, text);
  for (const m of text.matchAll(/\bfrom\s+'(\.\.?\/[^']+)'|\bimport\(\s*'(\.\.?\/[^']+)'\s*\)/g)) {
    const target = relative(root, resolve(dirname(abs), (m[1] ?? m[2]).replace(/\.js$/, '.ts')));
    if (target.split('\\').join('/').startsWith('test/')) testModuleTexts(root, target, seen);
  }
  return seen;
}

/** What `file` needs before it runs (set-up step names), and whether it is heavy. */
export function describeFile(root, file, { e2eSelected }) {
  const path = file.split('\\').join('/');
  const needs = new Set();
  if (path.startsWith('test/e2e/')) for (const n of ['code-server', 'chromium', 'vsix']) needs.add(n);
  // The webview tests load dist/: the e2e set-up's production build when e2e files run too (one build, before either reads it).
  if (path.startsWith('test/webview/')) for (const n of ['chromium', e2eSelected ? 'vsix' : 'build']) needs.add(n);
  const texts = [...testModuleTexts(root, file).values()];
  for (const [marker, need] of MARKERS) if (texts.some((t) => t.includes(marker))) needs.add(need);
  // Heavy: the torch engine, VS Code, or `agl train` run as a child (real training: minutes of a core each).
  const heavy = needs.has('torch') || needs.has('code-server') || /\b(runAgl|startAgl)\(/.test(texts[0]);
  return { file, needs, heavy };
}

/** The child processes running now (set-up steps, test files), for stopAll(). */
const children = new Set();

/** Sends `signal` to every set-up step and test file still running (an interrupted run). */
export function stopAll(signal) {
  for (const child of children) child.kill(signal);
}

/** Runs `node <args>` in `root`; resolves with its exit code and output. `onLine` sees each stdout line as it comes. */
function node(root, args, { env = process.env, onLine = () => {} } = {}) {
  return new Promise((res) => {
    const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let out = '',
      err = '',
      partial = '';
    child.stdout.on('data', (d) => {
      out += d;
      const lines = (partial + d).split('\n');
      partial = lines.pop() ?? '';
      lines.forEach(onLine);
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    child.on('error', (e) => res({ code: 1, out, err: `${err}${e.message}` }));
    child.on('close', (code, signal) => {
      children.delete(child);
      res({ code: code ?? (signal ? 1 : 0), out, err });
    });
  });
}

/**
 * Starts the set-up steps `names` at once. Returns each step's promise of the environment it gives the tests
 * (AGL_PYTHON, AGL_E2E_VSIX, AGL_TEST_PG_URL), and `stop()` for what runs until the end (PostgreSQL).
 */
export function startSetup(root, names, log) {
  let pg = null;
  const steps = {
    'code-server': () => setupChild(root, 'code-server', log),
    chromium: () => setupChild(root, 'chromium', log),
    torch: () => setupChild(root, 'torch', log),
    // The e2e files share one .vsix, packaged here: its production build of dist/ is done before any test reads dist/
    // (the webview tests load those bundles too). And one screenshot folder, emptied here.
    vsix: async () => {
      const pack = await node(root, ['scripts/package-vsix.mjs']);
      if (pack.code !== 0) throw new Error(`npm run package failed:\n${pack.out}\n${pack.err}`);
      const { name, version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
      const vsix = join(root, `${name}-${version}.vsix`);
      rmSync(join(root, 'test-results', 'e2e'), { recursive: true, force: true });
      log(`test setup: packaged ${relative(root, vsix)}`);
      return { AGL_E2E_VSIX: vsix };
    },
    build: async () => {
      const build = await node(root, ['esbuild.mjs']);
      if (build.code !== 0) throw new Error(`npm run build failed:\n${build.out}\n${build.err}`);
      return {};
    },
    postgres: async () => {
      const { tsImport } = await import('tsx/esm/api');
      pg = await (await tsImport('../test/helpers/postgres.ts', import.meta.url)).startPostgres();
      log(`test setup: PostgreSQL (${pg.source}) at ${pg.adminUrl}, for this run`);
      return { AGL_TEST_PG_URL: pg.adminUrl };
    },
  };
  const running = new Map();
  for (const name of names) {
    const p = steps[name]().catch((e) => {
      throw new Error(`${name}: ${e instanceof Error ? e.message : e}`);
    });
    p.catch(() => {}); // awaited by the files that need it; a failure ends the run there
    running.set(name, p);
  }
  return { running, stop: async () => pg?.stop() };
}

/** A set-up step made by scripts/test-setup.mjs in a child process: its progress lines relayed, its result parsed. */
async function setupChild(root, name, log) {
  let result = null;
  const r = await node(root, ['scripts/test-setup.mjs', name], {
    onLine: (line) => {
      if (line.startsWith('result ')) result = JSON.parse(line.slice('result '.length));
      else if (line.trim()) log(line);
    },
  });
  if (r.code !== 0 || !result) throw new Error((r.err || r.out).trim().slice(-4000));
  return result;
}

export const COUNTS = ['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo'];

/** Runs one test file with node's test runner: spec output collected, TAP into a file for its counts. */
async function runFile(root, d, env, extra) {
  const tapDir = mkdtempSync(join(tmpdir(), 'agl-tests-'));
  const tap = join(tapDir, 'results.tap');
  const started = Date.now();
  const args = ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=tap'];
  const r = await node(root, [...args, `--test-reporter-destination=${tap}`, ...extra, d.file], { env });
  const counts = {};
  try {
    for (const m of readFileSync(tap, 'utf8').matchAll(/^# (\w+) (\d+)$/gm)) if (COUNTS.includes(m[1])) counts[m[1]] = Number(m[2]);
  } catch {
    /* no TAP: the runner died before reporting */
  }
  rmSync(tapDir, { recursive: true, force: true });
  return { ...d, code: r.code, output: r.out + r.err, counts, seconds: (Date.now() - started) / 1000 };
}

/** The file's spec output under a header naming it, its counts and time; node's per-file totals left to the run's. */
export function fileReport(r) {
  const c = r.counts;
  const what = c.tests === undefined ? 'no totals reported' : `${c.tests} test${c.tests === 1 ? '' : 's'}${c.fail ? `, ${c.fail} failed` : ''}`;
  const body = r.output
    .split('\n')
    .filter((l) => !/^ℹ (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) [\d.]+$/.test(l))
    .join('\n')
    .trimEnd();
  return `── ${r.file}: ${what}, ${r.seconds.toFixed(1)} s (${r.heavy ? 'heavy' : 'light'})\n${body}\n`;
}

/** The heavy lane's order: VS Code files first, then the torch engine's, then the rest (the longest first, roughly). */
const heavyRank = (f) => (f.needs.has('code-server') ? 0 : f.needs.has('torch') ? 1 : 2);

/**
 * Runs `files` (from describeFile) in two lanes once the set-up steps each needs are done, never two VS Code files at
 * once (each drives code-server, Chromium and a training: two would starve each other's UI waits on two cores);
 * `report(result)` is called as each file ends. Resolves with every file's result. A failed set-up step rejects.
 */
export async function runLanes(root, files, { setup, env, extra, report }) {
  const done = new Map(); // set-up step -> its environment, once made
  let failure = null;
  const waiting = new Set(); // lanes waiting for a set-up step or a file to end
  const changed = () => new Promise((res) => waiting.add(res));
  const wake = () => {
    for (const res of waiting) res();
    waiting.clear();
  };
  for (const [name, p] of setup.running)
    p.then(
      (e) => done.set(name, e),
      (e) => (failure ??= e),
    ).finally(() => wake());
  const heavy = files.filter((f) => f.heavy).sort((a, b) => heavyRank(a) - heavyRank(b)),
    light = files.filter((f) => !f.heavy);
  let vscodeRunning = false;
  const ready = (f) => [...f.needs].every((n) => done.has(n) || !setup.running.has(n)) && !(vscodeRunning && f.needs.has('code-server'));
  const results = [];
  const lane = async (own, other) => {
    while (own.length + other.length > 0) {
      if (failure) throw failure;
      const from = own.some(ready) ? own : other.some(ready) ? other : null;
      if (!from) {
        await changed();
        continue;
      }
      const f = from.splice(from.findIndex(ready), 1)[0];
      const fileEnv = { ...env };
      for (const n of f.needs) Object.assign(fileEnv, done.get(n));
      if (f.needs.has('code-server')) vscodeRunning = true;
      const r = await runFile(root, f, fileEnv, extra);
      if (f.needs.has('code-server')) vscodeRunning = false;
      results.push(r);
      report(r);
      wake();
    }
  };
  const setupFailed = new Promise((_, rej) => setup.running.forEach((p) => p.catch(rej)));
  await Promise.race([Promise.all([lane(heavy, light), lane(light, heavy)]), setupFailed]);
  return results;
}
