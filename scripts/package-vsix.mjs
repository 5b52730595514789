#!/usr/bin/env node
// `npm run package`: builds the bundles (esbuild, production) and packages the extension as a .vsix with
// vsce --no-dependencies, in a staging folder (out/vsix/) holding only what runs: package.json, README,
// dist/ (extension, daemon `agl`, SDK, webviews) and dist/node_modules/ with the modules the bundles leave
// external (native better-sqlite3, the tree-sitter and TF.js wasm files, typescript for the agent finder,
// tsx for running TypeScript agents...), found by scanning the bundles, plus their dependencies.
// dist/agl.mjs resolves bare imports from dist/node_modules first, so the packaged daemon finds them.
// The native parts make the package platform-specific: it is tagged with this machine's target.
import { spawnSync } from 'node:child_process';
import { builtinModules, createRequire } from 'node:module';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const stage = join(root, 'out', 'vsix');
const require = createRequire(join(root, 'package.json'));
const run = (cmd, args, cwd = root) => {
  const r = spawnSync(cmd, args, { cwd, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error(`package: ${cmd} ${args.join(' ')} failed (${r.status ?? r.signal})`);
    process.exit(1);
  }
};

if (!process.argv.includes('--no-build')) run(process.execPath, ['esbuild.mjs', '--production']);
// What the extension runs: itself, the daemon CLI, and what the runner starts by path (JS worker, Python helper).
const REQUIRED = [
  'dist/extension.js',
  'dist/agl.mjs',
  'dist/worker-js.mjs',
  'dist/python/agl_runner.py',
  'dist/engines/torch/agl_torch/server.py',
  'dist/webview/trajectory.js',
  'dist/webview/dashboard.js',
];
for (const f of REQUIRED) {
  if (!existsSync(join(root, f))) {
    console.error(`package: ${f} is missing after the build`);
    process.exit(1);
  }
}

// Modules named by the bundles that are not Node built-ins: `require("x")`, `import("x")`, `from "x"`, `require.resolve("x/...")`.
const builtins = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
const ALWAYS = ['tsx']; // the runner loads TypeScript agents through tsx's loader, registered by name at run time
// vscode: provided by the editor; echarts: bundled into dist/agl.mjs, whose copy names its own subpaths in error messages.
const NEVER_SHIPPED = new Set(['vscode', 'echarts']);
const referenced = new Set(ALWAYS);
for (const bundle of REQUIRED.filter((f) => /\.m?js$/.test(f) && !f.includes('/webview/'))) {
  const text = readFileSync(join(root, bundle), 'utf8');
  for (const m of text.matchAll(/(?:\brequire|\bimport|(?:\brequire|\))\.resolve)\(\s*["']([^"'./$][^"'$]*)["']\s*\)|\bfrom\s*["']([^"'./$][^"'$]*)["']/g)) {
    const spec = m[1] ?? m[2];
    const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
    if (!builtins.has(name) && !builtins.has(spec) && !NEVER_SHIPPED.has(name)) referenced.add(name);
  }
}

// What of each package the runtime needs (allowlists for big native/wasm packages; everything else minus docs/maps/tests).
const KEEP = {
  'better-sqlite3': ['package.json', 'LICENSE', 'lib/**', 'build/Release/better_sqlite3.node'],
  'tree-sitter-python': ['package.json', 'LICENSE', 'tree-sitter-python.wasm'],
  typescript: ['package.json', 'LICENSE.txt', 'lib/typescript.js'],
  webgpu: ['package.json', 'LICENSE.md', 'index.js', `dist/${process.platform}-${process.arch}/**`, 'build/**'],
  // The training report draws its text with this one font (daemon/algorithm/report-chart.ts), not the other 20.
  'dejavu-fonts-ttf': ['package.json', 'LICENSE', 'ttf/DejaVuSans.ttf'],
};
/** The dependencies a package really needs at run time, where its package.json lists install-time ones too. */
const RUNTIME_DEPS = { 'better-sqlite3': ['bindings'], 'tree-sitter-python': [], typescript: [] };
const DROP = /(^|\/)(test|tests|__tests__|docs?|example|examples|\.github)(\/|$)|\.(map|md|markdown|ts\.map)$|(^|\/)(CHANGELOG|HISTORY)/i;

function glob(pattern) {
  const re = new RegExp(
    '^' +
      pattern
        .split('**')
        .map((p) =>
          p
            .split('*')
            .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
            .join('[^/]*'),
        )
        .join('.*') +
      '$',
  );
  return (p) => re.test(p);
}
function packageDir(name, from) {
  try {
    return dirname(createRequire(join(from, 'package.json')).resolve(`${name}/package.json`));
  } catch {
    /* exports may hide package.json */
  }
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dirname(dir) === dir) return null;
  }
}
function files(dir, base = dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules') continue;
    const p = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...files(p, base));
    else if (entry.isFile()) out.push(relative(base, p).split(sep).join('/'));
  }
  return out;
}

rmSync(stage, { recursive: true, force: true });
mkdirSync(join(stage, 'dist', 'node_modules'), { recursive: true });
const shipped = new Map();
const missing = [];
const queue = [...referenced].map((name) => ({ name, from: root, optional: false }));
while (queue.length) {
  const { name, from, optional } = queue.shift();
  const dir = packageDir(name, from);
  if (!dir) {
    if (!optional) missing.push(name);
    continue;
  }
  if (shipped.has(name)) continue;
  shipped.set(name, dir);
  const keep = KEEP[name]?.map(glob);
  let bytes = 0;
  for (const f of files(dir)) {
    if (keep ? !keep.some((k) => k(f)) : DROP.test(f) && !/^LICEN[CS]E/i.test(f)) continue;
    const dest = join(stage, 'dist', 'node_modules', name, f);
    mkdirSync(dirname(dest), { recursive: true });
    cpSync(join(dir, f), dest);
    bytes += statSync(dest).size;
  }
  console.log(`package: ships ${name} (${(bytes / 1e6).toFixed(1)} MB)`);
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const needed = RUNTIME_DEPS[name] ?? Object.keys(pkg.dependencies ?? {});
  for (const dep of needed) queue.push({ name: dep, from: dir, optional: false });
  if (RUNTIME_DEPS[name]) continue;
  for (const dep of Object.keys({ ...pkg.optionalDependencies, ...pkg.peerDependencies })) queue.push({ name: dep, from: dir, optional: true });
}
if (missing.length) console.log(`package: named in the bundles but not installed, left out (optional imports, or names inside strings): ${missing.join(', ')}`);

// dist/ without source maps (they double the size and point at sources that are not shipped).
for (const f of files(join(root, 'dist'))) {
  if (f.endsWith('.map') || f.startsWith('node_modules/')) continue;
  mkdirSync(dirname(join(stage, 'dist', f)), { recursive: true });
  cpSync(join(root, 'dist', f), join(stage, 'dist', f));
}
for (const f of ['README.md', 'LICENSE', 'LICENSE.md', 'CHANGELOG.md']) if (existsSync(join(root, f))) cpSync(join(root, f), join(stage, f));
// Images the README shows by relative path travel with it (and links stay relative: no repository URL to prepend).
const readmeImages = [...readFileSync(join(root, 'README.md'), 'utf8').matchAll(/!\[[^\]]*\]\(([^)\s]+)\)/g)]
  .map((m) => m[1])
  .filter((p) => !/^[a-z]+:/i.test(p));
for (const img of readmeImages) {
  if (!existsSync(join(root, img))) {
    console.error(`package: README.md shows ${img}, which does not exist`);
    process.exit(1);
  }
  mkdirSync(dirname(join(stage, img)), { recursive: true });
  cpSync(join(root, img), join(stage, img));
}
for (const d of ['media', 'images']) if (existsSync(join(root, d))) cpSync(join(root, d), join(stage, d), { recursive: true });

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
for (const k of ['scripts', 'dependencies', 'devDependencies', 'optionalDependencies', 'bin', 'private']) delete pkg[k];
writeFileSync(join(stage, 'package.json'), JSON.stringify(pkg, null, 2) + '\n');
if (!existsSync(join(stage, 'LICENSE')) && !existsSync(join(stage, 'LICENSE.md'))) writeFileSync(join(stage, 'LICENSE'), `${pkg.license ?? 'MIT'} License\n`);
writeFileSync(join(stage, '.vscodeignore'), '**/*.map\n');

const target = `${process.platform === 'win32' ? 'win32' : process.platform}-${process.arch}`;
const out = join(root, `${pkg.name}-${pkg.version}.vsix`);
const vsce = require.resolve('@vscode/vsce/vsce');
run(
  process.execPath,
  [vsce, 'package', '--no-dependencies', '--allow-missing-repository', '--no-rewrite-relative-links', '--skip-license', '--target', target, '--out', out],
  stage,
);
console.log(`package: ${relative(root, out)} (${(statSync(out).size / 1e6).toFixed(1)} MB, target ${target})`);
