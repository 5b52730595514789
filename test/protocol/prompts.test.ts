/**
 * Prompt optimization's data model at the edge (protocol/prompts.ts, store.ts, events.ts): what a candidate must say
 * (a prompt at least, its component among them, not its own parent), the ids a resumed run makes again, the rollout
 * metadata an optimization writes read safely, and the change events of its records merged and attributed to its run.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PromptCandidateInput, PromotePromptInput, candidateId } from '../../protocol/prompts.js';
import { TrainingRun, readRolloutMetadata } from '../../protocol/store.js';
import { StoreChange, changedOptimizationIds, isEmptyChange, mergeChanges } from '../../protocol/events.js';

const seed = {
  id: 'pc-r-0',
  runId: 'r',
  ordinal: 0,
  prompts: { system: 'Answer.' },
  parents: [],
  origin: 'seed',
  component: null,
  reflection: null,
  minibatch: null,
};
const issues = (value: unknown) => {
  const r = PromptCandidateInput.safeParse(value);
  return r.success ? [] : r.error.issues.map((i) => [i.path.join('.'), i.message]);
};

describe('prompt candidates at the edge', () => {
  it('fills in a new candidate: proposed, no reason, no scores, no resources', () => {
    const parsed = PromptCandidateInput.parse(seed);
    assert.deepEqual([parsed.status, parsed.reason, parsed.scores, parsed.resourcesId], ['proposed', null, { minibatch: null, val: null, test: null }, null]);
    assert.equal(candidateId('opt-1', 3), 'pc-opt-1-3');
  });

  it('names what is wrong: no prompt, a component that is none of them, itself as a parent, a bad prompt name, an unknown field', () => {
    assert.deepEqual(issues({ ...seed, prompts: {} }), [['prompts', 'a candidate holds at least one prompt: give { name: text }']]);
    assert.deepEqual(issues({ ...seed, component: 'critic' }), [['component', "'critic' is none of the candidate's prompts (system)"]]);
    assert.deepEqual(issues({ ...seed, parents: [seed.id] }), [['parents', 'a candidate is not its own parent']]);
    assert.deepEqual(
      issues({ ...seed, prompts: { 'sys tem': 'x' } }).map(([path]) => path),
      ['prompts.sys tem'],
    );
    assert.deepEqual(
      issues({ ...seed, score: 1 }).map(([path]) => path),
      [''],
    );
    assert.equal(PromotePromptInput.parse({ agent: 'a', name: 'system', text: 't', candidateId: null, by: 'editor' }).runId, null);
  });
});

describe('what an optimization writes beside its records', () => {
  it("reads a rollout's candidate and split safely: a key of the wrong type is left out", () => {
    assert.deepEqual(readRolloutMetadata({ runId: 'opt-1', candidate: 'pc-1', split: 'val', taskId: 't1' }), {
      runId: 'opt-1',
      candidate: 'pc-1',
      split: 'val',
      taskId: 't1',
    });
    assert.deepEqual(readRolloutMetadata({ candidate: 5, split: 'dev', note: 'kept' }), { note: 'kept' });
  });

  it('reads a run stored without a kind as a training run', () => {
    const stored = {
      id: 'run-1',
      agent: 'a',
      status: 'running',
      config: {},
      step: 0,
      totalSteps: 1,
      checkpointDir: null,
      summary: {},
      createdAt: 1,
      updatedAt: 1,
    };
    assert.equal(TrainingRun.parse(stored).kind, 'train');
    assert.equal(StoreChange.parse({ runs: [{ id: 'run-1', agent: 'a', status: 'running', step: 0, totalSteps: 1 }] }).runs[0]!.kind, 'train');
  });

  it('merges its changes (the latest state of a candidate, the highest call seq) and names the optimizations they concern', () => {
    const a = StoreChange.parse({ candidates: [{ id: 'pc-1', runId: 'opt-1', status: 'proposed' }], optimizerCalls: [{ runId: 'opt-1', seq: 4 }] });
    const b = StoreChange.parse({
      candidates: [{ id: 'pc-1', runId: 'opt-1', status: 'accepted' }],
      optimizerCalls: [{ runId: 'opt-1', seq: 2 }],
      promotedPrompts: [{ agent: 'a', name: 'system' }],
      runs: [
        { id: 'opt-2', agent: 'a', kind: 'optimize', status: 'running', step: 0, totalSteps: 0 },
        { id: 'run-3', agent: 'a', kind: 'train', status: 'running', step: 1, totalSteps: 2 },
      ],
    });
    const merged = mergeChanges(a, b);
    assert.deepEqual(merged.candidates, [{ id: 'pc-1', runId: 'opt-1', status: 'accepted' }]);
    assert.deepEqual(merged.optimizerCalls, [{ runId: 'opt-1', seq: 4 }]);
    assert.deepEqual(merged.promotedPrompts, [{ agent: 'a', name: 'system' }]);
    assert.deepEqual(changedOptimizationIds(merged).sort(), ['opt-1', 'opt-2']);
    assert.equal(isEmptyChange(StoreChange.parse({ promotedPrompts: [{ agent: 'a', name: 'system' }] })), false);
    assert.equal(isEmptyChange(StoreChange.parse({})), true);
  });
});
