/**
 * The sql and rag samples are meant to be trainable by the built-in byte-level model, whose context is
 * 256 tokens: every SFT demonstration they ship (the exact chats their agents send, plus the answer)
 * must fit, or `agl sft` refuses it and RL would see truncated prompts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ByteTokenizer } from '../../daemon/model/byte-tokenizer.js';
import { type Demonstration, demoToPair, readJsonl } from '../../daemon/algorithm/sft-trainer.js';

/** The built-in models' context length (daemon/model/policy.ts default). */
const BUILTIN_CONTEXT = 256;

describe('sample demonstrations fit the built-in model', () => {
  const tok = new ByteTokenizer();
  for (const sample of ['sql', 'rag']) {
    it(`${sample}: every demonstration fits ${BUILTIN_CONTEXT} tokens`, () => {
      const demos = readJsonl<Demonstration>(join('samples', sample, 'data', 'demos.jsonl'));
      assert.ok(demos.length > 100);
      const lengths = demos.map((d, i) => {
        const p = demoToPair(d, tok, `demo ${i + 1}`);
        return p.promptIds.length + p.completionIds.length;
      });
      const longest = Math.max(...lengths);
      assert.ok(longest <= BUILTIN_CONTEXT, `longest ${sample} demonstration is ${longest} tokens (demo ${lengths.indexOf(longest) + 1})`);
    });
  }
});
