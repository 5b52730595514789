/**
 * The floor plan, checked on every import: protocol/ at the bottom (zod and the LSP protocol types only),
 * sdk/ (what agent code imports), client/ (the daemon seen from outside) and webview/ on protocol/ only, the extension
 * on protocol/ and client/ (never on daemon/, sdk/ or webview/ internals: what they share is in protocol/), with no import cycles among their files or the daemon's
 * (the two panels once imported each other; the server's routes once imported their context from app.ts). Also: the command ids of protocol/commands.ts are exactly package.json's
 * contributes.commands.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { COMMANDS } from '../../protocol/commands.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

interface Rule {
  /** Folders its files may import. */
  folders: string[];
  packages: RegExp;
  packagesSaid: string;
  /**
   * Files that are scripts rather than agents and data (a sample's learn, demo, inspect, make-* and tests, and the
   * learning harness they share) may also import these; only they may, even where a folder is inside `folders`.
   */
  scripts?: { files: RegExp; folders: string[] };
}
const RULES: Record<string, Rule> = {
  protocol: { folders: ['protocol'], packages: /^(zod|vscode-languageserver-protocol)$/, packagesSaid: 'zod, vscode-languageserver-protocol' },
  sdk: { folders: ['sdk', 'protocol'], packages: /^node:/, packagesSaid: 'node: built-ins' },
  client: { folders: ['client', 'protocol'], packages: /^node:/, packagesSaid: 'node: built-ins' },
  webview: {
    folders: ['webview', 'protocol'],
    packages: /^(@vscode-elements\/elements|@vscode\/codicons|uplot)(\/|$)/,
    packagesSaid: '@vscode-elements/elements, @vscode/codicons, uplot',
  },
  extension: {
    folders: ['extension', 'protocol', 'client'],
    packages: /^(node:|vscode$|vscode-languageclient(\/|$))/,
    packagesSaid: 'vscode, vscode-languageclient, node: built-ins',
  },
  // samples/ holds agents and their data, written against the SDK like a user's; their scripts drive the daemon's
  // commands through the learning harness (samples/harness). One direction: bench/ runs the samples (and their
  // harness), never the other way round.
  samples: {
    folders: ['samples', 'sdk', 'protocol'],
    packages: /^(?!vscode$)/,
    packagesSaid: 'any package but vscode',
    scripts: { files: /\/(learn|demo|inspect|make-[\w-]+)\.ts$|\.test\.ts$|^samples\/harness\//, folders: ['daemon', 'client', 'samples/harness'] },
  },
  bench: {
    folders: ['bench', 'daemon', 'client', 'sdk', 'protocol', 'samples', 'test/helpers'],
    packages: /^(?!vscode$)/,
    packagesSaid: 'any package but vscode',
  },
};

/** Every module specifier a file imports or re-exports, static or dynamic. */
function importsOf(source: string): string[] {
  return ts.preProcessFile(source, true, true).importedFiles.map((f) => f.fileName);
}

/** What is wrong with `file` (repo-relative, `/`-separated) importing `spec`, or null. */
export function violation(file: string, spec: string): string | null {
  const top = file.split('/')[0]!;
  const rule = RULES[top];
  if (!rule) return null;
  if (spec.startsWith('.')) {
    const target = relative(ROOT, resolve(ROOT, dirname(file), spec))
      .split(sep)
      .join('/');
    const folder = target.split('/')[0]!;
    const under = (f: string) => target === f || target.startsWith(`${f}/`);
    const script = rule.scripts?.files.test(file) ?? false;
    const scriptsOnly = !script && (rule.scripts?.folders.some(under) ?? false);
    const allowed = [...rule.folders, ...(script ? rule.scripts!.folders : [])];
    if (!scriptsOnly && allowed.some(under)) return null;
    const said =
      rule.folders.map((f) => `${f}/`).join(', ') + (rule.scripts ? ` (its scripts also ${rule.scripts.folders.map((f) => `${f}/`).join(', ')})` : '');
    return `${file} imports '${spec}' (${folder}/): ${top}/ may import only ${said}`;
  }
  return rule.packages.test(spec) ? null : `${file} imports package '${spec}': ${top}/ may import only ${rule.packagesSaid}`;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const path = `${dir}/${name}`;
    if (statSync(join(ROOT, path)).isDirectory()) out.push(...sourceFiles(path));
    else if (/\.(ts|mts)$/.test(name)) out.push(path);
  }
  return out;
}

/** Every cycle found by a depth-first walk, as `a -> b -> a`. */
function findCycles(graph: Map<string, string[]>): string[] {
  const cycles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next].join(' -> '));
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return cycles;
}

describe('boundaries', () => {
  it('extension/, webview/, sdk/, client/, protocol/, samples/ and bench/ import only what the floor plan allows', () => {
    const problems: string[] = [];
    let checked = 0;
    for (const top of Object.keys(RULES)) {
      for (const file of sourceFiles(top)) {
        for (const spec of importsOf(readFileSync(join(ROOT, file), 'utf8'))) {
          checked++;
          const problem = violation(file, spec);
          if (problem) problems.push(problem);
        }
      }
    }
    assert.ok(checked > 100, `only ${checked} imports found: the scan is not reading the sources`);
    assert.deepEqual(problems, []);
  });

  it('names the forbidden imports a newcomer might add', () => {
    assert.match(violation('extension/daemon.ts', '../daemon/state.js')!, /extension\/daemon\.ts imports '\.\.\/daemon\/state\.js' \(daemon\/\)/);
    assert.match(violation('extension/panels/data.ts', '../../webview/trajectory/model.js')!, /\(webview\/\)/);
    assert.match(violation('webview/trajectory/model.ts', '../../sdk/client.js')!, /webview\/ may import only webview\/, protocol\//);
    assert.match(violation('protocol/spans.ts', 'node:fs')!, /package 'node:fs'/);
    assert.match(violation('extension/daemon.ts', 'lowdb')!, /package 'lowdb'/);
    assert.equal(violation('extension/commands.ts', '../protocol/commands.js'), null);
    assert.equal(violation('extension/daemon.ts', '../client/daemon-state.js'), null);
    assert.match(violation('samples/sql/agent.ts', '../../daemon/server/auth.js')!, /samples\/ may import only samples\/, sdk\/, protocol\//);
    assert.equal(violation('samples/sql/learn.ts', '../harness/learning.js'), null);
    assert.equal(violation('samples/harness/learning.ts', '../../daemon/commands/sft.js'), null);
    assert.match(
      violation('samples/sql/agent.ts', '../harness/learning.js')!,
      /samples\/ may import only .*its scripts also daemon\/, client\/, samples\/harness\//,
    );
    // One direction: bench/ imports the samples and their harness; nothing in samples/ imports bench/.
    assert.equal(violation('bench/roles.ts', '../samples/harness/learning.js'), null);
    assert.match(violation('samples/sql/learn.ts', '../../bench/harness/learning.js')!, /\(bench\/\)/);
    assert.match(violation('samples/harness/learning.ts', '../../bench/learning.js')!, /\(bench\/\)/);
    assert.match(violation('bench/model.ts', '../extension/daemon.js')!, /bench\/ may import only/);
    const sample =
      "import { a } from '../daemon/x.js';\nexport { b } from './y.js';\nconst c = await import('../webview/z.js');\nimport type { D } from 'zod';\n";
    assert.deepEqual(importsOf(sample), ['../daemon/x.js', './y.js', '../webview/z.js', 'zod']);
  });

  it('sdk/ by audience: agents see the agent API, the daemon its entry points; client/ is not the SDK', () => {
    // sdk/index.ts (agent API) | sdk/runner/ (inside an agent's process, for the runner); client/ (extension, CLI, bench)
    const targetOf = (file: string, spec: string) =>
      relative(ROOT, resolve(ROOT, dirname(file), spec))
        .split(sep)
        .join('/');
    const problems: string[] = [];
    let checked = 0;
    const check = (top: string, allowed: RegExp, said: string, except?: string) => {
      for (const file of sourceFiles(top).filter((f) => !except || !f.startsWith(`${except}/`))) {
        for (const spec of importsOf(readFileSync(join(ROOT, file), 'utf8'))) {
          if (!spec.startsWith('.')) continue;
          const target = targetOf(file, spec);
          if (!target.startsWith('sdk/')) continue;
          checked++;
          if (!allowed.test(target)) problems.push(`${file} imports '${spec}': ${top}/ may use only ${said}`);
        }
      }
    };
    check('daemon', /^sdk\/(index|runner\/index)\.js$/, 'sdk/index.ts and sdk/runner/index.ts');
    check('extension', /^$/, 'nothing of sdk/ (the daemon is reached through client/)');
    check('client', /^$/, 'nothing of sdk/');
    check('samples', /^sdk\/index\.js$/, 'sdk/index.ts, the agent API', 'samples/harness');
    check('samples/harness', /^sdk\/index\.js$/, 'sdk/index.ts');
    // The agent API does not reach into the runner's files, nor into client/.
    for (const file of sourceFiles('sdk').filter((f) => !f.startsWith('sdk/runner/'))) {
      for (const spec of importsOf(readFileSync(join(ROOT, file), 'utf8'))) {
        const target = spec.startsWith('.') ? targetOf(file, spec) : '';
        if (/^sdk\/runner\/|^client\//.test(target)) problems.push(`${file} (agent API) imports '${spec}'`);
      }
    }
    assert.ok(checked > 10, `only ${checked} sdk imports found`);
    assert.deepEqual(problems, []);
  });

  it('client/ is what the daemon looks like from outside: the extension, the CLI, the harness and bench use it', () => {
    let users = 0;
    for (const top of ['daemon', 'extension', 'bench', 'samples/harness']) {
      for (const file of sourceFiles(top))
        if (importsOf(readFileSync(join(ROOT, file), 'utf8')).some((spec) => /(^|\/)client\/[\w-]+\.js$/.test(spec) && spec.includes('../client/'))) users++;
    }
    assert.ok(users > 20, `only ${users} files import client/`);
    assert.match(violation('sdk/emit.ts', '../client/client.js')!, /sdk\/ may import only sdk\/, protocol\//);
    assert.match(violation('client/client.ts', '../daemon/state.js')!, /client\/ may import only client\/, protocol\//);
    assert.match(violation('extension/ctx.ts', '../sdk/index.js')!, /extension\/ may import only extension\/, protocol\/, client\//);
    assert.equal(violation('extension/ctx.ts', '../client/events.js'), null);
  });

  it("no import cycles among their files or daemon/'s (static or dynamic imports)", () => {
    const graph = new Map<string, string[]>();
    for (const top of [...Object.keys(RULES), 'daemon']) {
      for (const file of sourceFiles(top)) {
        graph.set(
          file,
          importsOf(readFileSync(join(ROOT, file), 'utf8'))
            .filter((spec) => spec.startsWith('.'))
            .map((spec) =>
              relative(ROOT, resolve(ROOT, dirname(file), spec.replace(/\.js$/, '.ts')))
                .split(sep)
                .join('/'),
            )
            .filter((target) => existsSync(join(ROOT, target))),
        );
      }
    }
    assert.ok(
      [...graph.values()].some((deps) => deps.length > 0),
      'no relative imports resolved: the scan is not reading the sources',
    );
    assert.deepEqual(findCycles(graph), []);
    assert.deepEqual(
      findCycles(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', ['a.ts']],
        ]),
      ),
      ['a.ts -> b.ts -> a.ts'],
    );
  });

  it("the webviews' code never loads zod (its full build is ~450 KB minified): a view reads what was validated, never validates", () => {
    // Run-time imports only: `import type` (and type-only names) vanish when compiled.
    const runtimeImports = (file: string): string[] => {
      const src = ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
      const out: string[] = [];
      const typeOnly = (c: ts.ImportClause | undefined) =>
        !!c && (c.isTypeOnly || (!c.name && !!c.namedBindings && ts.isNamedImports(c.namedBindings) && c.namedBindings.elements.every((e) => e.isTypeOnly)));
      const visit = (n: ts.Node): void => {
        if (ts.isImportDeclaration(n) && !typeOnly(n.importClause)) out.push((n.moduleSpecifier as ts.StringLiteral).text);
        else if (ts.isExportDeclaration(n) && n.moduleSpecifier && !n.isTypeOnly) out.push((n.moduleSpecifier as ts.StringLiteral).text);
        else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword && ts.isStringLiteral(n.arguments[0]!))
          out.push(n.arguments[0].text);
        ts.forEachChild(n, visit);
      };
      visit(src);
      return out;
    };
    const seen = new Map<string, string>(); // file -> the file that imported it
    const zod: string[] = [];
    const queue = sourceFiles('webview');
    queue.forEach((f) => seen.set(f, ''));
    while (queue.length) {
      const file = queue.shift()!;
      for (const spec of runtimeImports(file)) {
        if (spec === 'zod' || spec.startsWith('zod/')) {
          const chain = [file];
          for (let at = seen.get(file); at; at = seen.get(at)) chain.unshift(at);
          zod.push(chain.join(' -> '));
        }
        if (!spec.startsWith('.')) continue;
        const target = relative(ROOT, resolve(ROOT, dirname(file), spec.replace(/\.js$/, '.ts')))
          .split(sep)
          .join('/');
        if (!seen.has(target) && existsSync(join(ROOT, target))) {
          seen.set(target, file);
          queue.push(target);
        }
      }
    }
    assert.ok(seen.size > 30, `only ${seen.size} files reached from webview/`);
    assert.deepEqual(zod, [], 'these import chains load zod into a webview');
  });

  it('docs/architecture.md draws the code: each room imports only the rooms its arrows point to, and every room exists', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
    /** The "room | its job | may import" table after `marker`: room -> the rooms it may import. */
    const table = (marker: string): Map<string, Set<string>> => {
      const at = doc.indexOf(marker);
      assert.ok(at >= 0, `docs/architecture.md has no ${marker} table`);
      const lines = doc.slice(at).split('\n').slice(1);
      const start = lines.findIndex((l) => l.startsWith('|'));
      const end = lines.findIndex((l, i) => i > start && !l.startsWith('|'));
      const rows = lines.slice(start, end < 0 ? undefined : end);
      const out = new Map<string, Set<string>>();
      for (const row of rows.slice(2)) {
        const cells = row.split('|').map((c) => c.trim());
        if (cells.length < 4) break;
        out.set(
          cells[1]!,
          new Set(
            cells[3]!
              .split(',')
              .map((x) => x.trim())
              .filter(Boolean),
          ),
        );
      }
      return out;
    };
    const rooms = table('<!-- rooms:');
    const inner = table('<!-- daemon rooms:');
    for (const room of [...rooms.keys(), ...inner.keys()]) assert.ok(existsSync(join(ROOT, room)), `docs/architecture.md names ${room}/, which does not exist`);
    // The top rooms: the drawing and the rules this test holds every import to are the same.
    const top = (f: string) => f.split('/')[0]!;
    for (const [room, rule] of Object.entries(RULES)) {
      const drawn = rooms.get(room);
      assert.ok(drawn, `docs/architecture.md does not draw ${room}/`);
      assert.deepEqual([...drawn].sort(), [...new Set([...rule.folders, ...(rule.scripts?.folders ?? [])].map(top))].sort(), `${room}/'s arrows`);
    }
    // The daemon and the rooms inside it: every import the code makes is an arrow of the drawing.
    const problems: string[] = [];
    const innerRoom = (f: string) => {
      const [a, b] = f.split('/');
      return a === 'daemon' && b && !b.includes('.') ? `daemon/${b}` : null;
    };
    for (const file of sourceFiles('daemon')) {
      for (const spec of importsOf(readFileSync(join(ROOT, file), 'utf8'))) {
        if (!spec.startsWith('.')) continue;
        const target = relative(ROOT, resolve(ROOT, dirname(file), spec))
          .split(sep)
          .join('/');
        if (!rooms.get('daemon')!.has(top(target))) problems.push(`${file} imports ${target}: daemon/ may import only ${[...rooms.get('daemon')!].join(', ')}`);
        const from = innerRoom(file),
          to = innerRoom(target);
        if (!from || !to || from === to) continue;
        if (!inner.has(from)) problems.push(`${from}/ is not in docs/architecture.md's daemon rooms`);
        else if (!inner.get(from)!.has(to))
          problems.push(`${file} imports ${target}: ${from}/ may import only ${[...inner.get(from)!].join(', ') || 'no other daemon room'}`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('the command ids are exactly the commands package.json contributes', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { contributes: { commands: { command: string }[] } };
    assert.deepEqual(pkg.contributes.commands.map((c) => c.command).sort(), Object.values(COMMANDS).sort());
  });
});
