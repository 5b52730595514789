/**
 * "Train This Agent" choices without VS Code: the defaults found next to the agent (its train.yaml, model
 * folders such as a sample's SFT warm-up), the task files it preselects (only the agent's own) and the
 * `agl train` command line each choice becomes.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import {
  AGENT_CONFIG_BUDGET,
  agentTrainConfig,
  configBudgetDetail,
  configTaskFiles,
  dataOptions,
  isCorpus,
  isDemonstrations,
  lastRunTaskFiles,
  nearbyCheckpoints,
  trainArgs,
} from '../../extension/train-choices.js';
import type { TrainingRun } from '../../protocol/store.js';

test('the calc sample offers its train.yaml and its shipped warm-up', () => {
  const agent = resolve('samples/calc/agent.ts');
  assert.equal(agentTrainConfig(agent), resolve('samples/calc/train.yaml'));
  assert.deepEqual(nearbyCheckpoints(agent), [resolve('samples/calc/warmup')]);
});

test("a Python agent trains on what the README beside it names, by the TypeScript agents' rule: calc-py's solve, the calc sample's data first", () => {
  const agent = resolve('samples/calc-py/calc_agent.py');
  const config = agentTrainConfig(agent);
  assert.equal(config, resolve('samples/calc/train.yaml'), "the --config of the README's agl train line for calc_agent.py");
  const sources = [{ origin: 'config' as const, files: configTaskFiles(config!) }];
  const workspaceFiles = ['samples/calc/data/demos.jsonl', 'samples/calc/data/test.jsonl', 'samples/sql/data/train.jsonl'].map((f) => resolve(f));
  const train = dataOptions('train', { agentFile: agent, sources, workspaceFiles });
  assert.deepEqual(
    train.owned.map((o) => [o.path, o.description]),
    [[resolve('samples/calc/data/train.jsonl'), "the agent's train.yaml"]],
  );
  const val = dataOptions('val', { agentFile: agent, sources, workspaceFiles, train: train.owned[0]!.path });
  assert.equal(val.owned[0]?.path, resolve('samples/calc/data/val.jsonl'));
});

test("the README's agl train line counts only for the agent it names, continued lines included", () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-readme-'));
  try {
    mkdirSync(join(dir, 'shared'));
    writeFileSync(join(dir, 'shared', 'train.yaml'), 'training: {}\n');
    mkdirSync(join(dir, 'py'));
    writeFileSync(join(dir, 'py', 'agent.py'), '');
    writeFileSync(join(dir, 'py', 'other.py'), '');
    writeFileSync(
      join(dir, 'py', 'README.md'),
      [
        '```',
        'agl train py/other.py:run --config shared/missing.yaml',
        'agl train py/agent.py:solve --train t.jsonl \\',
        '  --config shared/train.yaml',
        '```',
      ].join('\n'),
    );
    assert.equal(agentTrainConfig(join(dir, 'py', 'agent.py')), join(dir, 'shared', 'train.yaml'), 'found from the folder above the README');
    assert.equal(agentTrainConfig(join(dir, 'py', 'other.py')), null, 'a --config that exists nowhere is not offered');
    writeFileSync(join(dir, 'py', 'train.yaml'), 'training: {}\n');
    assert.equal(agentTrainConfig(join(dir, 'py', 'agent.py')), join(dir, 'py', 'train.yaml'), 'a train.yaml beside the agent wins');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('model folders are found up to two levels down; folders without weights, hidden ones and node_modules are not', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-choices-'));
  try {
    const model = (p: string, weights = 'model.safetensors') => {
      mkdirSync(join(dir, p), { recursive: true });
      writeFileSync(join(dir, p, 'config.json'), '{}');
      if (weights) writeFileSync(join(dir, p, weights), '');
    };
    writeFileSync(join(dir, 'agent.ts'), '');
    model('ckpt/sft');
    model('hf', 'model.safetensors.index.json');
    model('a/b/c/too-deep');
    model('no-weights', '');
    model('.hidden');
    model('node_modules/pkg');
    assert.deepEqual(nearbyCheckpoints(join(dir, 'agent.ts')), [join(dir, 'ckpt', 'sft'), join(dir, 'hf')]);
    assert.equal(agentTrainConfig(join(dir, 'agent.ts')), null);
    writeFileSync(join(dir, 'train.yml'), 'training: {}\n');
    assert.equal(agentTrainConfig(join(dir, 'agent.ts')), join(dir, 'train.yml'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the agent's train.yaml runs unchanged; a preset budget sets its flags over the budget file", () => {
  const settings = { groupSize: 4, storeUrl: '' };
  const base = { train: 't.jsonl', val: 'v.jsonl', model: 'samples/calc/warmup' };
  assert.deepEqual(trainArgs('calc/agent.ts#calcAgent', { ...base, budget: AGENT_CONFIG_BUDGET, config: 'calc/train.yaml' }, settings, 'budget.yaml'), [
    'train',
    'calc/agent.ts#calcAgent',
    '--train',
    't.jsonl',
    '--val',
    'v.jsonl',
    '--model',
    'samples/calc/warmup',
    '--config',
    'calc/train.yaml',
  ]);
  assert.deepEqual(trainArgs('a#b', { ...base, budget: 'short' }, { groupSize: 4, storeUrl: 'postgres://x/y' }, 'budget.yaml'), [
    'train',
    'a#b',
    '--train',
    't.jsonl',
    '--val',
    'v.jsonl',
    '--model',
    'samples/calc/warmup',
    '--config',
    'budget.yaml',
    '--group-size',
    '4',
    '--batch-size',
    '8',
    '--val-every',
    '5',
    '--max-steps',
    '10',
    '--store',
    'postgres://x/y',
  ]);
});

// Task files (#27 item 4): a file is preselected (listed first, where the pick highlights it) only when it is the
// agent's: its last choice here, its train.yaml's data:, its last run's. calc's demos.jsonl, which sorted first
// with samples/ open and was preselected for the sql agent, is never.

const calcData = (name: string) => resolve('samples/calc/data', name);
const sqlData = (name: string) => resolve('samples/sql/data', name);
const calcAgentFile = resolve('samples/calc/agent.ts');
const sqlAgentFile = resolve('samples/sql/agent.ts');
/** The JSONL files of the samples folder, as the extension lists them (sorted paths). */
const sampleFiles = ['calc/data/demos.jsonl', 'calc/data/test.jsonl', 'calc/data/train.jsonl', 'calc/data/val.jsonl']
  .map((p) => resolve('samples', p))
  .concat(['demos.jsonl', 'test.jsonl', 'train.jsonl', 'val.jsonl'].map(sqlData));
const paths = (list: { path: string }[]) => list.map((o) => o.path);
function run(createdAt: number, data?: { train: string; val: string }): TrainingRun {
  return {
    id: `r${createdAt}`,
    agent: 'a',
    kind: 'train',
    status: 'succeeded',
    config: {},
    step: 1,
    totalSteps: 1,
    checkpointDir: null,
    summary: data ? { data } : {},
    createdAt,
    updatedAt: createdAt,
  };
}

test("the samples' train.yaml name their task files: the agent's own are preselected, never calc's for sql", () => {
  assert.deepEqual(configTaskFiles(resolve('samples/calc/train.yaml')), { train: calcData('train.jsonl'), val: calcData('val.jsonl') });
  const sources = [{ origin: 'config' as const, files: configTaskFiles(resolve('samples/sql/train.yaml')) }];
  const train = dataOptions('train', { agentFile: sqlAgentFile, sources, workspaceFiles: sampleFiles });
  assert.deepEqual(train.owned, [{ path: sqlData('train.jsonl'), description: "the agent's train.yaml" }]);
  // The others: the agent's folder first (its demonstrations last there, and said to be), then calc's.
  assert.deepEqual(paths(train.others), [
    sqlData('test.jsonl'),
    sqlData('val.jsonl'),
    sqlData('demos.jsonl'),
    calcData('test.jsonl'),
    calcData('train.jsonl'),
    calcData('val.jsonl'),
    calcData('demos.jsonl'),
  ]);
  assert.equal(train.others.find((o) => o.path === calcData('demos.jsonl'))?.description, 'SFT demonstrations (agl sft), not tasks');
  const val = dataOptions('val', { agentFile: sqlAgentFile, sources, workspaceFiles: sampleFiles, train: sqlData('train.jsonl') });
  assert.deepEqual(paths(val.owned), [sqlData('val.jsonl')]);
  assert.ok(!paths(val.others).includes(sqlData('val.jsonl')));
});

test("no file known to be the agent's: nothing is preselected; the file next to the chosen training data is offered first", () => {
  const train = dataOptions('train', { agentFile: sqlAgentFile, sources: [{ origin: 'run', files: {} }], workspaceFiles: sampleFiles });
  assert.deepEqual(train.owned, []);
  assert.equal(train.others[0]?.path, sqlData('test.jsonl'), 'its folder first, but not preselected');
  const val = dataOptions('val', { agentFile: sqlAgentFile, sources: [], workspaceFiles: sampleFiles, train: calcData('train.jsonl') });
  assert.deepEqual(val.owned, []);
  assert.deepEqual(val.others[0], { path: calcData('val.jsonl'), description: 'next to the training data' });
});

test("the last training run's files (summary.data), the newest run that recorded them", () => {
  const runs = [
    run(1, { train: calcData('test.jsonl'), val: calcData('val.jsonl') }),
    run(3),
    run(2, { train: calcData('train.jsonl'), val: calcData('val.jsonl') }),
  ];
  const files = lastRunTaskFiles(runs);
  assert.deepEqual(files, { train: calcData('train.jsonl'), val: calcData('val.jsonl') });
  assert.deepEqual(lastRunTaskFiles([run(1)]), {});
  const train = dataOptions('train', { agentFile: calcAgentFile, sources: [{ origin: 'run', files }], workspaceFiles: sampleFiles });
  assert.deepEqual(train.owned, [{ path: calcData('train.jsonl'), description: 'its last training run' }]);
  // A run recorded on another machine (or a file moved since) is not offered.
  const gone = dataOptions('train', {
    agentFile: calcAgentFile,
    sources: [{ origin: 'run', files: { train: '/nowhere/train.jsonl' } }],
    workspaceFiles: sampleFiles,
  });
  assert.deepEqual(gone.owned, []);
  assert.ok(!paths(gone.others).includes('/nowhere/train.jsonl'));
});

test('demonstrations are never preselected as tasks, whatever names them', () => {
  const demos = calcData('demos.jsonl');
  const sources = [
    { origin: 'remembered' as const, files: { train: demos, val: demos } },
    { origin: 'config' as const, files: { train: demos } },
    { origin: 'run' as const, files: { train: demos, val: demos } },
  ];
  for (const role of ['train', 'val'] as const) {
    const o = dataOptions(role, { agentFile: calcAgentFile, sources, workspaceFiles: sampleFiles });
    assert.deepEqual(o.owned, [], role);
    const offered = o.others.find((x) => x.path === demos);
    assert.ok(offered?.description.includes('SFT demonstrations'), `${role}: ${offered?.description}`);
  }
  for (const f of ['demos.jsonl', 'demos-copy.jsonl', 'demos-doc.jsonl', 'sft_demos.jsonl', 'x.demonstrations.jsonl'])
    assert.ok(isDemonstrations(`/d/${f}`), f);
  for (const f of ['train.jsonl', 'demo-tasks.jsonl', 'democracy.jsonl']) assert.ok(!isDemonstrations(`/d/${f}`), f);
});

test("a corpus (documents an agent searches, as the rag sample's) is no task file: the pickers leave it out", () => {
  for (const f of ['corpus.jsonl', 'wiki-corpus.jsonl', 'documents.jsonl', 'docs_v2.jsonl', 'passages.jsonl']) assert.ok(isCorpus(`/d/${f}`), f);
  for (const f of ['train.jsonl', 'demos-doc.jsonl', 'doctor-tasks.jsonl', 'val.jsonl']) assert.ok(!isCorpus(`/d/${f}`), f);
});

test("the remembered choice wins over the train.yaml's and the last run's; a validation file pairs with the training file chosen", () => {
  const sources = [
    { origin: 'remembered' as const, files: { train: calcData('test.jsonl'), val: calcData('test.jsonl') } },
    { origin: 'config' as const, files: { train: calcData('train.jsonl'), val: calcData('val.jsonl') } },
    { origin: 'run' as const, files: { train: calcData('train.jsonl'), val: calcData('val.jsonl') } },
  ];
  const train = dataOptions('train', { agentFile: calcAgentFile, sources, workspaceFiles: sampleFiles });
  assert.deepEqual(train.owned, [
    { path: calcData('test.jsonl'), description: 'last used' },
    { path: calcData('train.jsonl'), description: "the agent's train.yaml · its last training run" },
  ]);
  assert.deepEqual(paths(dataOptions('val', { agentFile: calcAgentFile, sources, workspaceFiles: sampleFiles, train: calcData('test.jsonl') }).owned), [
    calcData('test.jsonl'),
    calcData('val.jsonl'),
  ]);
  // The user took the train.yaml's training file this time: its validation file comes with it.
  assert.deepEqual(paths(dataOptions('val', { agentFile: calcAgentFile, sources, workspaceFiles: sampleFiles, train: calcData('train.jsonl') }).owned), [
    calcData('val.jsonl'),
    calcData('test.jsonl'),
  ]);
  // What the e2e picks again by "last used": the remembered file is described so even when its train.yaml names it too.
  const same = dataOptions('train', {
    agentFile: calcAgentFile,
    sources: [{ origin: 'remembered', files: { train: calcData('train.jsonl') } }, sources[1]!],
    workspaceFiles: sampleFiles,
  });
  assert.deepEqual(same.owned, [{ path: calcData('train.jsonl'), description: "last used · the agent's train.yaml" }]);
});

test("a train.yaml's data: resolves from its folder; without one nothing; an invalid one is an error naming the file", () => {
  const dir = mkdtempSync(join(tmpdir(), 'agl-data-'));
  try {
    const config = join(dir, 'train.yaml');
    writeFileSync(config, 'data:\n  train: tasks/a.jsonl\n  val: /abs/b.jsonl\n');
    assert.deepEqual(configTaskFiles(config), { train: join(dir, 'tasks', 'a.jsonl'), val: '/abs/b.jsonl' });
    // Comments, quotes, the flow form, and the next top-level key ending the section (read without a YAML library).
    writeFileSync(config, '# settings\ndata: # the tasks\n  train: "tasks/a b.jsonl" # quoted\n\n  val: \'v.jsonl\'\nmodel:\n  train: no\n');
    assert.deepEqual(configTaskFiles(config), { train: join(dir, 'tasks', 'a b.jsonl'), val: join(dir, 'v.jsonl') });
    writeFileSync(config, 'data: { train: t.jsonl, val: v.jsonl }\n');
    assert.deepEqual(configTaskFiles(config), { train: join(dir, 't.jsonl'), val: join(dir, 'v.jsonl') });
    writeFileSync(config, 'training: {}\n');
    assert.deepEqual(configTaskFiles(config), { train: undefined, val: undefined });
    writeFileSync(config, 'data:\n  tasks: a.jsonl\n');
    assert.throws(
      () => configTaskFiles(config),
      (err: Error) => err.message.startsWith(`${config}: data:`),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the budget pick says the group size a train.yaml trains with, not the setting's", () => {
  // The samples' own: sql trains with 8 rollouts per task, whatever agentLightning.groupSize says.
  assert.equal(configBudgetDetail(resolve('samples/sql/train.yaml')), 'group size 8 · 8 tasks per step · 20 epochs · at most 20 min');
  const dir = mkdtempSync(join(tmpdir(), 'agl-budget-'));
  try {
    const config = join(dir, 'train.yaml');
    // Nested mappings (training.grpo) are skipped; keys left out take the schema's defaults (batch 16, 1 epoch).
    writeFileSync(config, 'training:\n  groupSize: 4 # per task\n  grpo:\n    epsilon: 0.2\n  maxSteps: 30\nmodel:\n  groupSize: 99\n');
    assert.equal(configBudgetDetail(config), 'group size 4 · 16 tasks per step · at most 30 steps');
    writeFileSync(config, 'model: { temperature: 0 }\n');
    assert.equal(configBudgetDetail(config), 'group size 8 · 16 tasks per step · 1 epoch');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
