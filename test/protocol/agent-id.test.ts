/**
 * The agent identity rule (protocol/agent-id.ts, client/agent-id.ts): which folder is a file's project root (git,
 * else the outermost package manifest, else its own folder), the id of a spec typed anywhere in the project,
 * the way back from an id to its file, and which stored ids are older forms of the same agent.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { agentAliasesIn, agentShortName, formatAgentId, parseAgentId, sameAgent } from '../../protocol/agent-id.js';
import { agentIdentity, canonicalAgentSpec, projectRoot, resolveAgentFile } from '../../client/agent-id.js';

const dir = mkdtempSync(join(tmpdir(), 'agl-agent-id-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function write(path: string, text = ''): string {
  const full = join(dir, path);
  mkdirSync(join(full, '..'), { recursive: true });
  writeFileSync(full, text);
  return full;
}

test("the project root: the git root, else the outermost manifest, else the file's folder", () => {
  write('repo/.git/HEAD', 'ref: refs/heads/main');
  write('repo/package.json', '{}');
  const inRepo = write('repo/samples/calc/agent.ts');
  write('repo/samples/package.json', '{}');
  assert.equal(projectRoot(inRepo), join(dir, 'repo'));
  assert.equal(projectRoot(join(dir, 'repo', 'samples')), join(dir, 'repo'), 'a folder is its own starting point');
  write('mono/package.json', '{}');
  write('mono/packages/a/package.json', '{}');
  const inMono = write('mono/packages/a/src/agent.py');
  assert.equal(projectRoot(inMono), join(dir, 'mono'), 'without git, the outermost manifest: members of a workspace do not collide');
  const loose = write('loose/x/agent.ts');
  assert.equal(projectRoot(loose), join(dir, 'loose', 'x'));
  assert.equal(agentIdentity(inRepo, 'calcAgent', 'typescript'), 'samples/calc/agent.ts#calcAgent');
  assert.equal(agentIdentity(inMono, 'triage', 'python'), 'packages/a/src/agent.py:triage');
});

test('a spec typed anywhere in the project names the same id; ids find their file from anywhere in it', () => {
  const repo = join(dir, 'repo');
  const expected = 'samples/calc/agent.ts#calcAgent';
  assert.equal(canonicalAgentSpec('samples/calc/agent.ts#calcAgent', repo), expected);
  assert.equal(canonicalAgentSpec('calc/agent.ts#calcAgent', join(repo, 'samples')), expected);
  assert.equal(canonicalAgentSpec('./agent.ts#calcAgent', join(repo, 'samples', 'calc')), expected);
  assert.equal(canonicalAgentSpec(`${join(repo, 'samples', 'calc', 'agent.ts')}#calcAgent`, tmpdir()), expected);
  assert.equal(canonicalAgentSpec('samples/calc/agent.ts#calcAgent', join(repo, 'samples')), expected, 'an id as stored, from a sub-folder');
  assert.equal(
    canonicalAgentSpec('calc/agent.ts', join(repo, 'samples'), () => 'calcAgent'),
    expected,
    "no export named: the file's only agent",
  );
  assert.equal(canonicalAgentSpec('pkg.module:fn', repo), 'pkg.module:fn', 'a Python module is already stable');
  assert.equal(canonicalAgentSpec('missing.ts#x', repo), 'missing.ts#x', 'a spec naming no file here stays as typed');
  assert.equal(resolveAgentFile('samples/calc/agent.ts', join(repo, 'samples', 'calc')), join(repo, 'samples', 'calc', 'agent.ts'));
  assert.equal(resolveAgentFile('agent.ts', join(repo, 'samples', 'calc')), join(repo, 'samples', 'calc', 'agent.ts'), 'an older cwd-relative id still runs');
});

test("older forms of an id: the same function, one path the other's tail on a folder boundary", () => {
  const id = 'samples/calc/agent.ts#calcAgent';
  for (const older of [
    'calc/agent.ts#calcAgent',
    'agent.ts#calcAgent',
    'main/samples/calc/agent.ts#calcAgent',
    '../main/samples/calc/agent.ts#calcAgent',
    '/home/u/main/samples/calc/agent.ts#calcAgent',
  ]) {
    assert.ok(sameAgent(older, id) && sameAgent(id, older), older);
  }
  for (const other of [
    'other/calc/agent.ts#calcAgent',
    'samples/calc/agent.ts#other',
    'samples/calc/xagent.ts#calcAgent',
    'samples/calc/agent.py:calcAgent',
    'calcAgent',
  ]) {
    assert.ok(!sameAgent(other, id), other);
  }
  assert.ok(!sameAgent('pkg.a:f', 'b/pkg.a:f'));
  assert.deepEqual(agentAliasesIn(['calc/agent.ts#calcAgent', 'other/agent.ts#calcAgent'], id), [id, 'calc/agent.ts#calcAgent']);
  assert.equal(formatAgentId('a\\b.py', 'f', 'python'), 'a/b.py:f');
  assert.deepEqual(parseAgentId('a/b.ts#x'), { file: 'a/b.ts', name: 'x' });
});

test('a short name for a narrow column: the function before the file, so agents of files named alike read apart', () => {
  assert.equal(agentShortName('samples/calc/agent.ts#calcAgent'), 'calcAgent · agent.ts');
  assert.equal(agentShortName('samples/apo/agent.ts#apoAgent'), 'apoAgent · agent.ts');
  assert.equal(agentShortName('agents\\agent.py:py_agent'), 'py_agent · agent.py');
  assert.equal(agentShortName('pkg.module'), 'pkg.module', 'a module naming no function stays as it is');
});
