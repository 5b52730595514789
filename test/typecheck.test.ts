/**
 * The whole project type-checks (`tsc -b`, strict): tests and samples run through tsx, which strips types without
 * checking them, so this is where a type error (or a redeclared variable) anywhere shows up. The project is one
 * TypeScript project per floor tied by references (tsconfig.json), so the compiler also holds the floor plan:
 * protocol/ sees neither the DOM nor node, webview/ sees the DOM and not node, and a floor that imports one it does
 * not reference does not compile. Declarations go to out/tsc (ignored by git).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';

test('tsc -b reports no errors', { timeout: 300_000 }, () => {
  const tsc = createRequire(join(process.cwd(), 'package.json')).resolve('typescript/bin/tsc');
  const r = spawnSync(process.execPath, [tsc, '-b', '--pretty', 'false'], { encoding: 'utf8' });
  assert.equal(r.status, 0, `tsc found errors:\n${(r.stdout + r.stderr).slice(0, 4000)}`);
});
