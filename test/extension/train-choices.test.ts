/**
 * "Train This Agent" choices without VS Code: the defaults found next to the agent (its train.yaml, model
 * folders such as a sample's SFT warm-up) and the `agl train` command line each choice becomes.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { AGENT_CONFIG_BUDGET, agentTrainConfig, nearbyCheckpoints, trainArgs } from '../../extension/train-choices.js';

test('the calc sample offers its train.yaml and its shipped warm-up', () => {
  const agent = resolve('samples/calc/agent.ts');
  assert.equal(agentTrainConfig(agent), resolve('samples/calc/train.yaml'));
  assert.deepEqual(nearbyCheckpoints(agent), [resolve('samples/calc/warmup')]);
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
