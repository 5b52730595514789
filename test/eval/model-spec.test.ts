/**
 * What `agl eval --model` (and `agl optimize --model`) serves, checked before any rollout: builtin:<size> and a model
 * folder as they are, a training run's folder (state.json) as its last step's checkpoint, as `agl serve --model` reads
 * it; a folder holding no model refused, naming what it lacks (not one gateway error per task).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { servedSourceOf } from '../../daemon/algorithm/served-policy-set.js';
import { EngineSection } from '../../daemon/algorithm/engine-config.js';
import { createPolicy } from '../../daemon/model/policy.js';

const engine = EngineSection.parse({});
let dir: string;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agl-model-spec-'));
  const policy = await createPolicy({ size: { dModel: 32, nLayers: 1, nHeads: 2 }, contextLength: 32, seed: 1, backend: 'cpu' });
  await policy.save(join(dir, 'run', 'policy-7'));
  policy.dispose();
  // A training run's checkpoint folder, as agl train leaves it: its state names the last step's policy folder.
  const trainer = { runId: 'run-x', step: 7, train: [], val: [] };
  writeFileSync(join(dir, 'run', 'state.json'), JSON.stringify({ trainer, policyDir: 'policy-7', agent: 'a.ts#a', config: {}, savedAt: 0 }));
  mkdirSync(join(dir, 'empty'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

test('builtin:<size> and a model folder serve themselves', () => {
  assert.deepEqual(servedSourceOf('builtin:0.8m', engine), { folder: 'builtin:0.8m', record: null, defaultSpec: 'builtin:0.8m' });
  const folder = join(dir, 'run', 'policy-7');
  assert.deepEqual(servedSourceOf(folder, engine), { folder, record: null, defaultSpec: folder });
});

test("a training run's folder serves its last step's checkpoint", () => {
  const last = join(dir, 'run', 'policy-7');
  assert.deepEqual(servedSourceOf(join(dir, 'run'), engine), { folder: last, record: null, defaultSpec: last });
});

test('a folder holding no model is refused before anything runs, naming what it lacks and what to give', () => {
  assert.throws(
    () => servedSourceOf(join(dir, 'empty'), engine),
    /empty holds no model \(no config\.json\): give builtin:<size>, a model folder, .* or a training run's folder/,
  );
  assert.throws(() => servedSourceOf(join(dir, 'nowhere'), engine), /nowhere holds no model/);
});
