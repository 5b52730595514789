/**
 * What the optimization view derives from the daemon's data (webview/optimize/model.ts): the lineage as tree rows (a
 * merge under its first parent naming the other, an orphan at the top), the best candidate (highest val mean; the
 * summary's on a tie), each task's best score, which candidates the grid lists, and each prompt against its parent's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { OptimizationCandidate, OptimizationView } from '../../protocol/webview-optimize.js';
import { bestCandidate, gridCandidates, lineageRows, nextStep, promptChanges, reflectionProse, taskBests } from '../../webview/optimize/model.js';
import { candidateRecord } from './optimize-seed.js';

/** A candidate of run 'opt' as the view gets it (no val scores unless given); ids pc-opt-<ordinal>. */
const cand = (ordinal: number, parents: number[], o: Partial<OptimizationCandidate> = {}): OptimizationCandidate => ({
  ...candidateRecord('opt', ordinal, parents),
  val: {},
  valMean: null,
  rollouts: 0,
  ...o,
});
const id = (ordinal: number) => `pc-opt-${ordinal}`;

test('lineage: depth first from the seed, children by ordinal under their first parent; a merge names its other parents', () => {
  const cs = [cand(3, [1]), cand(0, []), cand(1, [0]), cand(2, [0]), cand(4, [3, 2]), cand(5, [9])];
  const rows = lineageRows(cs);
  assert.deepEqual(
    rows.map((r) => [r.candidate.ordinal, r.depth, r.children, r.alsoFrom.map((c) => c.ordinal)]),
    [
      [0, 0, 2, []],
      [1, 1, 1, []],
      [3, 2, 1, []],
      [4, 3, 0, [2]],
      [2, 1, 0, []],
      [5, 0, 0, []], // its parent is not in the run: at the top
    ],
  );
});

test('the best: the highest val mean, the summary naming one on a tie; none before a candidate is scored on every task', () => {
  const run = (bestCandidate?: string) => ({ summary: bestCandidate ? { bestCandidate } : {} }) as unknown as OptimizationView['run'];
  const cs = [cand(0, [], { valMean: 0.3 }), cand(1, [0], { valMean: 0.8 }), cand(2, [0], { valMean: 0.8 }), cand(3, [1])];
  assert.equal(bestCandidate({ run: run(), candidates: cs })?.id, id(1));
  assert.equal(bestCandidate({ run: run(id(2)), candidates: cs })?.id, id(2));
  assert.equal(bestCandidate({ run: run(id(0)), candidates: cs })?.id, id(1), 'a higher mean wins over the name');
  assert.equal(bestCandidate({ run: run(), candidates: [cand(0, [])] }), null);
});

test('the grid: candidates with a val score, by ordinal; the best score of each task', () => {
  const s = (score: number) => ({ score, feedback: null, rolloutId: 'r' });
  const cs = [cand(2, [0], { val: { a: s(1), b: s(0) } }), cand(0, [], { val: { a: s(0), b: s(0.5) } }), cand(1, [0])];
  assert.deepEqual(
    gridCandidates(cs).map((c) => c.id),
    [id(0), id(2)],
  );
  assert.deepEqual(
    [...taskBests({ candidates: cs, valTasks: ['a', 'b', 'c'] })],
    [
      ['a', 1],
      ['b', 0.5],
    ],
  );
});

test('prompt changes: the edited prompt first, each against the first parent, the seed as its own text', () => {
  const seed = cand(0, [], { prompts: { system: 'Be brief.', format: 'Plain.' } });
  const child = cand(1, [0], { prompts: { system: 'Be brief.', format: 'Plain. Dates as YYYY-MM-DD.' }, component: 'format' });
  const changes = promptChanges(child, [seed, child]);
  assert.deepEqual(
    changes.map((p) => [p.name, p.changed, p.diff.map((l) => l.op)]),
    [
      ['format', true, ['del', 'add']],
      ['system', false, []],
    ],
  );
  assert.deepEqual(
    promptChanges(seed, [seed, child]).map((p) => [p.name, p.parentText, p.changed]),
    [
      ['format', null, false],
      ['system', null, false],
    ],
  );
});

test("the reflection without the optimizer's fences: its new text named (the diff shows it), other blocks unfenced", () => {
  const prompts = { desk: 'Answer from the order record.\nGive dates as YYYY-MM-DD.' };
  const raw = `The answers wrote dates in words.\n\n\`\`\`text\n${prompts.desk}\n\`\`\``;
  assert.equal(reflectionProse(raw, prompts), 'The answers wrote dates in words.\n\n[the new text of desk: the diff shows it]');
  assert.equal(reflectionProse('Use this rule:\n```\nalways cite the id\n```\nthen stop.', prompts), 'Use this rule:\nalways cite the id\nthen stop.');
  assert.equal(reflectionProse(`\`\`\`\n${prompts.desk}\n\`\`\``, prompts), '[the answer was the new text only: the diff shows it]');
  assert.equal(reflectionProse('An open fence:\n```\nkeep the id', prompts), 'An open fence:\n\nkeep the id');
  assert.equal(reflectionProse('No fences at all.', prompts), 'No fences at all.');
});

test('the next step: promote the best (the command and Apply, and how to clear), or what is promoted and how to clear it', () => {
  const run = (status: string) => ({ id: 'opt', agent: 'desk.ts#deskAgent', status, summary: {} }) as unknown as OptimizationView['run'];
  const cs = [cand(0, [], { valMean: 0.3 }), cand(1, [0], { valMean: 0.5 }), cand(2, [1], { valMean: 0.9 })];
  const view = (status: string, promoted: OptimizationView['promoted'] = []) => ({ run: run(status), candidates: cs, promoted });
  assert.equal(
    nextStep(view('succeeded'), cs[2]!),
    'Next step: promote #2: agl optimize promote opt 2, or Apply…; the agent reads it instead of the seed until cleared: agl optimize promote opt --clear.',
  );
  assert.equal(nextStep(view('running'), cs[2]!), null, 'nothing to do while it runs');
  assert.equal(nextStep(view('succeeded'), cs[0]!), 'The seed is still the best: nothing to promote.');
  const promoted = { agent: 'desk.ts#deskAgent', name: 'system', text: 'x', candidateId: id(2), runId: 'opt', by: 'editor', promotedAt: 1 };
  assert.equal(
    nextStep(view('succeeded', [promoted]), cs[2]!),
    'Promoted #2: desk.ts#deskAgent reads its system instead of the seed, until cleared: agl optimize promote opt --clear.',
  );
  assert.match(
    nextStep(view('succeeded', [{ ...promoted, runId: 'opt-older', candidateId: 'pc-opt-older-4' }]), cs[2]!)!,
    /replaces the text promoted now, from opt-older/,
  );
});
