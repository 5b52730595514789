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
import { Runner } from '../../daemon/runner/runner.js';
import { type FakeUpstream, startFakeUpstream } from '../runner/fake-upstream.js';
import { type Harness, startDaemon } from '../runner/daemon-harness.js';

const agent = `${resolve('test/sdk/fixtures/langchain-agent.ts')}#langchainCalcAgent`; // tests run from the repo root

describe('LangChain.js ChatOpenAI agent with a tool', () => {
  let daemon: Harness;
  let upstream: FakeUpstream;
  let runner: Runner;
  before(async () => {
    upstream = await startFakeUpstream();
    daemon = await startDaemon();
    await daemon.client.addResources({ resources: { llm: { type: 'llm', endpoint: `${daemon.url}/v1`, model: 'fake-model', backend: 'upstream', upstreamUrl: upstream.url } } });
    runner = new Runner({ client: daemon.client, daemonUrl: daemon.url, token: daemon.token, workers: 1, pollMs: { min: 20, max: 200 }, log: () => {} });
    runner.start();
  });
  after(async () => { await runner.stop(5000); await daemon.close(); await upstream.close(); });

  async function runToEnd(input: unknown): Promise<Rollout> {
    const r = await daemon.client.enqueueRollout({ input, agent });
    for (let i = 0; i < 100; i++) {
      const [done] = await daemon.client.waitForRollouts([r.id], 2000);
      if (done) return done;
    }
    throw new Error(`rollout ${r.id} did not end`);
  }

  for (const stream of [false, true]) {
    it(`records calls, tool run and reward in one tree (${stream ? 'streaming' : 'not streaming'})`, async () => {
      const r = await runToEnd({ question: 'What is 6*7?', answer: '42', stream });
      assert.equal(r.status, 'succeeded');
      const spans = await daemon.client.querySpans({ rolloutId: r.id });
      const root = spans.find((s) => s.name === SPAN.agentRun)!;
      const calls = spans.filter((s) => s.name === SPAN.llmCall).sort((a, b) => a.sequenceId - b.sequenceId);
      assert.equal(calls.length, 2);
      for (const c of calls) { assert.equal(c.parentSpanId, root.spanId); assert.equal(c.attributes[AGL.streamed], stream); }
      assert.deepEqual(calls[0].attributes[GENAI.responseFinishReasons], ['tool_calls']);
      const second = JSON.parse(String(calls[1].attributes[GENAI.inputMessages])) as { role: string; content: string; tool_call_id?: string }[];
      assert.deepEqual(second.at(-1), { role: 'tool', content: '42', tool_call_id: 'call_fake_1' });
      const tool = spans.find((s) => s.name === SPAN.tool)!;
      assert.equal(tool.attributes[GENAI.toolName], 'calculator');
      assert.equal(tool.attributes[AGL.toolSucceeded], true);
      assert.equal(tool.parentSpanId, root.spanId);
      assert.ok(tool.startTime >= calls[0].endTime! && tool.endTime! <= calls[1].startTime, 'tool ran between the calls');
      const reward = spans.find((s) => s.name === SPAN.reward)!;
      assert.equal(reward.attributes[AGL.rewardValue], 1);
    });
  }
});
