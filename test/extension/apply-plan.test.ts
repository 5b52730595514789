/**
 * What Apply does with a candidate (extension/apply-plan.ts), before it asks: a prompt whose seed is a file gets the
 * candidate's text written into that file (and a promotion that would hide the file cleared), any other is promoted for
 * the run's agent; a prompt the agent reads already needs nothing; the question names every step.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyPlan, describePlan, seedFiles } from '../../extension/apply-plan.js';
import type { PromotedPrompt, PromptCandidate } from '../../protocol/prompts.js';
import type { TrainingRun } from '../../protocol/store.js';
import { candidateRecord } from '../webview/optimize-seed.js';

const AGENT = 'samples/apo/agent.ts#deskAgent';
const run = (summary: Record<string, unknown>): TrainingRun => ({
  id: 'opt-1',
  agent: AGENT,
  kind: 'optimize',
  status: 'succeeded',
  config: {},
  step: 0,
  totalSteps: 0,
  checkpointDir: null,
  summary,
  createdAt: 0,
  updatedAt: 0,
});
const cand = (ordinal: number, prompts: Record<string, string>): PromptCandidate =>
  candidateRecord('opt-1', ordinal, ordinal ? [0] : [], { prompts, component: null, decidedAt: 0 });
const promoted = (name: string, text: string): PromotedPrompt => ({ agent: AGENT, name, text, candidateId: null, runId: null, by: 'editor', promotedAt: 0 });

const SEED = cand(0, { system: 'Answer.', format: 'Plain.' });
const BEST = cand(3, { system: 'Answer from the record.', format: 'Plain. Dates as YYYY-MM-DD.' });
const FILES = { format: '/w/prompts/format.md', junk: 7 };
const disk = (files: Record<string, string>) => (path: string) => files[path] ?? null;

test('a file seed is written into its file, a string seed promoted; the question says which, for whom', () => {
  assert.deepEqual(seedFiles(run({ seedFiles: FILES })), { format: '/w/prompts/format.md' }, 'only paths are read');
  assert.deepEqual(seedFiles(run({ seedFiles: 'x' })), {});
  const plan = applyPlan(run({ seedFiles: FILES }), [SEED, BEST], BEST.id, [], disk({ '/w/prompts/format.md': 'Plain.' }));
  assert.equal(plan.candidate.id, BEST.id);
  assert.deepEqual(plan.steps, [
    { kind: 'promote', name: 'system', seed: 'Answer.', text: 'Answer from the record.' },
    { kind: 'file', name: 'format', file: '/w/prompts/format.md', current: 'Plain.', text: 'Plain. Dates as YYYY-MM-DD.', clearPromoted: false },
  ]);
  const { message, detail } = describePlan(plan, (f) => f.replace('/w/', ''));
  assert.equal(message, 'Apply candidate #3?');
  assert.equal(
    detail,
    `• "system": promote it for ${AGENT}: the agent reads it instead of the seed in its code until cleared ` +
      `(agl optimize promote ${BEST.runId} --clear clears it; agl optimize promote ${BEST.runId} 3 does the same as Apply)\n` +
      '• "format": write its text into prompts/format.md (the file is the prompt\'s seed)',
  );
});

test('what the agent reads already needs nothing; a promotion hiding a file seed is cleared; a missing file falls back to promoting', () => {
  const same = applyPlan(
    run({ seedFiles: FILES }),
    [SEED, BEST],
    BEST.id,
    [promoted('system', 'Answer from the record.')],
    disk({ '/w/prompts/format.md': BEST.prompts.format! }),
  );
  assert.deepEqual(
    same.steps.map((s) => s.kind),
    ['same', 'same'],
  );
  assert.match(describePlan(same).detail, /"system": nothing to do, it is already promoted for/);
  const hidden = applyPlan(run({ seedFiles: FILES }), [SEED, BEST], BEST.id, [promoted('format', 'Old promoted.')], disk({ '/w/prompts/format.md': 'Plain.' }));
  assert.deepEqual(hidden.steps[1], {
    kind: 'file',
    name: 'format',
    file: '/w/prompts/format.md',
    current: 'Plain.',
    text: BEST.prompts.format,
    clearPromoted: true,
  });
  assert.match(describePlan(hidden).detail, /and clear the text promoted for .*, which it reads instead of the file/);
  const gone = applyPlan(run({ seedFiles: FILES }), [SEED, BEST], BEST.id, [promoted('system', 'Earlier.')], disk({}));
  assert.deepEqual(gone.steps, [
    { kind: 'promote', name: 'system', seed: 'Earlier.', text: 'Answer from the record.' },
    { kind: 'promote', name: 'format', seed: 'Plain.', text: 'Plain. Dates as YYYY-MM-DD.' },
  ]);
  assert.throws(() => applyPlan(run({}), [SEED], 'pc-opt-1-9', [], disk({})), /candidate 'pc-opt-1-9' is not one of optimization opt-1's \(it has 1\)/);
});
