/**
 * The whole project type-checks (`tsc --noEmit`, strict): tests and samples run through tsx, which strips
 * types without checking them, so this is where a type error (or a redeclared variable) anywhere shows up.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';

test('tsc --noEmit -p . reports no errors', { timeout: 300_000 }, () => {
  const tsc = createRequire(join(process.cwd(), 'package.json')).resolve('typescript/bin/tsc');
  const r = spawnSync(process.execPath, [tsc, '--noEmit', '-p', '.'], { encoding: 'utf8' });
  assert.equal(r.status, 0, `tsc found errors:\n${(r.stdout + r.stderr).slice(0, 4000)}`);
});
