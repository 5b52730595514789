// Bundles the four deliverables: the VS Code extension (CJS, vscode external), the daemon CLI `agl`
// (ESM, native and heavy modules external), the webviews (browser IIFE: trajectory viewer, training dashboard,
// optimization view, eval compare view) and the SDK (ESM, for agents).
// Entries that do not exist yet are skipped with a notice, so the build works while areas are young.
import { build, context } from 'esbuild';
import { copyFileSync, existsSync, mkdirSync, readdirSync } from 'node:fs';

const watch = process.argv.includes('--watch');
const production = process.argv.includes('--production');
const nodeExternals = [
  'better-sqlite3',
  'pg-native',
  '@tensorflow/tfjs-node',
  '@tensorflow/tfjs-node-gpu',
  'webgpu',
  '@tensorflow/tfjs-backend-wasm',
  'web-tree-sitter',
  'tree-sitter-python',
  'typescript',
  'tsx',
  'esbuild',
  // The report's PNG: resvg's native binary (its loader picks the platform package), and the font file it reads.
  '@resvg/resvg-js',
  'dejavu-fonts-ttf',
];
const common = { bundle: true, sourcemap: !production, minify: production, logLevel: 'info' };
const targets = [
  {
    name: 'extension',
    entryPoints: ['extension/main.ts'],
    outfile: 'dist/extension.js',
    platform: 'node',
    format: 'cjs',
    external: ['vscode'],
    target: 'node20',
  },
  {
    name: 'agl',
    entryPoints: ['daemon/cli.ts'],
    outfile: 'dist/agl.mjs',
    platform: 'node',
    format: 'esm',
    external: nodeExternals,
    target: 'node20',
    banner: { js: "import { createRequire as __aglCreateRequire } from 'node:module'; const require = __aglCreateRequire(import.meta.url);" },
  },
  // The runner starts this by path (daemon/runner/paths.ts: worker-js.mjs beside agl.mjs) for TS/JS agents.
  {
    name: 'runner worker',
    entryPoints: ['daemon/runner/worker-js.ts'],
    outfile: 'dist/worker-js.mjs',
    platform: 'node',
    format: 'esm',
    external: nodeExternals,
    target: 'node20',
    banner: { js: "import { createRequire as __aglCreateRequire } from 'node:module'; const require = __aglCreateRequire(import.meta.url);" },
  },
  {
    name: 'sdk',
    entryPoints: ['sdk/index.ts'],
    outfile: 'dist/sdk.mjs',
    platform: 'node',
    format: 'esm',
    external: [],
    target: 'node20',
    packages: 'external',
  },
  {
    name: 'trajectory webview',
    entryPoints: ['webview/trajectory/main.ts'],
    outfile: 'dist/webview/trajectory.js',
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
    loader: { '.ttf': 'file' },
  },
  {
    name: 'optimization webview',
    entryPoints: ['webview/optimize/main.ts'],
    outfile: 'dist/webview/optimize.js',
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
    loader: { '.ttf': 'file' },
  },
  {
    name: 'compare webview',
    entryPoints: ['webview/compare/main.ts'],
    outfile: 'dist/webview/compare.js',
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
    loader: { '.ttf': 'file' },
  },
  {
    name: 'dashboard webview',
    entryPoints: ['webview/dashboard/main.ts'],
    outfile: 'dist/webview/dashboard.js',
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
    loader: { '.ttf': 'file' },
  },
];
mkdirSync('dist', { recursive: true });
for (const { name, ...options } of targets) {
  if (!options.entryPoints.every((e) => existsSync(e))) {
    console.log(`skip ${name}: ${options.entryPoints.join(', ')} not found`);
    continue;
  }
  if (watch) await (await context({ ...common, ...options })).watch();
  else await build({ ...common, ...options });
}
// The Python helper the runner starts by path (daemon/runner/paths.ts: dist/python/agl_runner.py).
if (existsSync('sdk/python/agl_runner.py')) {
  mkdirSync('dist/python', { recursive: true });
  copyFileSync('sdk/python/agl_runner.py', 'dist/python/agl_runner.py');
}
// The meta-prompts `agl optimize` asks its optimizer model with (daemon/optimize/meta.ts: dist/optimize/meta).
if (existsSync('daemon/optimize/meta')) {
  mkdirSync('dist/optimize/meta', { recursive: true });
  for (const f of readdirSync('daemon/optimize/meta')) if (f.endsWith('.md')) copyFileSync(`daemon/optimize/meta/${f}`, `dist/optimize/meta/${f}`);
}
// The rubric template Train This Agent writes next to an agent for its LLM judge (extension/judge-choices.ts: dist/templates).
if (existsSync('extension/templates')) {
  mkdirSync('dist/templates', { recursive: true });
  for (const f of readdirSync('extension/templates')) if (f.endsWith('.md')) copyFileSync(`extension/templates/${f}`, `dist/templates/${f}`);
}
// The torch engine's Python package and pins, which the daemon starts by path (daemon/model/torch-env.ts: dist/engines/torch).
if (existsSync('engines/torch/agl_torch')) {
  mkdirSync('dist/engines/torch/agl_torch', { recursive: true });
  for (const f of readdirSync('engines/torch/agl_torch'))
    if (f.endsWith('.py')) copyFileSync(`engines/torch/agl_torch/${f}`, `dist/engines/torch/agl_torch/${f}`);
  for (const f of ['requirements.txt', 'pyproject.toml', 'README.md'])
    if (existsSync(`engines/torch/${f}`)) copyFileSync(`engines/torch/${f}`, `dist/engines/torch/${f}`);
}
