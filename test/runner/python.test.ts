/**
 * Python agents through the runner: `file.py:function` run by sdk/python/agl_runner.py (standard
 * library only) in a warm python3 process; LLM calls through the gateway, rewards posted to the daemon
 * over OTLP/JSON, failures reported with the Python error.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { AGL, SPAN } from '../../protocol/spans.js';
import type { Rollout } from '../../protocol/store.js';
import { rootSpanIdForAttempt } from '../../protocol/ids.js';
import { type Harness, type RunnerStack, startRunnerStack } from '../helpers/daemon.js';

const agentFile = resolve('test/runner/fixtures/py_agent.py'); // tests run from the repo root

describe('Python agents through the runner', () => {
  let stack: RunnerStack;
  let daemon: Harness;
  before(async () => {
    stack = await startRunnerStack(1);
    ({ daemon } = stack);
  });
  after(() => stack.close());

  const runToEnd = (agent: string): Promise<Rollout> => stack.runToEnd({ input: { question: 'what is 6*7?' }, agent });

  it('runs file.py:function, records its LLM call, rewards and root span', async () => {
    const r = await runToEnd(`${agentFile}:solve`);
    assert.equal(r.status, 'succeeded');
    const [attempt] = await daemon.client.getAttempts(r.id);
    const spans = await daemon.client.querySpans({ rolloutId: r.id });
    const root = spans.find((s) => s.name === SPAN.agentRun);
    assert.equal(root?.spanId, rootSpanIdForAttempt(attempt.id));
    const llm = spans.find((s) => s.name === SPAN.llmCall);
    assert.equal(llm?.parentSpanId, root?.spanId);
    const rewards = spans.filter((s) => s.name === SPAN.reward);
    const named = rewards.find((s) => s.attributes[AGL.rewardName] === 'exact');
    assert.equal(named?.attributes[AGL.rewardValue], 1);
    assert.deepEqual(JSON.parse(String(named?.attributes[AGL.rewardComponents])), { exact: 1, format: 0.5 });
    const final = rewards.find((s) => s.attributes['agl.reward.final'] === true);
    assert.equal(final?.attributes[AGL.rewardValue], 1);
    assert.equal(final?.parentSpanId, root?.spanId);
  });

  it('runs async functions and reports Python exceptions as failed attempts', async () => {
    const ok = await runToEnd(`${agentFile}:solve_async`);
    assert.equal(ok.status, 'succeeded');
    const rewards = await daemon.client.querySpans({ rolloutId: ok.id, name: SPAN.reward });
    assert.equal(rewards[0].attributes[AGL.rewardValue], 0.25);
    const bad = await runToEnd(`${agentFile}:broken`);
    assert.equal(bad.status, 'failed');
    const [attempt] = await daemon.client.getAttempts(bad.id);
    assert.match(attempt.error?.message ?? '', /ValueError: python agent failed on purpose/);
    const missing = await runToEnd(`${agentFile}:nope`);
    const [a2] = await daemon.client.getAttempts(missing.id);
    assert.match(a2.error?.message ?? '', /has no function 'nope' \(functions: .*solve/);
  });
});
