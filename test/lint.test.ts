/**
 * The code is formatted by Prettier and lint-free by ESLint (+ typescript-eslint), with the configuration in the
 * repository (.prettierrc.json, .prettierignore, eslint.config.mjs): `npm run format` fixes the first,
 * `npm run lint` shows both.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const req = createRequire(join(process.cwd(), 'package.json'));

test('prettier --check: every file is formatted', { timeout: 300_000 }, () => {
  const r = spawnSync(process.execPath, [req.resolve('prettier/bin/prettier.cjs'), '--check', '.'], { encoding: 'utf8' });
  assert.equal(r.status, 0, `not formatted (npm run format fixes it):\n${(r.stdout + r.stderr).slice(0, 4000)}`);
});

test('eslint: no findings', { timeout: 300_000 }, () => {
  // eslint's package exports hide its bin; its folder is found from the package's main entry.
  const bin = join(dirname(req.resolve('eslint')), '..', 'bin', 'eslint.js');
  const r = spawnSync(process.execPath, [bin, '.'], { encoding: 'utf8' });
  assert.equal(r.status, 0, `eslint found problems:\n${(r.stdout + r.stderr).slice(0, 4000)}`);
});

test('a production function reads in one screen: max-lines-per-function 80 holds in every production folder and bench/', async () => {
  const { ESLint } = await import('eslint');
  const eslint = new ESLint();
  for (const file of ['daemon/cli.ts', 'extension/main.ts', 'webview/dashboard/main.ts', 'sdk/index.ts', 'protocol/policy-set.ts', 'bench/model.ts']) {
    const config = await eslint.calculateConfigForFile(file);
    const rule = config.rules?.['max-lines-per-function'];
    assert.ok(Array.isArray(rule) && rule[0] === 2, `${file}: max-lines-per-function is an error`);
    assert.equal(rule[1].max, 80, file);
  }
  // The rule fires on a function one line too long (the check is real, not a configuration that matches nothing).
  const long = `export function f(): number {\n${'  let a = 1;\n'.repeat(79)}  return 1;\n}\n`;
  const [result] = await eslint.lintText(long, { filePath: 'daemon/long-function-probe.ts' });
  assert.ok(
    result.messages.some((m) => m.ruleId === 'max-lines-per-function'),
    JSON.stringify(result.messages.map((m) => m.ruleId)),
  );
});
