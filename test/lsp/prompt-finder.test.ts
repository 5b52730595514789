/**
 * The prompt finder: which calls are an agent's `llm.prompt(name, seed)` (TypeScript compiler API for TS/JS,
 * tree-sitter for Python), what seed each writes (a text, a file, or computed), which agent reads it, and what its
 * lens says of the agent's optimizations of it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describePromptRun, promptLensesFor, promptRun } from '../../daemon/lsp/codelens.js';
import { findAgents } from '../../daemon/lsp/agents.js';
import { findPrompts } from '../../daemon/lsp/prompts.js';
import { findPyPrompts, pyStringValue } from '../../daemon/lsp/prompts-py.js';
import { findTsPrompts } from '../../daemon/lsp/prompts-ts.js';
import { pythonParser } from '../../daemon/lsp/agents-py.js';
import type { PromptOptimization } from '../../protocol/lsp.js';

const TS = `import OpenAI from 'openai';
import { rollout, type LLM } from '../sdk/index.js';

export const deskAgent = rollout(async (task: { q: string }, llm: LLM) => {
  const system = llm.prompt('system', 'Answer from the record.\\nBe brief.', { q: task.q });
  const format = llm.prompt("format", { file: 'prompts/format.md' });
  const computed = llm.prompt(\`tone\`, \`Say \${task.q}\`);
  readline.prompt();
  inquirer.prompt([{ name: 'x' }]);
  llm.prompt('Not a name!', 'x');
  return system + format + computed;
});

function plan(model: LLM, q: string) {
  return model.prompt('planner', 'Plan: ' + q);
}
`;

test('TS: llm.prompt calls with a literal name and a seed; the seed as text, file or computed; other .prompt() calls left out', () => {
  const found = findTsPrompts('agent.ts', TS);
  assert.deepEqual(
    found.map((p) => [p.name, p.seed]),
    [
      ['system', { text: 'Answer from the record.\nBe brief.' }],
      ['format', { file: 'prompts/format.md' }],
      ['tone', null],
      ['planner', null],
    ],
  );
  assert.deepEqual(found[0]!.start, { line: 4, character: 17 });
  // Without an SDK import, only a receiver named llm counts (a helper file that imports nothing).
  const helper = `export const ask = (llm, m) => llm.prompt('system', 's') + m.prompt('other', 'o') + rl.prompt('x', 'y');`;
  assert.deepEqual(
    findTsPrompts('helper.js', helper).map((p) => p.name),
    ['system'],
  );
  assert.deepEqual(findTsPrompts('none.ts', 'const x = 1;'), []);
});

const PY = `import click
from agentlightning import rollout

@rollout
def solve(task, llm):
    system = llm.prompt("system", "You are\\n a {x} helper", vars={"x": 1})
    planner = llm.prompt("planner", {"file": "prompts/planner.md"})
    tone = llm.prompt("tone", f"Say {task}")
    joined = llm.prompt("joined", "a" "b")
    raw = llm.prompt(name="raw", seed=r'keep\\n')
    long = llm.prompt("long", """Line one.
Line two.""")
    click.prompt("name", "x")
    return 1.0

def helper(model):
    return model.prompt("helper", "hi")

session.prompt("module_level", "x")
`;

test('Python: llm.prompt calls (positional or keyword), string forms decoded, f-strings computed; click.prompt and module-level calls left out', async () => {
  const found = await findPyPrompts(PY);
  assert.deepEqual(
    found.map((p) => [p.name, p.seed]),
    [
      ['system', { text: 'You are\n a {x} helper' }],
      ['planner', { file: 'prompts/planner.md' }],
      ['tone', null],
      ['joined', { text: 'ab' }],
      ['raw', { text: 'keep\\n' }],
      ['long', { text: 'Line one.\nLine two.' }],
      ['helper', { text: 'hi' }],
    ],
  );
  assert.deepEqual(found[0]!.start, { line: 5, character: 13 });
  const parser = await pythonParser();
  const tree = parser.parse('x = "\\x41\\u00e9\\t"')!;
  assert.equal(pyStringValue(tree.rootNode.descendantsOfType('string')[0]), 'Aé\t');
  tree.delete();
});

test('each prompt names the agent that reads it: the one around the call, else the file only agent, else none', async () => {
  const ts = await findPrompts('file:///w/agents/desk.ts', TS);
  const desk = (await findAgents('file:///w/agents/desk.ts', TS))[0]!.id;
  assert.match(desk, /desk\.ts#deskAgent$/);
  assert.deepEqual(
    ts.map((p) => [p.name, p.agent]),
    [
      ['system', desk],
      ['format', desk],
      ['tone', desk],
      ['planner', desk], // a helper beside the file's only agent
    ],
  );
  const two = `import { rollout } from '../sdk/index.js';
export const a = rollout(async (t, llm) => llm.prompt('one', 'x'));
export const b = rollout(async (t, llm) => llm.prompt('two', 'y'));
export const shared = (llm) => llm.prompt('three', 'z');
`;
  assert.deepEqual(
    (await findPrompts('file:///w/two.ts', two)).map((p) => [p.name, p.agent]),
    [
      ['one', 'two.ts#a'],
      ['two', 'two.ts#b'],
      ['three', null],
    ],
  );
  const py = await findPrompts('file:///w/agents/solve.py', PY);
  assert.deepEqual(new Set(py.map((p) => p.agent)), new Set([(await findAgents('file:///w/agents/solve.py', PY))[0]!.id]));
  assert.equal(py[0]!.language, 'python');
});

const run = (o: Partial<PromptOptimization>): PromptOptimization => ({
  runId: 'opt-1',
  prompts: ['system'],
  status: 'succeeded',
  best: null,
  seed: null,
  rollouts: 0,
  budget: 100,
  updatedAt: 1,
  ...o,
});

test("a prompt's lens: a running optimization of it first, else its best, else none; what it reached in words", () => {
  const done = run({ runId: 'opt-a', best: 0.93, seed: 0.31, rollouts: 96, updatedAt: 5 });
  const worse = run({ runId: 'opt-b', best: 0.6, seed: 0.31, updatedAt: 9 });
  const other = run({ runId: 'opt-c', prompts: ['format'], best: 1, updatedAt: 10 });
  assert.equal(promptRun('system', [worse, done, other])?.runId, 'opt-a');
  assert.equal(promptRun('tone', [worse, done, other]), null);
  const running = run({ runId: 'opt-d', status: 'running', best: 0.5, seed: 0.31, rollouts: 40, budget: 120, updatedAt: 11 });
  assert.equal(promptRun('system', [done, running])?.runId, 'opt-d');
  assert.deepEqual(describePromptRun(done), {
    text: 'best val 0.93 (seed 0.31)',
    tooltip: 'Mean val score of the best candidate of the optimization opt-a (succeeded, 96 rollouts); the seed scored 0.31 on the same tasks.',
  });
  assert.equal(describePromptRun(running).text, 'optimizing: 40/120 rollouts · best val 0.50 (seed 0.31)');
  assert.equal(describePromptRun(run({ status: 'failed' })).text, 'failed, not scored');
  assert.equal(describePromptRun(run({ best: 0.4, seed: 0.4 })).text, 'best val 0.40');

  const prompt = {
    name: 'system',
    seed: { text: 'x' },
    agent: 'agents/desk.ts#deskAgent',
    language: 'typescript' as const,
    uri: 'file:///w/agents/desk.ts',
    range: { start: { line: 4, character: 17 }, end: { line: 4, character: 60 } },
  };
  const stats = {
    agent: prompt.agent,
    rollouts: 0,
    rolloutsCapped: false,
    headline: {} as never,
    active: 0,
    optimizations: [done],
    evals: [],
    promoted: [],
    reward: null,
  };
  const lenses = promptLensesFor(prompt, stats);
  assert.deepEqual(
    lenses.map((l) => [l.command?.title, l.command?.command, l.range.start.line]),
    [
      ['✦ Optimize "system" · best val 0.93 (seed 0.31)', 'agentLightning.optimizePrompt', 4],
      ['Optimization', 'agentLightning.openOptimizationView', 4],
    ],
  );
  assert.deepEqual(lenses[0]!.command?.arguments, [prompt]);
  assert.deepEqual(lenses[1]!.command?.arguments, ['opt-a']);
  assert.deepEqual(
    promptLensesFor({ ...prompt, agent: null }, undefined).map((l) => l.command?.title),
    ['✦ Optimize "system"'],
  );
});
