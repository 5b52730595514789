/**
 * The one reading of the span conventions (protocol/span-reading.ts), run over the cases each reader was
 * tested with when it had its own copy: the algorithm's adapter and credit, the CodeLens stats, `agl rollouts
 * show`, the runner's print and the trajectory viewer. Where they disagreed the shared rule is spelled out:
 * v0's reward shape is read everywhere, the returned (`agl.reward.final`) reward is the final one, and an
 * orphan hangs under the rollout's root span.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  agentNames,
  finalReward,
  isFinalRewardSpan,
  numberArrayAttr,
  pickFinalReward,
  promptVersions,
  repairedParents,
  rewardOfSpan,
  rewardsInOrder,
  rolloutFeedback,
  rolloutScore,
  spanKind,
} from '../../protocol/span-reading.js';
import { AGL, AGL_V0_REWARD_PREFIX, GENAI, SPAN } from '../../protocol/spans.js';
import type { Span } from '../../protocol/store.js';

let seq = 0;
function span(p: Partial<Span> & { spanId: string; name: string; startTime: number }): Span {
  return {
    rolloutId: 'ro-1',
    attemptId: 'at-1',
    sequenceId: ++seq,
    traceId: 't',
    parentSpanId: null,
    kind: 'internal',
    endTime: p.startTime + 1,
    attributes: {},
    events: [],
    status: { code: 'ok' },
    resource: {},
    ...p,
  };
}
const reward = (spanId: string, startTime: number, attributes: Span['attributes']) => span({ spanId, name: SPAN.reward, startTime, attributes });
const v0 = (value: unknown, name = 'acc') => ({ [`${AGL_V0_REWARD_PREFIX}.0.name`]: name, [`${AGL_V0_REWARD_PREFIX}.0.value`]: value as number });

describe('span kind', () => {
  it('reads LLM calls by name or GenAI operation, tools likewise, the rest by our span names', () => {
    const cases: [Span, string][] = [
      [span({ spanId: 'a', name: SPAN.llmCall, startTime: 0 }), 'llm'],
      [span({ spanId: 'b', name: 'openai.chat', startTime: 0, attributes: { [GENAI.operationName]: 'chat' } }), 'llm'],
      [span({ spanId: 'c', name: 'complete', startTime: 0, attributes: { [GENAI.operationName]: 'text_completion' } }), 'llm'],
      [span({ spanId: 'd', name: SPAN.tool, startTime: 0 }), 'tool'],
      [span({ spanId: 'e', name: 'search', startTime: 0, attributes: { [GENAI.operationName]: 'execute_tool' } }), 'tool'],
      [reward('f', 0, { [AGL.rewardValue]: 1 }), 'reward'],
      [reward('g', 0, {}), 'reward'],
      [span({ spanId: 'h', name: SPAN.object, startTime: 0 }), 'object'],
      [span({ spanId: 'i', name: SPAN.message, startTime: 0 }), 'message'],
      [span({ spanId: 'j', name: SPAN.exception, startTime: 0 }), 'exception'],
      [span({ spanId: 'k', name: SPAN.agentRun, startTime: 0 }), 'agent'],
      [span({ spanId: 'l', name: 'plan', startTime: 0 }), 'operation'],
    ];
    for (const [s, kind] of cases) assert.equal(spanKind(s), kind, s.name);
  });
});

describe('rewards', () => {
  it("reads our shape and agent-lightning v0's on reward spans (adapter, stats and CLI cases; the viewer now reads v0 too)", () => {
    assert.deepEqual(rewardOfSpan(reward('r', 0, { [AGL.rewardValue]: 0.75, [AGL.rewardName]: 'exact' })), { value: 0.75, name: 'exact' });
    assert.deepEqual(rewardOfSpan(reward('r', 0, v0(0.75))), { value: 0.75, name: 'acc' });
    assert.deepEqual(rewardOfSpan(reward('r', 0, { [AGL.rewardValue]: 1, ...v0(0.25) })), { value: 1, name: null }, 'ours first');
    assert.equal(rewardOfSpan(reward('r', 0, { [AGL.rewardValue]: 'high' })), null);
    assert.equal(rewardOfSpan(reward('r', 0, v0(Number.NaN))), null);
    assert.equal(
      rewardOfSpan(span({ spanId: 'o', name: 'judge', startTime: 0, attributes: { [AGL.rewardValue]: 1 } })),
      null,
      'only agentlightning.reward spans carry rewards: what readers that query by name (CodeLens, list) see too',
    );
  });

  it('the final reward is the last in time order when none is marked (algorithm, stats and CLI: "the last reward wins")', () => {
    const spans = [reward('late', 50, { [AGL.rewardValue]: 1 }), reward('mid', 25, { [AGL.rewardValue]: 0.2 })];
    assert.deepEqual(
      rewardsInOrder(spans).map((r) => r.spanId),
      ['mid', 'late'],
    );
    assert.equal(finalReward(spans), 1);
    assert.equal(finalReward([]), null, 'no reward at all: none (credit.ts counts it 0)');
    assert.equal(finalReward([span({ spanId: 'c', name: SPAN.llmCall, startTime: 1 })]), null);
  });

  it("ties in end time go to the store's sequence id; an open span counts at its start", () => {
    const first = reward('first', 10, { [AGL.rewardValue]: 1 });
    const second = reward('second', 10, { [AGL.rewardValue]: 2 });
    assert.equal(finalReward([second, first]), 2);
    const open = span({ spanId: 'open', name: SPAN.reward, startTime: 100, endTime: null, attributes: { [AGL.rewardValue]: 3 } });
    assert.equal(finalReward([open, reward('early', 5, { [AGL.rewardValue]: 4 })]), 3);
  });

  it("the reward the agent returned (agl.reward.final) is final even when another arrives after it (the viewer's rule, now everyone's)", () => {
    const spans = [reward('returned', 30, { [AGL.rewardValue]: 1, [AGL.rewardFinal]: true }), reward('later', 40, { [AGL.rewardValue]: 0 })];
    assert.equal(isFinalRewardSpan(spans[0]), true);
    assert.equal(finalReward(spans), 1);
    assert.equal(pickFinalReward(rewardsInOrder(spans))?.spanId, 'returned');
    assert.equal(finalReward([reward('flag-is-a-boolean', 1, { [AGL.rewardValue]: 0.5, [AGL.rewardFinal]: 1 }), reward('b', 2, { [AGL.rewardValue]: 0 })]), 0);
  });
});

describe('feedback', () => {
  const reward = (spanId: string, startTime: number, value: number, feedback?: string, final = false) =>
    span({
      spanId,
      name: SPAN.reward,
      startTime,
      attributes: { [AGL.rewardValue]: value, ...(feedback !== undefined && { [AGL.rewardFeedback]: feedback }), ...(final && { [AGL.rewardFinal]: true }) },
    });
  const exception = (spanId: string, startTime: number, type: string, message: string) =>
    span({ spanId, name: SPAN.exception, startTime, attributes: { [AGL.exceptionType]: type, [AGL.exceptionMessage]: message }, status: { code: 'error' } });

  it("is the final reward's feedback, even when a later reward says something else", () => {
    const spans = [reward('a', 1, 0.5, 'format ok, wrong total', true), reward('b', 5, 1, 'a later grader')];
    assert.equal(rolloutFeedback(spans), 'format ok, wrong total');
  });

  it("else the latest reward's that has some (blank feedback says nothing)", () => {
    assert.equal(rolloutFeedback([reward('a', 1, 0, 'missed rule A'), reward('b', 2, 0, '  '), reward('c', 3, 1, undefined, true)]), 'missed rule A');
  });

  it('else the last error recorded: an exception span (type: message), or an error status message; none: null', () => {
    const failed = span({ spanId: 'f', name: 'tool', startTime: 9, status: { code: 'error', message: 'tool crashed' } });
    assert.equal(rolloutFeedback([exception('e', 2, 'ValueError', 'bad json'), reward('r', 3, 0)]), 'ValueError: bad json');
    assert.equal(rolloutFeedback([exception('e', 2, 'ValueError', 'bad json'), failed]), 'tool crashed');
    assert.equal(rolloutFeedback([reward('r', 1, 1), span({ spanId: 'ok', name: 'step', startTime: 2 })]), null);
    assert.equal(rolloutFeedback([]), null);
  });

  it("of an attempt that failed (its root span ended in error) is its error, before any reward's feedback", () => {
    const root = (message: string) => span({ spanId: 'root', name: SPAN.agentRun, startTime: 0, endTime: 20, status: { code: 'error', message } });
    const graded = reward('r', 2, 0.5, 'half right', true);
    assert.equal(
      rolloutFeedback([graded, root('rollout timed out after 5 s: the agent process was killed')]),
      'rollout timed out after 5 s: the agent process was killed',
    );
    assert.equal(rolloutFeedback([graded, exception('e', 3, 'TypeError', 'x is undefined'), root('x is undefined')]), 'x is undefined', 'the last error');
    assert.equal(rolloutFeedback([graded, span({ spanId: 'root', name: SPAN.agentRun, startTime: 0, endTime: 20 })]), 'half right', 'a root that ended ok');
  });
});

describe('score', () => {
  it('is the final reward of a rollout that succeeded (0 without one), and 0 for one that failed or was cancelled', () => {
    assert.equal(rolloutScore('succeeded', 0.75), 0.75);
    assert.equal(rolloutScore('succeeded', null), 0);
    assert.equal(rolloutScore('failed', 1), 0, 'a reward emitted before the failure does not count');
    assert.equal(rolloutScore('cancelled', null), 0);
  });
});

describe('prompt versions', () => {
  const read = (spanId: string, startTime: number, attrs: Record<string, string>) => span({ spanId, name: SPAN.prompt, startTime, attributes: attrs });
  const prompt = (name: string, source: string, version: string, sha: string, extra: Record<string, string> = {}) => ({
    [AGL.promptName]: name,
    [AGL.promptSource]: source,
    [AGL.promptVersion]: version,
    [AGL.promptSha]: sha,
    [AGL.promptTemplate]: `text of ${name} ${version}`,
    ...extra,
  });

  it('are one reading per prompt name and text, in the order first read, with how often each was read', () => {
    const spans = [
      read('p3', 30, prompt('system', 'candidate', 'pc-opt-1-2', 'aaaaaaaaaaaa')),
      read('p1', 10, prompt('planner', 'seed', 'seed', 'bbbbbbbbbbbb', { [AGL.promptFile]: '/repo/agent/prompts/planner.md' })),
      read('p2', 20, prompt('system', 'candidate', 'pc-opt-1-2', 'aaaaaaaaaaaa')),
      read('p4', 40, prompt('executor', 'promoted', 'pc-opt-0-7', 'cccccccccccc')),
      span({ spanId: 'llm', name: SPAN.llmCall, startTime: 15 }),
    ];
    assert.deepEqual(
      promptVersions(spans).map((r) => [r.name, r.source, r.version, r.sha, r.reads, r.spanId]),
      [
        ['planner', 'seed', 'seed', 'bbbbbbbbbbbb', 1, 'p1'],
        ['system', 'candidate', 'pc-opt-1-2', 'aaaaaaaaaaaa', 2, 'p2'],
        ['executor', 'promoted', 'pc-opt-0-7', 'cccccccccccc', 1, 'p4'],
      ],
    );
    const [planner] = promptVersions(spans);
    assert.equal(planner.file, '/repo/agent/prompts/planner.md');
    assert.equal(planner.template, 'text of planner seed');
    assert.equal(spanKind(spans[0]), 'prompt');
  });

  it('tell two texts of one version apart by their sha (a seed edited between reads), and skip spans missing what a reading needs', () => {
    const spans = [
      read('a', 1, prompt('system', 'seed', 'seed', '111111111111')),
      read('b', 2, prompt('system', 'seed', 'seed', '222222222222')),
      read('c', 3, prompt('system', 'guessed', 'seed', '333333333333')),
      read('d', 4, { [AGL.promptName]: 'system', [AGL.promptSource]: 'seed' }),
    ];
    assert.deepEqual(
      promptVersions(spans).map((r) => r.sha),
      ['111111111111', '222222222222'],
    );
  });
});

describe('parents and agents', () => {
  it('repairs broken parentage: missing parents go to the rollout root, self-parents and cycles are cut (adapter case)', () => {
    const spans = [
      span({ spanId: 'root', name: SPAN.agentRun, startTime: 0 }),
      span({ spanId: 'orphan', name: 'x', startTime: 1, parentSpanId: 'never-arrived' }),
      span({ spanId: 'a', name: 'a', startTime: 2, parentSpanId: 'b' }),
      span({ spanId: 'b', name: 'b', startTime: 3, parentSpanId: 'a' }),
      span({ spanId: 'self', name: 's', startTime: 4, parentSpanId: 'self' }),
    ];
    const parent = repairedParents(spans);
    assert.equal(parent.get('orphan'), 'root');
    assert.equal(parent.get('root'), null);
    assert.equal(parent.get('self'), null);
    const a = parent.get('a'),
      b = parent.get('b');
    assert.ok((a === 'root' && b === 'a') || (b === 'root' && a === 'b'), `a->${a}, b->${b}`);
  });

  it('without a rollout root an orphan is a root itself (the viewer case)', () => {
    const parent = repairedParents([span({ spanId: 'orphan', name: SPAN.reward, startTime: 50, parentSpanId: 'lost' })]);
    assert.equal(parent.get('orphan'), null);
  });

  it("names each span's agent: its own attribute (ours, then GenAI's), else the nearest ancestor's, across repaired parents", () => {
    const spans = [
      span({ spanId: 'root', name: SPAN.agentRun, startTime: 0, attributes: { [AGL.agentName]: 'sql' } }),
      span({ spanId: 'w', name: SPAN.operation, startTime: 1, parentSpanId: 'root', attributes: { [AGL.agentName]: 'writer' } }),
      span({ spanId: 'c1', name: SPAN.llmCall, startTime: 2, parentSpanId: 'w' }),
      span({ spanId: 'c2', name: SPAN.llmCall, startTime: 3, parentSpanId: 'root', attributes: { [GENAI.agentName]: 'checker' } }),
      span({ spanId: 'c3', name: SPAN.llmCall, startTime: 4, parentSpanId: 'lost' }),
      span({ spanId: 'c4', name: SPAN.llmCall, startTime: 5, parentSpanId: 'root', attributes: { [AGL.agentName]: '', [GENAI.agentName]: 'rewriter' } }),
    ];
    const names = agentNames(spans);
    assert.deepEqual(
      ['c1', 'c2', 'c3', 'c4'].map((id) => names.get(id)),
      ['writer', 'checker', 'sql', 'rewriter'],
    );
    assert.equal(agentNames([span({ spanId: 'x', name: SPAN.llmCall, startTime: 0 })]).get('x'), undefined);
  });
});

describe('token id attributes', () => {
  it('reads a JSON array or a JSON string of one; anything else is none', () => {
    assert.deepEqual(numberArrayAttr([1, 2]), [1, 2]);
    assert.deepEqual(numberArrayAttr('[-1,-3]'), [-1, -3]);
    assert.equal(numberArrayAttr('not json'), null);
    assert.equal(numberArrayAttr(['1']), null);
    assert.equal(numberArrayAttr(undefined), null);
  });
});
