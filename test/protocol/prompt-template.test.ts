/**
 * The placeholder rule of prompt texts (protocol/prompt-template.ts), which the TypeScript SDK renders with, the
 * Python helper repeats (test/runner/prompts.test.ts runs both on the same texts) and prompt optimization's checks
 * count placeholders by: `{name}` and `{{name}}` fill from vars, every other brace is text, a backslash writes a
 * placeholder as text, a missing var is an error naming it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PROMPT_NAME_PATTERN, promptPlaceholders, renderPrompt } from '../../protocol/prompt-template.js';

describe('prompt placeholders', () => {
  it('fill {name} and {{name}} (spaces inside double braces) from vars; a var that is not a string is written as JSON', () => {
    assert.equal(renderPrompt('Q: {question} / {{ record }} / {{n}}', { question: 'why?', record: { id: 7 }, n: 3 }), 'Q: why? / {"id":7} / 3');
    assert.equal(renderPrompt('{a}{a}', { a: true, unused: 1 }), 'truetrue', 'each use filled; unused vars ignored');
  });

  it('leave every other brace as text: JSON, code and empty braces need no escaping', () => {
    const text = 'Answer as {"total": <number>} or {} or { name } or {1st} or {x y}.';
    assert.equal(renderPrompt(text, {}), text);
    assert.deepEqual(promptPlaceholders(text), []);
  });

  it('write a placeholder as text after a backslash, and keep braces around a placeholder', () => {
    assert.equal(renderPrompt('\\{name} is filled as {name}; \\{{name}} too', { name: 'Ann' }), '{name} is filled as Ann; {{name}} too');
    assert.equal(renderPrompt('{{{name}}}', { name: 'Ann' }), '{Ann}');
    assert.deepEqual(promptPlaceholders('\\{skip} {keep} {{ also }} {keep}'), ['keep', 'also']);
  });

  it('name the placeholder that has no var, what was given, and how to write it as text', () => {
    assert.throws(
      () => renderPrompt('Record: {record}\nQ: {question}', { record: 'r' }, "llm.prompt('desk')"),
      (e: Error) =>
        e instanceof TypeError &&
        e.message.startsWith("llm.prompt('desk'): placeholder {question} has no value") &&
        e.message.includes('vars given: record') &&
        e.message.includes('\\{question}'),
    );
    assert.throws(() => renderPrompt('{x}', { x: undefined }), /placeholder \{x\} has no value.*vars given: x/, 'undefined is no value');
    assert.throws(() => renderPrompt('{x}', {}), /placeholder \{x\} has no value.*no vars were given/);
  });

  it('accept prompt names of 1-64 letters, digits, _, - and .', () => {
    for (const ok of ['system', 'planner.v2', 'a-b_c', 'x'.repeat(64)]) assert.ok(PROMPT_NAME_PATTERN.test(ok), ok);
    for (const bad of ['', 'with space', 'x'.repeat(65), 'a/b']) assert.ok(!PROMPT_NAME_PATTERN.test(bad), bad);
  });
});
