/**
 * The code is formatted by Prettier and lint-free by ESLint (+ typescript-eslint), with the configuration in the
 * repository (.prettierrc.json, .prettierignore, eslint.config.mjs): `npm run format` fixes the first,
 * `npm run lint` shows both. Beyond the linters: no class over 200 lines in the training room (daemon/algorithm).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import ts from 'typescript';

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
  for (const file of [
    'daemon/cli.ts',
    'extension/main.ts',
    'webview/dashboard/main.ts',
    'sdk/index.ts',
    'client/client.ts',
    'protocol/policy-set.ts',
    'bench/model.ts',
  ]) {
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

/** Each class of `dir`'s TypeScript files longer than `max` lines (from `class` to its closing brace): `file Name (n lines)`. */
function longClasses(dir: string, max: number, read = (f: string) => readFileSync(f, 'utf8')): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    if (!name.endsWith('.ts')) continue;
    const file = join(dir, name);
    const src = ts.createSourceFile(file, read(file), ts.ScriptTarget.Latest, true);
    const visit = (n: ts.Node): void => {
      if (ts.isClassDeclaration(n) || ts.isClassExpression(n)) {
        const lines = src.getLineAndCharacterOfPosition(n.getEnd()).line - src.getLineAndCharacterOfPosition(n.getStart()).line + 1;
        if (lines > max) out.push(`${file} ${n.name?.text ?? '(anonymous)'} (${lines} lines)`);
      }
      ts.forEachChild(n, visit);
    };
    visit(src);
  }
  return out;
}

test('the training room holds no class over 200 lines: the trainer sequences its steps, the run its phases', () => {
  assert.deepEqual(longClasses('daemon/algorithm', 200), []);
  // The check reads classes: a 201-line one is found.
  const probe = `export class Probe {\n${'  a = 1;\n'.repeat(199)}}\n`;
  assert.deepEqual(
    longClasses('daemon/algorithm', 200, (f) => (f === join('daemon/algorithm', 'trainer.ts') ? probe : readFileSync(f, 'utf8'))),
    [`${join('daemon/algorithm', 'trainer.ts')} Probe (201 lines)`],
  );
});
