/**
 * A LangChain.js ChatOpenAI agent with a tool, unchanged, run by the runner through the gateway:
 * both LLM calls and the tool run are recorded in one tree under the rollout, with the reward; the
 * second call carries the tool result; streaming mode keeps the same record.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { AGL, GENAI, SPAN } from '../../protocol/spans.js';
import type { Rollout } from '../../protocol/store.js';
import { type Harness, type RunnerStack, startRunnerStack } from '../helpers/daemon.js';

const agent = `${resolve('test/sdk/fixtures/langchain-agent.ts')}#langchainCalcAgent`; // tests run from the repo root

describe('LangChain.js ChatOpenAI agent with a tool', () => {
  let stack: RunnerStack;
  let daemon: Harness;
  before(async () => {
    stack = await startRunnerStack(1);
    ({ daemon } = stack);
  });
  after(() => stack.close());

  const runToEnd = (input: unknown): Promise<Rollout> => stack.runToEnd({ input, agent });

  for (const stream of [false, true]) {
    it(`records calls, tool run and reward in one tree (${stream ? 'streaming' : 'not streaming'})`, async () => {
      const r = await runToEnd({ question: 'What is 6*7?', answer: '42', stream });
      assert.equal(r.status, 'succeeded');
      const spans = await daemon.client.querySpans({ rolloutId: r.id });
      const root = spans.find((s) => s.name === SPAN.agentRun)!;
      const calls = spans.filter((s) => s.name === SPAN.llmCall).sort((a, b) => a.sequenceId - b.sequenceId);
      assert.equal(calls.length, 2);
      for (const c of calls) {
        assert.equal(c.parentSpanId, root.spanId);
        assert.equal(c.attributes[AGL.streamed], stream);
      }
      assert.deepEqual(calls[0].attributes[GENAI.responseFinishReasons], ['tool_calls']);
      const second = JSON.parse(String(calls[1].attributes[GENAI.inputMessages])) as { role: string; content: string; tool_call_id?: string }[];
      assert.deepEqual(second.at(-1), { role: 'tool', content: '42', tool_call_id: 'call_fake_1' });
      const tool = spans.find((s) => s.name === SPAN.tool)!;
      assert.equal(tool.attributes[GENAI.toolName], 'calculator');
      assert.equal(tool.attributes[AGL.toolSucceeded], true);
      assert.deepEqual(JSON.parse(String(tool.attributes[GENAI.toolCallArguments])), { expression: '6*7' }, "the tool's input, for name(input) → output");
      assert.equal(tool.attributes[GENAI.toolCallResult], '42', 'and what it returned');
      assert.equal(tool.parentSpanId, root.spanId);
      assert.ok(tool.startTime >= calls[0].endTime! && tool.endTime! <= calls[1].startTime, 'tool ran between the calls');
      const reward = spans.find((s) => s.name === SPAN.reward)!;
      assert.equal(reward.attributes[AGL.rewardValue], 1);
    });
  }
});
