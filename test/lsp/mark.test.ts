/**
 * "Mark Function as Agent": the edits applied to real source text produce code the agent finder then
 * recognises as an agent (the round trip the user sees: mark, and the CodeLens appears).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TextEditLike } from '../../protocol/lsp.js';
import { findPyAgents } from '../../daemon/lsp/agents-py.js';
import { findTsAgents } from '../../daemon/lsp/agents-ts.js';
import { markPyAgent, markTsAgent, pythonRolloutImport } from '../../daemon/lsp/mark.js';

const PY_IMPORT = pythonRolloutImport('agl_runner');

/** Applies LSP edits (all against the original text), last position first. */
function apply(text: string, edits: TextEditLike[]): string {
  const lines = text.split('\n');
  const offset = (p: { line: number; character: number }) => lines.slice(0, p.line).reduce((n, l) => n + l.length + 1, 0) + p.character;
  return [...edits]
    .sort((a, b) => offset(b.range.start) - offset(a.range.start))
    .reduce((t, e) => t.slice(0, offset(e.range.start)) + e.newText + t.slice(offset(e.range.end)), text);
}

test('TS: a function declaration becomes an exported rollout(...) const, with the SDK import added after the imports', () => {
  const src = `/** My agent. */
import OpenAI from 'openai';

async function solve(task: { q: string }, llm: { baseUrl: string }) {
  return 1;
}
`;
  const r = markTsAgent('agent.ts', src, { line: 4, character: 4 });
  assert.ok('edits' in r, JSON.stringify(r));
  const out = apply(src, r.edits);
  assert.equal(
    out,
    `/** My agent. */
import OpenAI from 'openai';
import { rollout } from 'agent-lightning-vscode/sdk';

export const solve = rollout(async function solve(task: { q: string }, llm: { baseUrl: string }) {
  return 1;
});
`,
  );
  assert.deepEqual(
    findTsAgents('agent.ts', out).map((a) => a.name),
    ['solve'],
  );
});

test('TS: an arrow-function const is wrapped and exported; an existing SDK import gains rollout', () => {
  const src = `import { emitReward } from '../sdk/index.js';
const agent = async (task, llm) => {
  emitReward(1);
};
`;
  const r = markTsAgent('agent.js', src, { line: 2, character: 2 });
  assert.ok('edits' in r, JSON.stringify(r));
  const out = apply(src, r.edits);
  assert.equal(
    out,
    `import { rollout, emitReward } from '../sdk/index.js';
export const agent = rollout(async (task, llm) => {
  emitReward(1);
});
`,
  );
  assert.deepEqual(
    findTsAgents('agent.js', out).map((a) => a.name),
    ['agent'],
  );
});

test('TS: export default function keeps being the default export; outside a function is an error that says what to do', () => {
  const src = `export default async function (task, llm) { return 0; }\n`;
  const r = markTsAgent('a.ts', src, { line: 0, character: 30 });
  assert.ok('edits' in r);
  const out = apply(src, r.edits);
  assert.match(out, /export default rollout\(async function \(task, llm\) \{ return 0; \}\);/);
  assert.deepEqual(
    findTsAgents('a.ts', out).map((a) => a.name),
    ['default'],
  );
  const bad = markTsAgent('a.ts', `const x = 1;\n`, { line: 0, character: 3 });
  assert.ok('error' in bad && /top-level function/.test(bad.error));
});

test('Python: @rollout goes above the def (other decorators stay), the import (with a no-op fallback outside the runner) after the imports', async () => {
  const src = `"""Doc."""
import json

@functools.cache
async def my_agent(task, llm):
    return 1
`;
  const r = await markPyAgent(src, { line: 5, character: 4 });
  assert.ok('edits' in r, JSON.stringify(r));
  const out = apply(src, r.edits);
  assert.equal(
    out,
    `"""Doc."""
import json
${PY_IMPORT}
@functools.cache
@rollout
async def my_agent(task, llm):
    return 1
`,
  );
  assert.deepEqual(
    (await findPyAgents(out)).map((a) => a.name),
    ['my_agent'],
  );
  const again = await markPyAgent(out, { line: 10, character: 4 });
  assert.ok('error' in again && /already an agent/.test(again.error));
});

test('Python: without imports the import goes after the module docstring; indentation of the def is kept', async () => {
  const src = `"""A module
with a long docstring."""

def agent(task, llm):
    return 0
`;
  const r = await markPyAgent(src, { line: 3, character: 0 });
  assert.ok('edits' in r);
  assert.equal(
    apply(src, r.edits),
    `"""A module
with a long docstring."""
${PY_IMPORT}
@rollout
def agent(task, llm):
    return 0
`,
  );
});
