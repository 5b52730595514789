/**
 * Which agent a command runs on when the user named none (extension/agent-choice.ts): the one under the cursor,
 * else the open file's first, then the workspace's without tests and fixtures; never an agent of another file
 * highlighted while the open file has agents (#27 item 4: calcAgent was highlighted with samples/sql/agent.ts open).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { agentFile, chooseAgent, isFixturePath, samePath, workspaceRelative } from '../../extension/agent-choice.js';
import type { AgentInfo } from '../../protocol/lsp.js';

const root = join('/', 'work', 'repo');
const at = (rel: string) => join(root, rel);
function agent(rel: string, name: string, line = 0): AgentInfo {
  return {
    id: `${rel}#${name}`,
    name,
    language: 'typescript',
    uri: pathToFileURL(at(rel)).href,
    range: { start: { line, character: 0 }, end: { line: line + 5, character: 0 } },
  };
}
const calc = agent('samples/calc/agent.ts', 'calcAgent');
const sqlWriter = agent('samples/sql/agent.ts', 'writer', 40);
const sqlAgent = agent('samples/sql/agent.ts', 'sqlAgent', 10);
const rag = agent('samples/rag/agent.ts', 'ragAgent');
const crashing = agent('test/fixtures/agents.ts', 'crashingAgent');
const hanging = agent('test/fixtures/agents.ts', 'hangingAgent', 20);
const all = [calc, crashing, hanging, rag, sqlWriter, sqlAgent];
const ids = (list: AgentInfo[]) => list.map((a) => a.name);

test('the agent under the cursor is taken without asking', () => {
  const d = chooseAgent(all, { cursor: sqlWriter, activeFile: at('samples/sql/agent.ts'), folders: [root], remembered: calc.id });
  assert.deepEqual(d, { kind: 'take', agent: sqlWriter, why: 'cursor' });
});

test("cursor outside any agent in a file with agents: that file's agents first, in source order; never another file's first", () => {
  // The case: samples/sql/agent.ts open, calcAgent last used and first by id.
  const d = chooseAgent(all, { cursor: null, activeFile: at('samples/sql/agent.ts'), folders: [root], remembered: calc.id });
  assert.equal(d.kind, 'ask');
  if (d.kind !== 'ask') return;
  assert.deepEqual(ids(d.inFile), ['sqlAgent', 'writer']);
  // The remembered agent leads the workspace's, below the open file's; the fixtures are not offered.
  assert.deepEqual(ids(d.workspace), ['calcAgent', 'ragAgent']);
});

test("a file without agents: the workspace's agents, the one last used first, then by id", () => {
  const readme = { cursor: null, activeFile: at('README.md'), folders: [root] };
  const d = chooseAgent(all, readme);
  assert.equal(d.kind, 'ask');
  if (d.kind === 'ask') {
    assert.deepEqual(d.inFile, []);
    assert.deepEqual(ids(d.workspace), ['calcAgent', 'ragAgent', 'sqlAgent', 'writer']);
  }
  const remembered = chooseAgent(all, { ...readme, remembered: rag.id });
  assert.ok(remembered.kind === 'ask' && remembered.workspace[0] === rag);
  // No editor at all (a webview has the focus and no text editor is visible): the same list.
  assert.deepEqual(chooseAgent(all, { folders: [root] }), d);
});

test('tests, fixtures, build output, dependencies and files outside the workspace folders are not offered', () => {
  const left = [
    crashing,
    agent('tests/agent.ts', 'a'),
    agent('src/__tests__/agent.ts', 'b'),
    agent('src/agent.test.ts', 'c'),
    agent('src/agent.spec.py', 'd'),
    agent('node_modules/pkg/agent.js', 'e'),
    agent('dist/agent.js', 'f'),
    agent('out/tsc/agent.js', 'g'),
    agent('packages/x/fixtures/agent.ts', 'h'),
    { ...calc, id: 'elsewhere/agent.ts#calcAgent', uri: pathToFileURL(join('/', 'elsewhere', 'agent.ts')).href },
    { ...calc, id: 'untitled#calcAgent', uri: 'untitled:Untitled-1' },
  ];
  const d = chooseAgent([...left, calc, rag], { activeFile: at('README.md'), folders: [root] });
  assert.ok(d.kind === 'ask');
  assert.deepEqual(ids(d.workspace), ['calcAgent', 'ragAgent']);
  // Only fixtures: nothing to offer, and the message can say why.
  const none = chooseAgent(left, { activeFile: at('README.md'), folders: [root] });
  assert.equal(none.kind, 'none');
  assert.equal(none.kind === 'none' && none.hidden.length, left.length);
  // ...unless the fixture is the open file: the user is looking at it.
  const open = chooseAgent(all, { activeFile: at('test/fixtures/agents.ts'), folders: [root] });
  assert.ok(open.kind === 'ask');
  assert.deepEqual(ids(open.inFile), ['crashingAgent', 'hangingAgent']);
  assert.deepEqual(ids(open.workspace), ['calcAgent', 'ragAgent', 'sqlAgent', 'writer']);
});

test('the only agent offered is taken without asking; none at all is said', () => {
  assert.deepEqual(chooseAgent([calc, crashing, hanging], { activeFile: at('README.md'), folders: [root] }), { kind: 'take', agent: calc, why: 'only' });
  assert.deepEqual(chooseAgent([], { folders: [root] }), { kind: 'none', hidden: [] });
});

test('fixture paths, agent files and workspace-relative paths', () => {
  for (const p of [
    'test/x.ts',
    'a/tests/x.py',
    'a/__tests__/x.ts',
    'fixtures/x.ts',
    'a/b.test.ts',
    'b.spec.js',
    'node_modules/x/y.js',
    'dist/x.js',
    'out/x.js',
  ])
    assert.ok(isFixturePath(p), p);
  for (const p of ['agent.ts', 'samples/calc/agent.ts', 'testing/agent.ts', 'src/latest.ts', 'output/agent.ts', 'contest/agent.py'])
    assert.ok(!isFixturePath(p), p);
  assert.equal(agentFile(calc), at('samples/calc/agent.ts'));
  assert.equal(agentFile({ ...calc, uri: 'untitled:Untitled-1' }), null);
  assert.equal(agentFile({ ...calc, uri: '' }), null);
  // Several folders: relative to the innermost holding the file; a folder's sibling with a longer name is outside it.
  const folders = [root, at('samples')];
  assert.equal(workspaceRelative(at('samples/calc/agent.ts'), folders), join('calc', 'agent.ts'));
  assert.equal(workspaceRelative(at('test/x.ts'), folders), join('test', 'x.ts'));
  assert.equal(workspaceRelative(join('/', 'work', 'repo2', 'agent.ts'), [root]), null);
  assert.equal(workspaceRelative(root, [root]), null);
  assert.ok(samePath('c:\\work\\agent.ts', 'C:\\work\\agent.ts'));
  assert.ok(!samePath('/work/Agent.ts', '/work/agent.ts'));
});
