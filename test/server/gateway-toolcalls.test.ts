/**
 * Tool calls in local-model output (the `<tool_call>{...}</tool_call>` convention of Qwen/Hermes
 * templates and our byte template), and how much text the streamer may send before a tag can begin.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseToolCalls, safeStreamLength } from '../../daemon/server/gateway-toolcalls.js';

describe('tool calls in generated text', () => {
  it('parses one or more calls, arguments as JSON strings, content before them kept', () => {
    const r = parseToolCalls(
      'Let me compute.\n<tool_call>{"name": "calculator", "arguments": {"expression": "6*7"}}</tool_call><tool_call>{"name":"lookup","arguments":"{\\"q\\":1}"}</tool_call>',
    );
    assert.equal(r.content, 'Let me compute.');
    assert.deepEqual(
      r.toolCalls.map((t) => [t.function.name, t.function.arguments]),
      [
        ['calculator', '{"expression":"6*7"}'],
        ['lookup', '{"q":1}'],
      ],
    );
    assert.match(r.toolCalls[0].id, /^call_[0-9a-f]{24}$/);
    assert.notEqual(r.toolCalls[0].id, r.toolCalls[1].id);
  });

  it('accepts a call cut off by max_tokens after complete JSON, and leaves malformed ones as content', () => {
    assert.equal(parseToolCalls('<tool_call>{"name":"f","arguments":{}}').toolCalls.length, 1);
    const bad = parseToolCalls('<tool_call>{"name": calculator}</tool_call>');
    assert.equal(bad.toolCalls.length, 0);
    assert.equal(bad.content, '<tool_call>{"name": calculator}</tool_call>');
    assert.equal(parseToolCalls('no tools here').content, 'no tools here');
  });

  it('holds back text that may still become a tag or a stop string', () => {
    assert.equal(safeStreamLength('Hello <tool', ['<tool_call>']), 6);
    assert.equal(safeStreamLength('Hello <tool_call>{"na', ['<tool_call>']), 6);
    assert.equal(safeStreamLength('Hello world', ['<tool_call>']), 11);
    assert.equal(safeStreamLength('abc\nObserv', ['<tool_call>', 'Observation:']), 4);
    assert.equal(safeStreamLength('abc Observation: x', ['Observation:']), 4);
    assert.equal(safeStreamLength('caf\ufffd', []), 3, 'an incomplete multi-byte character waits');
  });
});
