/**
 * The docs stand alone for someone who clones the repository: every relative link in a Markdown file, and every
 * repository path a Markdown file names in backticks (`daemon/model/README.md`, `samples/calc/warmup`), reaches a file
 * or folder of the repository; and no doc or code comment cites a document that is not in it (a guide named like
 * `NOTES.md` kept somewhere else, or a path outside the checkout such as `../shared/...`).
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SKIP = new Set(['node_modules', 'dist', 'out', 'test-results', '.git']);

function files(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name) || name.startsWith('.')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) files(p, out);
    else out.push(p);
  }
  return out;
}

const all = files(ROOT);
const docs = all.filter((f) => f.endsWith('.md'));
const sources = all.filter((f) => /\.(ts|mts|mjs|js|py|md|yaml|sh)$/.test(f) && !/\.min\.js$/.test(f));

test('every relative link in the Markdown files reaches a file or folder of the repository', () => {
  const broken: string[] = [];
  let links = 0;
  for (const file of docs) {
    const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
    for (const m of text.matchAll(/\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1]!;
      if (/^(https?:|mailto:|#)/.test(target)) continue;
      links++;
      const path = resolve(dirname(file), decodeURIComponent(target.split('#')[0]!));
      if (!path.startsWith(ROOT) || !existsSync(path)) broken.push(`${relative(ROOT, file)}: ${target}`);
    }
  }
  // Paths under the top folders, named in backticks outside code blocks (placeholders and globs left alone).
  const TOP = /^(daemon|extension|protocol|sdk|samples|test|bench|engines|scripts|webview)\/[\w./-]+$/;
  for (const file of docs) {
    const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
    for (const m of text.matchAll(/`([^`\n]+)`/g)) {
      const path = m[1]!.split('#')[0]!.replace(/[.,:;]+$/, '');
      if (!TOP.test(path)) continue;
      links++;
      if (!existsSync(join(ROOT, path))) broken.push(`${relative(ROOT, file)}: \`${m[1]}\``);
    }
  }
  assert.ok(links > 50, `links and paths were found (${links})`);
  assert.deepEqual(broken, [], 'broken links');
});

test('no doc or comment cites a document that is not in the repository', () => {
  const names = new Set(all.map((f) => f.split(/[\\/]/).pop()!));
  const problems: string[] = [];
  for (const file of sources) {
    if (file === fileURLToPath(import.meta.url)) continue;
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/\.\.\/shared\/(guides|hooks)\b[^\s'"`)]*/g)) problems.push(`${relative(ROOT, file)}: ${m[0]}`);
    for (const m of text.matchAll(/\b([A-Z][A-Z0-9_-]+\.md)\b/g)) {
      // scripts/package-vsix.mjs copies a LICENSE.md / CHANGELOG.md into the package when a repository has one.
      if (!names.has(m[1]!) && !/^(LICENSE|CHANGELOG)\.md$/.test(m[1]!)) problems.push(`${relative(ROOT, file)}: ${m[1]}`);
    }
  }
  assert.deepEqual(problems, [], 'documents cited but not in the repository');
});
