/**
 * Formats: byte tokenizer and its chat template (the exact text built-in models see), the HF tokenizer and
 * jinja chat template (real Qwen3 files), tool-call parsing, safetensors (F32/F16/BF16, sharded folders).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ByteTokenizer, parseAssistantText } from '../../daemon/model/byte-tokenizer.js';
import { HfTokenizer } from '../../daemon/model/hf-tokenizer.js';
import { parseSafetensors, readModelFolder, serializeSafetensors, writeSafetensors } from '../../daemon/model/safetensors.js';
import { qwenTokenizerDir, tempDir } from './tiny.js';

const tools = [
  {
    type: 'function' as const,
    function: { name: 'calc', description: 'evaluate arithmetic', parameters: { type: 'object', properties: { expression: { type: 'string' } } } },
  },
];

test('byte tokenizer round-trips UTF-8 and maps special tokens to single ids', () => {
  const tok = new ByteTokenizer();
  const text = 'héllo 世界 🎉<|end|>x<tool_call>{}</tool_call>';
  const ids = tok.encode(text);
  assert.equal(tok.decode(ids), text);
  assert.ok(ids.includes(tok.specialId('<|end|>')) && ids.includes(tok.specialId('<tool_call>')));
  assert.equal(tok.vocabSize, 264);
  assert.deepEqual(tok.eosTokenIds, [261, 256]);
});

test('byte chat template: the exact text for a tool-using conversation', () => {
  const tok = new ByteTokenizer();
  const text = tok.applyChatTemplate(
    [
      { role: 'system', content: 'You add numbers.' },
      { role: 'user', content: 'What is 2+3?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'calc', arguments: '{"expression":"2+3"}' } }] },
      { role: 'tool', content: '5', tool_call_id: 'c1' },
    ],
    { tools },
  );
  assert.equal(
    text,
    '<|system|>You add numbers.\ntools: calc(expression)<|end|><|user|>What is 2+3?<|end|>' +
      '<|assistant|><tool_call>{"name":"calc","arguments":{"expression":"2+3"}}</tool_call><|end|><|tool|>5<|end|><|assistant|>',
  );
  assert.equal(
    new ByteTokenizer(true).applyChatTemplate([{ role: 'user', content: 'hi' }], { tools, addGenerationPrompt: false }),
    '<|system|>tools: calc(expression): evaluate arithmetic<|end|><|user|>hi<|end|>',
  );
});

test('parseAssistantText splits content and tool calls; malformed calls stay as content', () => {
  const p = parseAssistantText('Let me compute.<tool_call>{"name":"calc","arguments":{"expression":"1+1"}}</tool_call>');
  assert.equal(p.content, 'Let me compute.');
  assert.deepEqual(
    p.tool_calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]),
    [['calc', { expression: '1+1' }]],
  );
  const qwenStyle = parseAssistantText('<tool_call>\n{"name": "calc", "arguments": {"expression": "2*3"}}\n</tool_call>');
  assert.equal(qwenStyle.content, null);
  assert.equal(qwenStyle.tool_calls[0].function.arguments, '{"expression":"2*3"}');
  const bad = parseAssistantText('<tool_call>{not json</tool_call>');
  assert.equal(bad.tool_calls.length, 0);
  assert.equal(bad.content, '<tool_call>{not json</tool_call>');
});

test('HF tokenizer (real Qwen3 tokenizer.json) round-trips text and renders its jinja chat template with tools', () => {
  const tok = HfTokenizer.fromFolder(qwenTokenizerDir());
  assert.ok(tok.vocabSize > 151000);
  for (const s of ['Hello, world!', 'héllo 世界 🎉 مرحبا', '  spaces\n\ttabs  ', 'x = [1, 2, 3]']) assert.equal(tok.decode(tok.encode(s)), s);
  const imEnd = tok.encode('<|im_end|>');
  assert.equal(imEnd.length, 1);
  assert.ok(tok.eosTokenIds.includes(imEnd[0]));
  const text = tok.applyChatTemplate(
    [
      { role: 'user', content: 'What is 2+3?' },
      { role: 'assistant', content: '', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'calc', arguments: '{"expression":"2+3"}' } }] },
      { role: 'tool', content: '5', tool_call_id: 'c1' },
    ],
    { tools },
  );
  assert.match(text, /<tools>[\s\S]*"name": "calc"[\s\S]*<\/tools>/);
  assert.match(text, /<\|im_start\|>user\nWhat is 2\+3\?<\|im_end\|>/);
  assert.match(text, /<tool_call>\n\{"name": "calc", "arguments": \{"expression": "2\+3"\}\}\n<\/tool_call>/);
  assert.ok(text.endsWith('<|im_start|>assistant\n'));
});

test('safetensors: F32/I32 round trip, F16 and BF16 decode, sharded folders, clear errors', () => {
  const tensors = new Map([
    ['a', { shape: [2, 2], data: new Float32Array([1, -2.5, 3e-3, 65504]) }],
    ['b', { shape: [3], data: new Int32Array([1, -1, 7]) }],
  ]);
  const back = parseSafetensors(serializeSafetensors(tensors, { step: '3' }));
  assert.deepEqual([...back.tensors.get('a')!.data], [...tensors.get('a')!.data]);
  assert.deepEqual([...back.tensors.get('b')!.data], [1, -1, 7]);
  assert.equal(back.metadata.step, '3');

  // Hand-made F16 (1.0, -2.0, 0.5, 65504) and BF16 (1.0, -2.0) payloads.
  const header = JSON.stringify({ h: { dtype: 'F16', shape: [4], data_offsets: [0, 8] }, g: { dtype: 'BF16', shape: [2], data_offsets: [8, 12] } });
  const hb = Buffer.from(header);
  const buf = Buffer.alloc(8 + hb.length + 12);
  buf.writeBigUInt64LE(BigInt(hb.length));
  hb.copy(buf, 8);
  [0x3c00, 0xc000, 0x3800, 0x7bff, 0x3f80, 0xc000].forEach((v, i) => buf.writeUInt16LE(v, 8 + hb.length + 2 * i));
  const half = parseSafetensors(buf);
  assert.deepEqual([...half.tensors.get('h')!.data], [1, -2, 0.5, 65504]);
  assert.deepEqual([...half.tensors.get('g')!.data], [1, -2]);

  const dir = tempDir('shards');
  writeSafetensors(join(dir, 'model-00001-of-00002.safetensors'), new Map([['a', tensors.get('a')!]]));
  writeSafetensors(join(dir, 'model-00002-of-00002.safetensors'), new Map([['b', tensors.get('b')!]]));
  writeFileSync(
    join(dir, 'model.safetensors.index.json'),
    JSON.stringify({ weight_map: { a: 'model-00001-of-00002.safetensors', b: 'model-00002-of-00002.safetensors' } }),
  );
  assert.deepEqual([...readModelFolder(dir).keys()].sort(), ['a', 'b']);
  assert.throws(() => parseSafetensors(Buffer.from([1, 2, 3])), /too short/);
  assert.throws(() => readModelFolder(tempDir('none')), /no model\.safetensors/);
});
