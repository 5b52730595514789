/**
 * What the optimizer reads and refuses, before any rollout: an answer read as a prompt (the last ``` block, else the
 * whole answer), the meta-prompts (shipped, overridden, checked), the candidate checks (placeholders kept and none
 * added, not empty, under the cap, not a duplicate), the per-val-task Pareto parent draw, and the terminal's diff.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { placeholders, refusal } from '../../daemon/optimize/checks.js';
import { critiqueFromAnswer, promptFromAnswer, readMetaPrompts, renderMeta } from '../../daemon/optimize/meta.js';
import type { OptimizeOutcome } from '../../daemon/optimize/optimize-run.js';
import { outcomeLines, printedLineDiff } from '../../daemon/optimize/report.js';
import { bestByMean, frontWeights, pickParent } from '../../daemon/optimize/selection.js';

test('an answer is read as the text inside its last ``` block, else as the whole answer', () => {
  assert.deepEqual(promptFromAnswer('Here it is:\n```text\nLine one.\n{question}\n```\nand more\n```\nsecond\n```'), { text: 'second' });
  assert.deepEqual(promptFromAnswer('  Just the prompt {x}.\n'), { text: 'Just the prompt {x}.' });
  assert.deepEqual(promptFromAnswer('```\n```'), { unusable: 'the ``` block of the answer is empty' });
  assert.deepEqual(promptFromAnswer('   \n'), { unusable: 'the answer is empty' });
  assert.match((promptFromAnswer('New version:\n```\nhalf a prompt') as { unusable: string }).unusable, /never closes/);
  assert.deepEqual(critiqueFromAnswer(' - add a rule\n'), { text: '- add a rule' });
});

test('an optimizer answer as real models write it: reasoning dropped, a draft and commentary around the last ``` block left out', () => {
  const answer = [
    '<think>The seed ignores refunds. A first try:\n```\nDraft {question}\n```\nToo short.</think>',
    'I quote the current prompt first:',
    '```text',
    'Answer the question. {question}',
    '```',
    'and here is the improved one:',
    '```text',
    'Answer the question; for refunds, cite the policy.',
    '{question}',
    '```',
    'This should fix the refund tasks.',
  ].join('\n');
  assert.deepEqual(promptFromAnswer(answer), { text: 'Answer the question; for refunds, cite the policy.\n{question}' });
  assert.deepEqual(promptFromAnswer('Thinking about it...</think>\nBe brief. {question}'), { text: 'Be brief. {question}' });
  assert.deepEqual(promptFromAnswer('<think>I would write ```\nx\n``` but'), { unusable: 'the answer holds nothing but reasoning (a <think> block)' });
  assert.match((promptFromAnswer('```\nfirst {q}\n```\nBetter:\n```\nsecond, cut') as { unusable: string }).unusable, /never closes/);
  assert.deepEqual(critiqueFromAnswer('<think>hmm</think>\n- cite the policy'), { text: '- cite the policy' });
  // A prompt that tells the agent to think in tags keeps them: only reasoning that begins the answer is dropped.
  const tagged = 'Here:\n```\nThink inside <think></think>, then answer.\n<think>\nsteps\n</think>\n{question}\n```';
  assert.deepEqual(promptFromAnswer(tagged), { text: 'Think inside <think></think>, then answer.\n<think>\nsteps\n</think>\n{question}' });
});

test('meta-prompts: the shipped ones fill their names in one pass; an override must use what its purpose is given', () => {
  const meta = readMetaPrompts();
  const text = renderMeta(meta.reflect, { prompt_name: 'desk', prompt: 'Say {{examples}} {question}', examples: 'EX', placeholders: '{question}' });
  assert.ok(text.includes('Say {{examples}} {question}'), 'a filled-in text is not read for names again');
  assert.ok(text.includes('EX') && text.includes('`desk`'));
  assert.equal(text.split('{{').length - 1, 1, "no name is left unfilled (the one left is the prompt's own text)");
  const dir = mkdtempSync(join(tmpdir(), 'agl-meta-'));
  writeFileSync(join(dir, 'edit.md'), 'Rewrite {{prompt}} please.');
  assert.throws(() => readMetaPrompts({ edit: join(dir, 'edit.md') }), /--meta-edit .*must use \{\{critique\}\}/);
  assert.throws(() => readMetaPrompts({ reflect: join(dir, 'none.md') }), /--meta-reflect .*no such file/);
  writeFileSync(join(dir, 'mine.md'), 'Mine: {{prompt}} / {{examples}}');
  assert.equal(readMetaPrompts({ reflect: join(dir, 'mine.md') }).reflect, 'Mine: {{prompt}} / {{examples}}');
});

test('candidate checks: every seed placeholder kept, none added, not empty, under the cap, not seen', () => {
  assert.deepEqual(placeholders('a {x} b {{ y }} c {x} {"json": 1}'), ['x', 'y']);
  const seen = new Set<string>();
  const ctx = { seed: { desk: 'Answer.\n\nRecord: {record}\nQuestion: {question}' }, maxChars: 80, seen: (p: Record<string, string>) => seen.has(p.desk!) };
  assert.equal(refusal({ desk: 'Answer well.\n\nRecord: {record}\nQuestion: {{question}}' }, ctx), null);
  assert.match(refusal({ desk: 'Answer well.\n\nRecord: {record}' }, ctx)!, /dropped the placeholder \{question\}/);
  assert.match(refusal({ desk: 'Answer {record} {question} for {customer}' }, ctx)!, /added the placeholder \{customer\}, which the agent does not fill/);
  assert.match(refusal({ desk: '  \n' }, ctx)!, /is empty/);
  assert.match(refusal({ desk: `${'x'.repeat(80)} {record} {question}` }, ctx)!, /over the cap of 80 \(--max-prompt-chars\)/);
  assert.match(refusal({}, ctx)!, /prompt desk is missing/);
  seen.add('Again {record} {question}');
  assert.equal(refusal({ desk: 'Again {record} {question}' }, ctx), 'identical to a candidate already scored');
});

test('parents come from the per-val-task Pareto front, drawn by the tasks each is best on', () => {
  const scores = new Map([
    ['seed', [0, 0, 0, 1]],
    ['a', [1, 1, 0, 1]],
    ['b', [0, 0, 1, 1]],
    ['dominated', [1, 0, 0, 1]],
  ]);
  assert.deepEqual(
    [...frontWeights(scores)],
    [
      ['a', 3],
      ['b', 2],
    ],
  );
  const draws = new Map<string, number>();
  let u = 0;
  for (let i = 0; i < 500; i++) {
    const id = pickParent(scores, () => (u = (u + 0.61803398875) % 1));
    draws.set(id, (draws.get(id) ?? 0) + 1);
  }
  assert.deepEqual([...draws.keys()].sort(), ['a', 'b']);
  assert.ok(Math.abs(draws.get('a')! / 500 - 0.6) < 0.02, `a drawn ${draws.get('a')} of 500 (3 of 5 wins)`);
  assert.equal(bestByMean(scores), 'a');
  assert.equal(
    bestByMean(
      new Map([
        ['seed', [1, 0]],
        ['later', [0, 1]],
      ]),
    ),
    'seed',
    'ties go to the earlier candidate',
  );
});

test('the terminal diff marks the seed lines removed and the new lines added', () => {
  assert.deepEqual(printedLineDiff('a\nb\nc', 'a\nx\nc\nd'), ['  a', '- b', '+ x', '  c', '+ d']);
  assert.deepEqual(printedLineDiff('same', 'same'), ['  same']);
});

test('the end says why the run stopped: a best solving every val task, or nothing left to try', () => {
  const o: OptimizeOutcome = {
    runId: 'opt-1',
    prompts: { desk: { seed: 'Answer {question}', best: 'Answer {question}\nSay yes or no.' } },
    scores: { seed: { val: 0.2, test: null }, best: { val: 1, test: null } },
    rollouts: 60,
    optimizerCalls: 2,
    candidates: 3,
    stopReason: 'completed',
    error: null,
    seedCandidate: 'pc-0',
    bestCandidate: 'pc-2',
    budget: 300,
    tokens: { prompt: 10, completion: 5 },
    cost: null,
    judge: null,
    seedFiles: {},
  };
  assert.match(outcomeLines(o)[0]!, /ended: the best solves every val task; 60 of 300 rollouts/);
  assert.doesNotMatch(outcomeLines(o)[0]!, /judge/);
  // With a judge as the reward its calls are said apart from the optimizer's, with their cost when priced.
  const judged = { ...o, cost: 0.5, judge: { calls: 58, tokens: { prompt: 41000, completion: 3100 }, cost: 0.01234 } };
  assert.match(
    outcomeLines(judged)[0]!,
    /2 optimizer calls \(10 \+ 5 tokens, cost 0\.5000\), 58 judge calls \(41000 \+ 3100 tokens, cost 0\.0123\), 3 candidates/,
  );
  assert.match(outcomeLines({ ...judged, judge: { ...judged.judge, cost: null } })[0]!, /58 judge calls \(41000 \+ 3100 tokens\), 3 candidates/);
  assert.match(outcomeLines({ ...o, scores: { ...o.scores, best: { val: 0.8, test: null } } })[0]!, /ended: nothing was left to try/);
  assert.ok(outcomeLines(o).includes('  + Say yes or no.'), outcomeLines(o).join('\n'));
});
