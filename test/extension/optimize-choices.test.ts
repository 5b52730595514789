/**
 * What Optimize This Prompt offers (extension/optimize-choices.ts, and the task-file options it shares with Train): the
 * agent's prompts with the one asked for first, the least budget the task files need, the test file offered beside the
 * training file, the task files of the agent's last optimization, endpoints checked before anything runs, and a
 * finished run in words.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  agentPromptNames,
  describeOptimization,
  endpointProblem,
  improved,
  lastOptimizeTaskFiles,
  leastBudget,
  OPTIMIZE_BUDGETS,
  optimizeArgs,
  type OptimizeChoice,
} from '../../extension/optimize-choices.js';
import { dataOptions } from '../../extension/train-choices.js';
import { readFlags } from '../../daemon/commands/flags.js';
import { planFromFlags } from '../../daemon/optimize/run-plan.js';
import { OPTIMIZE_COMMAND } from '../../protocol/optimize-options.js';
import type { PromptInfo } from '../../protocol/lsp.js';
import type { TrainingRun } from '../../protocol/store.js';

const AGENT = 'samples/apo/agent.ts#deskAgent';
const prompt = (name: string, agent: string | null): PromptInfo => ({
  name,
  seed: null,
  agent,
  language: 'typescript',
  uri: 'file:///w/a.ts',
  range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } },
});
const run = (o: Partial<TrainingRun>): TrainingRun => ({
  id: 'opt-1',
  agent: AGENT,
  kind: 'optimize',
  status: 'succeeded',
  config: {},
  step: 0,
  totalSteps: 120,
  checkpointDir: null,
  summary: {},
  createdAt: 0,
  updatedAt: 0,
  ...o,
});

test("the agent's prompts, the one asked for first, each once; another agent's left out", () => {
  const all = [prompt('executor', AGENT), prompt('planner', AGENT), prompt('system', 'other.ts#x'), prompt('executor', AGENT)];
  assert.deepEqual(agentPromptNames(all, AGENT, 'planner'), ['planner', 'executor']);
  assert.deepEqual(agentPromptNames([], AGENT, 'system'), ['system'], 'a prompt the finder did not attribute is still offered');
});

test('the least budget: the probe, the seed on val, the test set twice in reserve, one proposal; the presets grow', () => {
  assert.equal(leastBudget(14, 35), 1 + 14 + 70 + 6 + 14);
  assert.equal(leastBudget(6, 0), 1 + 6 + 6 + 6);
  const rollouts = OPTIMIZE_BUDGETS.map((b) => b.rollouts);
  assert.deepEqual(
    rollouts,
    [...rollouts].sort((a, b) => a - b),
  );
});

test("the test file: the one beside the training file offered first; the agent's last optimization's preselected", () => {
  const files = ['/w/apo/data/train.jsonl', '/w/apo/data/val.jsonl', '/w/apo/data/test.jsonl', '/w/calc/data/test.jsonl'];
  const exists = (p: string) => files.includes(p);
  const fresh = dataOptions('test', { agentFile: '/w/apo/agent.ts', sources: [], workspaceFiles: files, train: files[0], exists });
  assert.deepEqual(fresh.owned, [], 'nothing is preselected when no file is known to be the agent’s');
  assert.deepEqual(fresh.others[0], { path: '/w/apo/data/test.jsonl', description: 'next to the training data' });
  const last = lastOptimizeTaskFiles([
    run({ createdAt: 1, config: { data: { train: '/old/train.jsonl', val: '/old/val.jsonl', test: null } } }),
    run({ createdAt: 2, config: { data: { train: files[0], val: files[1], test: files[2] } } }),
    run({ createdAt: 3, config: {} }),
  ]);
  assert.deepEqual(last, { train: files[0], val: files[1], test: files[2] });
  const owned = dataOptions('test', {
    agentFile: '/w/apo/agent.ts',
    sources: [{ origin: 'optimization', files: last }],
    workspaceFiles: files,
    train: files[0],
    exists,
  });
  assert.deepEqual(owned.owned, [{ path: files[2], description: 'its last optimization · next to the training data' }]);
  assert.deepEqual(lastOptimizeTaskFiles([run({ config: { data: { train: '/t.jsonl', val: '/v.jsonl', test: null } } })]), {
    train: '/t.jsonl',
    val: '/v.jsonl',
  });
});

test('an endpoint is an http(s) URL, said before anything runs', () => {
  assert.equal(endpointProblem('https://llm.example.com/v1'), null);
  assert.equal(endpointProblem('http://localhost:11434/v1'), null);
  assert.match(endpointProblem('llm.example.com')!, /is not a URL: give the server's base URL/);
  assert.match(endpointProblem('ftp://x/v1')!, /not an http\(s\) URL/);
});

test('a finished optimization in words; improved only when the best is not the seed', () => {
  const done = run({
    step: 118,
    summary: {
      rollouts: 118,
      budget: 120,
      candidates: 14,
      optimizerCalls: 9,
      seedCandidate: 'pc-opt-1-0',
      bestCandidate: 'pc-opt-1-7',
      scores: { seed: { val: 0.333, test: 0.25 }, best: { val: 0.917, test: 0.9 } },
    },
  });
  assert.equal(describeOptimization(done), 'val 0.33 → 0.92, test 0.25 → 0.90 (held out); 118 of 120 rollouts, 14 candidates, 9 optimizer calls');
  assert.equal(improved(done), true);
  const same = run({ summary: { seedCandidate: 'a', bestCandidate: 'a', scores: { seed: { val: 0.5, test: null }, best: { val: 0.5, test: null } } } });
  assert.equal(describeOptimization(same), 'val 0.50 → 0.50; 0 of 120 rollouts');
  assert.equal(improved(same), false);
  const early = run({
    status: 'cancelled',
    summary: { rollouts: 0, budget: 45, scores: { seed: { val: null, test: null }, best: { val: null, test: null } } },
  });
  assert.equal(describeOptimization(early), '0 of 45 rollouts', 'stopped before the seed was scored: no scores to say');
});

const choice = (o: Partial<OptimizeChoice>): OptimizeChoice => ({
  prompts: ['desk'],
  train: 'samples/apo/data/train.jsonl',
  val: 'samples/apo/data/val.jsonl',
  test: 'samples/apo/data/test.jsonl',
  budget: leastBudget(14, 35),
  agentModel: { kind: 'upstream', url: 'http://127.0.0.1:9/v1', model: 'desk-agent', keyEnv: 'AGENT_KEY' },
  optimizer: { url: 'https://api.example.com/v1', model: 'big', keyEnv: 'OPT_KEY' },
  ...o,
});

/** What `agl optimize` makes of the arguments a choice becomes: its own parser and plan (no run). */
function planned(c: OptimizeChoice) {
  const args = optimizeArgs(AGENT, c);
  assert.equal(args[0], 'optimize');
  const { values, positionals } = readFlags(OPTIMIZE_COMMAND, args.slice(1));
  assert.deepEqual(positionals, [AGENT]);
  assert.equal(values.json, true, '--json: the one stdout line is the result');
  return planFromFlags(AGENT, values).config;
}

test('a choice becomes an agl optimize command line that agl optimize plans as chosen; the least budget is what agl optimize asks for', () => {
  const c = planned(choice({ prompts: ['planner', 'executor'] }));
  assert.deepEqual(c.prompts, ['planner', 'executor']);
  assert.equal(c.budget, leastBudget(14, 35));
  assert.match(c.data.test!, /samples\/apo\/data\/test\.jsonl$/);
  assert.deepEqual(c.llm, { upstream: { url: 'http://127.0.0.1:9/v1', model: 'desk-agent', keyEnv: 'AGENT_KEY' }, model: null });
  assert.deepEqual([c.optimizer.url, c.optimizer.model, c.optimizer.keyEnv], ['https://api.example.com/v1', 'big', 'OPT_KEY']);
  const served = planned(choice({ test: null, budget: leastBudget(14, 0), agentModel: { kind: 'served' } }));
  assert.deepEqual(served.llm, { upstream: null, model: null }, "the daemon's model: no flag");
  assert.equal(served.data.test, null);
  // Below what the seed alone takes, agl optimize refuses and asks for the least the picks offer.
  assert.throws(() => planned(choice({ budget: 1 + 14 + 2 * 35 - 1 })), new RegExp(`--budget 84 is too small: .* give at least ${leastBudget(14, 35)}$`));
});
