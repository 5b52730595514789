/**
 * The torch engine's Python and the Python SDK are held to the TypeScript's standard: ruff's lint and formatter agree
 * with every file (engines/torch, test/engine's scripts, bench/gpu.py and sdk/python; settings in
 * engines/torch/pyproject.toml, which sdk/python/ruff.toml extends), mypy finds nothing in strict mode in the engine
 * (agl_torch) and the SDK, no function is longer than 80 lines, and the engine's unit tests
 * (engines/torch/tests: messages, batch, loss, generate, optim, server) pass under pytest on tiny models transformers
 * makes on the spot.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { torchPython } from '../helpers/torch.js';

const ENGINE = join('engines', 'torch');
const SDK = join('..', '..', 'sdk', 'python');
const SCRIPTS = [
  ...readdirSync(join('test', 'engine'))
    .filter((f) => f.endsWith('.py'))
    .map((f) => join('..', '..', 'test', 'engine', f)),
  join('..', '..', 'bench', 'gpu.py'),
  SDK,
];

function run(args: string[], timeout = 600_000) {
  const r = spawnSync(torchPython(), args, {
    cwd: ENGINE,
    encoding: 'utf8',
    timeout,
    env: { ...process.env, HF_HUB_OFFLINE: '1', TOKENIZERS_PARALLELISM: 'false' },
  });
  return { status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

test('ruff check: no lint finding in the engine, the test scripts or the SDK', () => {
  const r = run(['-m', 'ruff', 'check', '.', ...SCRIPTS]);
  assert.equal(r.status, 0, r.out);
});

test('ruff format --check: every Python file is formatted', () => {
  const r = run(['-m', 'ruff', 'format', '--check', '.', ...SCRIPTS]);
  assert.equal(r.status, 0, `${r.out}\nrun: cd engines/torch && python -m ruff format . ../../test/engine/*.py ../../bench/gpu.py ../../sdk/python`);
});

test('mypy --strict: the engine and the SDK type-check', () => {
  // The cache (torch's own types take a minute to read the first time) lives outside the repository.
  const r = run(['-m', 'mypy', '--cache-dir', join(tmpdir(), 'agl-mypy-cache'), 'agl_torch', join(SDK, 'agl_runner.py')]);
  assert.equal(r.status, 0, r.out.slice(-6000));
  assert.match(r.out, /Success: no issues found in \d+ source files/);
});

test('no function of the engine or the Python SDK is longer than a screen (80 lines), as in the TypeScript', () => {
  const script = [
    'import ast, json, pathlib',
    'out = []',
    "for f in sorted(pathlib.Path('agl_torch').glob('*.py')) + [pathlib.Path('../../bench/gpu.py'), *sorted(pathlib.Path('../../sdk/python').glob('*.py'))]:",
    '    for n in ast.walk(ast.parse(f.read_text())):',
    '        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > 80:',
    "            out.append(f'{f}:{n.lineno} {n.name} ({n.end_lineno - n.lineno + 1} lines)')",
    'print(json.dumps(out))',
  ].join('\n');
  const r = run(['-c', script]);
  assert.equal(r.status, 0, r.out);
  assert.deepEqual(JSON.parse(r.out.trim().split('\n').pop()!), []);
});

test('pytest: the engine unit tests pass', () => {
  const r = run(['-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'tests']);
  assert.equal(r.status, 0, r.out.slice(-6000));
  const m = /(\d+) passed/.exec(r.out);
  assert.ok(m && Number(m[1]) >= 50, `the suite ran: ${r.out.slice(-400)}`);
  assert.doesNotMatch(r.out, /skipped|xfail/, 'nothing skipped');
});
