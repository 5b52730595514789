/**
 * An episode as text (protocol/episode-text.ts): what an LLM judge is sent and what the viewer shows. The task without
 * its expected answer, every LLM call in order with only the messages the conversation did not already hold, tool
 * calls and tool steps, errors, the episode's answer; never a reward or a judge's own spans. The viewer's reading of
 * messages and tool steps is this module's (one reading, not two copies).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cutMiddle, renderEpisode, renderTask, toolSteps } from '../../protocol/episode-text.js';
import { AGL, GENAI, SPAN } from '../../protocol/spans.js';
import type { Span } from '../../protocol/store.js';
import * as viewerModel from '../../webview/trajectory/model.js';

let seq = 0;
function span(name: string, t: number, attributes: Span['attributes'], extra: Partial<Span> = {}): Span {
  return {
    rolloutId: 'r1',
    attemptId: 'a1',
    sequenceId: ++seq,
    traceId: 't',
    spanId: `s${seq}`,
    parentSpanId: null,
    name,
    kind: 'internal',
    startTime: t,
    endTime: t + 1,
    attributes,
    events: [],
    status: { code: 'ok' },
    resource: {},
    ...extra,
  };
}
const chat = (t: number, input: unknown[], output: unknown[], agent?: string) =>
  span(SPAN.llmCall, t, {
    [GENAI.operationName]: 'chat',
    [GENAI.inputMessages]: JSON.stringify(input),
    [GENAI.outputMessages]: JSON.stringify(output),
    ...(agent ? { [AGL.agentName]: agent } : {}),
  });

describe('an episode as text', () => {
  it('shows the task without its expected-output fields, unless asked to', () => {
    const task = { question: 'Ann has 23 pens, gets 15 more. How many?', answer: 38, id: 'q1' };
    assert.equal(renderTask(task), 'question: Ann has 23 pens, gets 15 more. How many?\nid: q1');
    assert.match(renderTask(task, { showExpected: true }), /answer: 38/);
  });

  it('renders calls in order, each with only what the conversation did not hold, tool calls, tool steps and the answer', () => {
    const sys = { role: 'system', content: 'You add numbers.' };
    const user = { role: 'user', content: 'Ann has 23 pens, gets 15 more.' };
    const ask = { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'add', arguments: '{"a":23,"b":15}' } }] };
    const spans = [
      span(SPAN.agentRun, 0, { [AGL.agentName]: 'calc' }, { spanId: 'root' }),
      chat(1, [sys, user], [ask], 'calc'),
      span(SPAN.tool, 3, { [GENAI.toolName]: 'add', [GENAI.toolCallId]: 'c1', [GENAI.toolCallResult]: '38' }),
      chat(5, [sys, user, ask, { role: 'tool', tool_call_id: 'c1', content: '38' }], [{ role: 'assistant', content: 'Ann has 38 pens.' }], 'calc'),
      span(SPAN.reward, 7, { [AGL.rewardValue]: 1, [AGL.rewardFinal]: true, [AGL.rewardFeedback]: 'right' }),
      span(SPAN.object, 6, { [AGL.objectJson]: '{"answer":"38"}', [AGL.objectKind]: 'calc.final' }),
      span(SPAN.judge, 9, { [AGL.judgeScore]: 1, [AGL.judgeExplanation]: 'correct' }),
    ];
    assert.equal(
      renderEpisode(spans),
      [
        'LLM call #1 (calc):',
        '  [system] You add numbers.',
        '  [user] Ann has 23 pens, gets 15 more.',
        '  [assistant]',
        '    → tool call add({"a":23,"b":15})',
        'Tool: add({"a":23,"b":15}) → 38',
        'LLM call #2 (calc):',
        '  [tool] 38',
        '  [assistant] Ann has 38 pens.',
        'Final answer: {"answer":"38"}',
      ].join('\n'),
    );
  });

  it("says how a failed run failed, and an episode that recorded no answer says so; never the agent's reward", () => {
    const spans = [
      span(SPAN.agentRun, 0, {}, { status: { code: 'error', message: 'TypeError: x is undefined' } }),
      chat(1, ['2+2='], ['5']),
      span(SPAN.exception, 2, { [AGL.exceptionType]: 'TypeError', [AGL.exceptionMessage]: 'x is undefined' }),
      span(SPAN.reward, 3, { [AGL.rewardValue]: 0 }),
    ];
    const text = renderEpisode(spans);
    assert.match(text, /\[user\] 2\+2=\n {2}\[assistant\] 5/);
    const multi = renderEpisode([chat(1, [{ role: 'user', content: 'line one\nline two' }], ['a\nb'])]);
    assert.match(multi, /^ {2}\[user\] line one\n {4}line two\n {2}\[assistant\] a\n {4}b$/m);
    assert.match(text, /Error: TypeError: x is undefined/);
    assert.match(text, /Final answer: \(the agent recorded none\)/);
    assert.match(text, /The run failed: TypeError: x is undefined/);
    assert.doesNotMatch(text, /reward|0\.0|judge/i);
  });

  it('cuts a long episode in the middle, saying how much', () => {
    const long = `${'a'.repeat(500)}${'b'.repeat(500)}`;
    const cut = cutMiddle(long, 200);
    assert.ok(cut.length <= 230, String(cut.length));
    assert.ok(cut.startsWith('aaa') && cut.endsWith('bbb'));
    assert.match(cut, /\[\.\.\. 840 characters cut \.\.\.\]/);
    assert.equal(cutMiddle('short', 200), 'short');
  });

  it("the viewer reads messages and tool steps with this module's functions, not copies", () => {
    assert.equal(viewerModel.toolSteps, toolSteps);
  });
});
