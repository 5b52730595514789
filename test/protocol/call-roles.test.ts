/**
 * What the viewer says about a multi-agent episode, read from its spans (protocol/span-reading.ts, call-roles.ts):
 * its answer is what the agent returned or emitted, never an LLM reply; calls keep one number in every view; each
 * call says whether the run trained it and why, under the run's rule (policies: or training.agentMatch), and a role
 * the run leaves out never reads as trainable. (Whether a run can learn: training-health.test.ts.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeCalls, nonTrainingRoles, roleSelected, runRoles } from '../../protocol/call-roles.js';
import { canonicalJson, episodeAnswer, expectedOutput, expectedTaskFields, llmCallNumbers } from '../../protocol/span-reading.js';
import { AGL, SPAN } from '../../protocol/spans.js';
import type { Span, Transition } from '../../protocol/store.js';

let seq = 0;
function span(p: Partial<Span> & { spanId: string; name: string; startTime: number }): Span {
  return {
    rolloutId: 'ro-1',
    attemptId: 'at-1',
    sequenceId: ++seq,
    traceId: 't',
    parentSpanId: 'root',
    kind: 'internal',
    endTime: p.startTime + 1,
    attributes: {},
    events: [],
    status: { code: 'ok' },
    resource: {},
    ...p,
  };
}
const root = (attributes: Span['attributes'] = {}) => span({ spanId: 'root', parentSpanId: null, name: SPAN.agentRun, startTime: 0, attributes });
const call = (spanId: string, startTime: number, agent: string, reply: string, extra: Span['attributes'] = {}) =>
  span({
    spanId,
    name: SPAN.llmCall,
    startTime,
    attributes: {
      [AGL.agentName]: agent,
      'gen_ai.output.messages': JSON.stringify([{ role: 'assistant', content: reply }]),
      [AGL.promptTokenIds]: '[1,2]',
      [AGL.completionTokenIds]: '[3]',
      ...extra,
    },
  });
const object = (spanId: string, startTime: number, value: unknown, kind?: string, parentSpanId = 'root') =>
  span({
    spanId,
    name: SPAN.object,
    startTime,
    parentSpanId,
    attributes: { [AGL.objectJson]: JSON.stringify(value), ...(kind ? { [AGL.objectKind]: kind } : {}) },
  });

/** sql as it runs: the writer drafts, the checker rejects, the rewriter repairs, the checker says "yes". */
function sqlEpisode(): Span[] {
  return [
    root({ [AGL.agentName]: 'sqlAgent' }),
    call('w', 10, 'writer', 'SELECT nme FROM employees'),
    call('c1', 20, 'checker', 'no'),
    call('r', 30, 'rewriter', 'SELECT name FROM employees'),
    call('c2', 40, 'checker', 'yes'),
    object('final', 50, { sql: 'SELECT name FROM employees', result: 'Ann\nBob' }, 'sql.final'),
    object('gold', 51, { sql: 'SELECT name FROM employees', result: 'Ann\nBob' }, 'sql.expected'),
  ];
}

describe("an episode's answer", () => {
  it("is the object the agent emitted as final, never the last LLM reply (sql's checker says 'yes')", () => {
    const a = episodeAnswer(sqlEpisode());
    assert.equal(a.source, 'emitted');
    assert.deepEqual(a.value, { sql: 'SELECT name FROM employees', result: 'Ann\nBob' });
    assert.equal(a.kind, 'sql.final');
    assert.equal(a.key, canonicalJson({ result: 'Ann\nBob', sql: 'SELECT name FROM employees' }), 'keys sorted: equal answers, equal keys');
    assert.deepEqual(expectedOutput(sqlEpisode())?.value, { sql: 'SELECT name FROM employees', result: 'Ann\nBob' });
  });

  it('is what the agent function returned first, else its own last object, else none', () => {
    assert.deepEqual(episodeAnswer([root({ [AGL.rolloutResult]: '"Paris"' }), call('a', 1, 'x', 'Lyon')]).value, 'Paris');
    // Its own object (not a sub-agent's, not an expected output).
    const own = [
      root(),
      call('a', 1, 'x', 'reply'),
      object('o1', 2, { answer: 4 }),
      object('sub', 3, { draft: 1 }, undefined, 'op'),
      object('e', 4, 5, 'expected'),
    ];
    own.push(span({ spanId: 'op', name: 'planner', startTime: 2.5, attributes: { [AGL.agentName]: 'planner' } }));
    assert.deepEqual(episodeAnswer(own).value, { answer: 4 });
    const none = episodeAnswer([root(), call('a', 1, 'x', 'an LLM reply')]);
    assert.equal(none.source, 'none');
    assert.equal(none.key, '');
  });

  it("finds a task's expected fields by name", () => {
    assert.deepEqual(expectedTaskFields({ id: 't', question: 'q?', answer: 38, gold: 'SELECT 1' }), [
      { key: 'answer', value: 38 },
      { key: 'gold', value: 'SELECT 1' },
    ]);
    assert.deepEqual(expectedTaskFields('plain text'), []);
  });
});

describe('calls: one number, a role, trained or not and why', () => {
  const transition = (spanId: string, step: number): Transition => ({
    runId: 'run-1',
    step,
    rolloutId: 'ro-1',
    attemptId: 'at-1',
    spanId,
    groupId: 'g1',
    index: 0,
    agentName: null,
    reward: 1,
    credit: 1,
    advantage: 0.5,
    promptTokens: 2,
    completionTokens: 1,
  });

  it('numbers the calls by start, whatever their role, and keeps the numbers when spans arrive out of order', () => {
    const spans = sqlEpisode();
    const numbers = llmCallNumbers([...spans].reverse());
    assert.deepEqual(Object.fromEntries(numbers), { w: 1, c1: 2, r: 3, c2: 4 });
  });

  it('with policies: the listed roles are trained, the others served untrained by the default policy, and say so', () => {
    const roles = runRoles('run-1', {
      model: { name: 'samples/sql/warmup' },
      training: { agentMatch: '^(writer|rewriter)$' },
      policies: { writer: {}, rewriter: { shared: 'writer' } },
    });
    assert.deepEqual(roles.policies, { writer: 'writer', rewriter: 'writer' });
    assert.equal(roles.defaultModel, 'warmup');
    assert.match(
      roles.rule,
      /trains writer \(own policy\), rewriter \(policy writer, shared\); every other role is served, untrained, by the default policy \(warmup\)/,
    );
    assert.equal(roleSelected(roles, 'checker'), false);
    const spans = sqlEpisode().map((s) =>
      s.spanId === 'w' ? { ...s, attributes: { ...s.attributes, [AGL.policyName]: 'writer', [AGL.policyVersion]: 3 } } : s,
    );
    const calls = describeCalls(spans, [transition('w', 3)], { mode: 'train', roles });
    assert.deepEqual(
      calls.map((c) => [c.number, c.role, c.training]),
      [
        [1, 'writer', 'trained'],
        [2, 'checker', 'not-selected'],
        [3, 'rewriter', 'pending'],
        [4, 'checker', 'not-selected'],
      ],
    );
    assert.equal(calls[0]!.policy, 'writer');
    assert.equal(calls[0]!.policyVersion, 3);
    assert.match(calls[0]!.why, /Trained in run run-1 at step 3 \(group g1\): role writer has its own policy/);
    assert.match(
      calls[1]!.why,
      /Not trained: run run-1 trains only writer, rewriter \(the roles given a policy of their own\); role checker is served by the default policy \(warmup\), untrained/,
    );
    assert.doesNotMatch(calls[1]!.why, /can be trained/);
    assert.match(calls[2]!.why, /Selected \(role rewriter shares policy writer\) but not trained yet/);
  });

  it('with agentMatch only: a role it does not match is not trained; validation calls are held out; no token ids, no training', () => {
    const roles = runRoles('run-2', { training: { agentMatch: '^writer$' } });
    assert.match(roles.rule, /trains the roles matching training.agentMatch \^writer\$/);
    const spans = sqlEpisode().map((s) => (s.spanId === 'r' ? { ...s, attributes: { ...s.attributes, [AGL.completionTokenIds]: '[]' } } : s));
    const val = describeCalls(spans, [], { mode: 'val', roles });
    assert.deepEqual(
      val.map((c) => c.training),
      ['held-out', 'not-selected', 'not-selected', 'not-selected'],
    );
    assert.match(val[1]!.why, /role checker does not match run run-2's training.agentMatch \^writer\$/);
    const all = describeCalls(spans, [], { mode: 'train', roles: runRoles('run-3', {}) });
    assert.deepEqual(
      all.map((c) => c.training),
      ['pending', 'pending', 'no-token-ids', 'pending'],
    );
    assert.equal(describeCalls(spans, [], { mode: 'test', roles: null })[0]!.training, 'no-run');
  });

  it("an eval's or an optimization's rollout says what it was (which model on which row; which candidate of which run), never training's rule", () => {
    // An upstream model records no token ids: an eval's call must not read "no token ids were recorded", nor its run "trains every call".
    const spans = sqlEpisode().map((s) => ({ ...s, attributes: { ...s.attributes, [AGL.completionTokenIds]: '[]' } }));
    const evalConfig = { agent: 'calc', llm: { upstream: { model: 'gpt-4o-mini' }, model: null }, data: { file: '/w/calc/calc.eval.jsonl' } };
    const evaluation = nonTrainingRoles('eval-7', 'eval', evalConfig);
    assert.equal(evaluation.rule, 'evaluates gpt-4o-mini on calc.eval: an eval grades the agent and trains nothing');
    const graded = describeCalls(spans, [], { mode: 'test', roles: evaluation, place: { taskId: 't3', sample: 1 } });
    assert.deepEqual(new Set(graded.map((c) => c.training)), new Set(['not-training']));
    assert.equal(
      graded[0]!.why,
      'Not trained: an eval rollout of run eval-7, gpt-4o-mini on calc.eval row t3 (sample 2); an eval grades the agent and trains nothing.',
    );
    const optimization = nonTrainingRoles('opt-2', 'optimize', { llm: { upstream: null, model: 'warmup' }, prompts: ['system'], algorithm: 'gepa' });
    assert.equal(
      optimization.rule,
      'optimizes prompt "system" (gepa), running the agent with warmup on each candidate\'s texts: it changes prompts and trains no weights',
    );
    const scored = describeCalls(sqlEpisode(), [], { mode: 'train', roles: optimization, place: { candidate: 'pc-opt-2-2', split: 'val', taskId: 'q1' } });
    assert.equal(
      scored[0]!.why,
      "Not trained: candidate #2's rollout in optimization opt-2 on its val split, row q1; an optimization scores prompt texts and trains no weights.",
    );
    assert.ok(scored.every((c) => c.training === 'not-training' && !/trains every call|token ids/.test(c.why)));
  });
});
