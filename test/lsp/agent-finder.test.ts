/**
 * The agent finder: which functions are agents (TypeScript compiler API for TS/JS, tree-sitter for
 * Python), where their CodeLens goes, and the ids the store and runner use for them.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { findAgents, parseAgentId } from '../../daemon/lsp/agents.js';
import { findPyAgents } from '../../daemon/lsp/agents-py.js';
import { findTsAgents, isSdkModule } from '../../daemon/lsp/agents-ts.js';

const TS_AGENT = `/** A calculator agent. */
import OpenAI from 'openai';
import { rollout, emitReward } from '../../sdk/index.js';

export const calcAgent = rollout(async (task: { question: string }, llm) => {
  const client = new OpenAI({ baseURL: llm.endpoint, apiKey: 'x' });
  return 1;
});

const helper = (x: number) => x + 1;
`;

test('TS: an exported const built by rollout() from the SDK is an agent, with its lens on the export line', () => {
  const found = findTsAgents('agent.ts', TS_AGENT);
  assert.deepEqual(
    found.map((a) => a.name),
    ['calcAgent'],
  );
  assert.equal(found[0]!.start.line, 4);
  assert.equal(found[0]!.start.character, 0);
  assert.equal(found[0]!.end.line, 7);
});

test('TS: aliased import, namespace import, export lists, default exports and CommonJS are found', () => {
  const src = `import { rollout as agent } from 'agent-lightning';
import * as agl from '../sdk/index.js';
export const a = agent(async () => 1);
const b = agl.rollout(async function (task, llm) { return 2; });
const c = agent((t) => t) satisfies unknown;
export { b, c as renamedC };
export default agl.rollout(async () => 3);
`;
  assert.deepEqual(
    findTsAgents('x.ts', src).map((f) => f.name),
    ['a', 'b', 'renamedC', 'default'],
  );
  const cjs = `const { rollout } = require('agent-lightning');
exports.one = rollout(async () => 1);
module.exports.two = rollout(async () => 2);
`;
  assert.deepEqual(
    findTsAgents('x.cjs', cjs).map((f) => f.name),
    ['one', 'two'],
  );
});

test('TS: a rollout() that is not the SDK one, an unexported agent, and mentions in strings are not agents', () => {
  const src = `function rollout(f: unknown) { return f; }
export const notOurs = rollout(async () => 1);
const s = "rollout(async () => 1)";
`;
  assert.deepEqual(findTsAgents('x.ts', src), []);
  const unexported = `import { rollout } from '../sdk/index.js';\nconst hidden = rollout(async () => 1);\n`;
  assert.deepEqual(findTsAgents('x.ts', unexported), []);
  const tsx = `import { rollout } from 'agent-lightning';\nexport const ui = rollout(async () => <div>{1}</div>);\n`;
  assert.deepEqual(
    findTsAgents('x.tsx', tsx).map((f) => f.name),
    ['ui'],
  );
});

test('TS: SDK module specifiers are recognised, other packages are not', () => {
  for (const s of ['agent-lightning', 'agent-lightning/sdk', '@agent-lightning/sdk', '../../sdk/index.js', './sdk', '../dist/sdk.mjs'])
    assert.ok(isSdkModule(s), s);
  for (const s of ['@anthropic-ai/sdk', 'openai', './sdkish.js', 'lodash']) assert.ok(!isSdkModule(s), s);
});

const PY_AGENT = `"""Calculator agent in plain Python."""
import json
from agentlightning import rollout
import agentlightning as agl

def helper(x):
    return x

@rollout
def calc_agent(task, llm):
    return 1.0

@agl.rollout(name="async one")
async def async_agent(task, llm):
    return 0.5

@staticmethod
def not_an_agent(task, llm):
    pass

class Holder:
    @rollout
    def method(self, task, llm):
        pass
`;

test('Python: module-level @rollout / @agl.rollout(...) functions, sync and async, are agents; methods are not', async () => {
  const found = await findPyAgents(PY_AGENT);
  assert.deepEqual(
    found.map((a) => a.name),
    ['calc_agent', 'async_agent'],
  );
  assert.equal(found[0]!.start.line, 8, 'the lens sits on the decorator line');
  assert.equal(found[1]!.start.line, 12);
});

test('Python: the decorator is optional: a module-level def name(task, llm) is an agent, typed or async, later parameters optional', async () => {
  const src = `def solve(task, llm):
    return 1.0

async def typed(task: dict, llm: "LLM", retries=2, *, verbose: bool = False) -> float:
    return 0.5

def helper(question, llm):
    pass

def swapped(llm, task):
    pass

def needs_more(task, llm, extra):
    pass

def keyword_only(task, llm, *, mode):
    pass

def one(task):
    pass

@functools.cache
def wrapped(task, llm):
    pass

class Agent:
    def run(self, task, llm):
        pass

    def solve(task, llm):
        pass
`;
  const found = await findPyAgents(src);
  assert.deepEqual(
    found.map((a) => a.name),
    ['solve', 'typed'],
  );
  assert.deepEqual([found[0]!.start.line, found[0]!.end.line], [0, 1], 'the lens sits on the def line');
  assert.equal(found[1]!.start.line, 3);
});

test("Python: the calc-py sample's solve(task, llm), undecorated, is its agent", async () => {
  const found = await findPyAgents(readFileSync(join('samples', 'calc-py', 'calc_agent.py'), 'utf8'));
  assert.deepEqual(
    found.map((a) => a.name),
    ['solve'],
  );
});

test('Python: a file that does not parse cleanly still yields the agents tree-sitter recovers', async () => {
  const broken = `@rollout\ndef ok(task, llm):\n    return 1\n\ndef broken(:\n`;
  assert.deepEqual(
    (await findPyAgents(broken)).map((a) => a.name),
    ['ok'],
  );
});

test('ids: relative to the project root (whatever folders are open), # for TS exports and : for Python functions; round-trip', async () => {
  const root = mkdtempSync(join(tmpdir(), 'agl-finder-ids-'));
  try {
    mkdirSync(join(root, '.git'));
    for (const dir of ['samples/calc', 'samples/calc-py']) mkdirSync(join(root, dir), { recursive: true });
    const tsFile = join(root, 'samples', 'calc', 'agent.ts');
    const pyFile = join(root, 'samples', 'calc-py', 'agent.py');
    writeFileSync(tsFile, TS_AGENT);
    writeFileSync(pyFile, PY_AGENT);
    const ts = await findAgents(pathToFileURL(tsFile).href, TS_AGENT);
    assert.equal(ts[0]!.id, 'samples/calc/agent.ts#calcAgent');
    assert.equal(ts[0]!.language, 'typescript');
    const py = await findAgents(pathToFileURL(pyFile).href, PY_AGENT);
    assert.equal(py[0]!.id, 'samples/calc-py/agent.py:calc_agent', 'the git root names it, not the deepest open folder');
    assert.deepEqual(parseAgentId('samples/calc/agent.ts#calcAgent'), { file: 'samples/calc/agent.ts', name: 'calcAgent' });
    assert.deepEqual(parseAgentId('a/b.py:fn'), { file: 'a/b.py', name: 'fn' });
    assert.deepEqual(await findAgents(pathToFileURL(join(root, 'README.md')).href, 'rollout'), []);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
