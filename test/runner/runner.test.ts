/**
 * The runner against a real daemon: TS agents in warm worker processes (openai client through the
 * gateway, SDK emitters), recorded spans with parentage, failures (throw, crash, hang with timeout)
 * ending attempts failed and requeued per the rollout's config, and warm process reuse.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { AGL, SPAN } from '../../protocol/spans.js';
import type { Rollout, RolloutInput } from '../../protocol/store.js';
import { finalRewards, runGroups } from '../../daemon/algorithm/rollouts.js';
import { Runner } from '../../daemon/runner/runner.js';
import { rootSpanIdForAttempt } from '../../protocol/ids.js';
import { type Harness, type RunnerStack, startRunnerStack } from '../helpers/daemon.js';

const agents = resolve('test/runner/fixtures/agents.ts'); // tests run from the repo root

describe('runner', () => {
  let stack: RunnerStack;
  let daemon: Harness;
  let runner: Runner;
  before(async () => {
    stack = await startRunnerStack(2);
    ({ daemon, runner } = stack);
  });
  after(() => stack.close());

  const runToEnd = (input: RolloutInput): Promise<Rollout> => stack.runToEnd(input);

  it('runs a TS agent: LLM call through the gateway, rewards, parentage', async () => {
    const r = await runToEnd({ input: { question: 'what is 6*7?' }, agent: `${agents}#askAgent` });
    assert.equal(r.status, 'succeeded');
    const spans = await daemon.client.querySpans({ rolloutId: r.id });
    const [attempt] = await daemon.client.getAttempts(r.id);
    const root = spans.find((s) => s.name === SPAN.agentRun);
    assert.ok(root, 'root span recorded');
    assert.equal(root.spanId, rootSpanIdForAttempt(attempt.id));
    assert.equal(root.parentSpanId, null);
    const solve = spans.find((s) => s.name === 'solve');
    assert.equal(solve?.parentSpanId, root.spanId);
    const llm = spans.find((s) => s.name === SPAN.llmCall);
    assert.ok(llm, 'LLM call recorded by the gateway');
    assert.equal(llm.parentSpanId, solve?.spanId, 'the LLM call is a child of the operation it was made in (traceparent)');
    assert.equal(llm.traceId, root.traceId);
    const rewards = spans.filter((s) => s.name === SPAN.reward);
    assert.equal(rewards.length, 2);
    const named = rewards.find((s) => s.attributes[AGL.rewardName] === 'exact');
    assert.equal(named?.attributes[AGL.rewardValue], 1);
    assert.deepEqual(JSON.parse(String(named?.attributes[AGL.rewardComponents])), { exact: 1, format: 0.5 });
    assert.ok(rewards.some((s) => s.attributes['agl.reward.final'] === true && s.attributes[AGL.rewardValue] === 1));
  });

  it('a throwing agent fails its attempt, with the error recorded', async () => {
    const r = await runToEnd({ input: {}, agent: `${agents}#throwingAgent` });
    assert.equal(r.status, 'failed');
    const [attempt] = await daemon.client.getAttempts(r.id);
    assert.match(attempt.error?.message ?? '', /broke on purpose/);
    const spans = await daemon.client.querySpans({ rolloutId: r.id });
    assert.ok(spans.some((s) => s.name === SPAN.exception && s.attributes[AGL.exceptionMessage] === 'the agent broke on purpose'));
  });

  it('a crashing agent process fails the attempt and the rollout is requeued per its config', async () => {
    const r = await runToEnd({ input: {}, agent: `${agents}#crashingAgent`, config: { maxAttempts: 2, retryOn: ['failed'] } });
    assert.equal(r.status, 'failed');
    const attempts = await daemon.client.getAttempts(r.id);
    assert.equal(attempts.length, 2, 'retried once');
    for (const a of attempts) assert.match(a.error?.message ?? '', /exited \(code 3\)/);
  });

  it('a hanging agent is killed at the rollout timeout', async () => {
    const r = await runToEnd({ input: {}, agent: `${agents}#hangingAgent`, config: { timeoutSeconds: 1 } });
    assert.equal(r.status, 'failed');
    const [attempt] = await daemon.client.getAttempts(r.id);
    assert.match(attempt.error?.message ?? '', /timed out after 1 s/);
  });

  it('reuses warm worker processes across rollouts', async () => {
    const pids = new Set<number>();
    for (let i = 0; i < 4; i++) {
      const r = await runToEnd({ input: {}, agent: `${agents}#pidAgent` });
      const spans = await daemon.client.querySpans({ rolloutId: r.id, name: SPAN.message });
      pids.add(Number(spans[0].attributes[AGL.message]));
    }
    assert.ok(pids.size <= 2, `4 rollouts on 2 slots ran in ${pids.size} processes`);
  });

  it('runs concurrent rollouts in one shared process with jobsPerProcess, and a timeout there spares the others', async () => {
    const shared = new Runner({
      client: daemon.client,
      daemonUrl: daemon.url,
      token: daemon.token,
      workers: 4,
      jobsPerProcess: 4,
      agent: `${agents}#slowPidAgent`,
      pollMs: { min: 20, max: 100 },
      log: () => {},
    });
    await runner.stop(5000); // only the shared runner claims now
    shared.start();
    try {
      const inputs = [{ ms: 2500 }, { ms: 2500 }, { ms: 2500 }, { ms: 60_000 }].map((input, i) => ({
        input,
        agent: `${agents}#slowPidAgent`,
        config: i === 3 ? { timeoutSeconds: 1 } : {},
      })); // the timeout hits while the others run
      const rollouts = await daemon.client.enqueueRollouts(inputs);
      let done: Rollout[] = [];
      for (let i = 0; i < 30 && done.length < 4; i++)
        done = await daemon.client.waitForRollouts(
          rollouts.map((r) => r.id),
          2000,
        );
      const byId = new Map(done.map((r) => [r.id, r]));
      assert.deepEqual(
        rollouts.map((r) => byId.get(r.id)?.status),
        ['succeeded', 'succeeded', 'succeeded', 'failed'],
      );
      const pids = new Set<string>();
      for (const r of rollouts.slice(0, 3))
        pids.add(String((await daemon.client.querySpans({ rolloutId: r.id, name: SPAN.message }))[0].attributes[AGL.message]));
      assert.equal(pids.size, 1, 'the three rollouts ran in one process');
      assert.equal(shared.processCount, 1);
    } finally {
      await shared.stop(5000);
      runner = stack.runner = new Runner({
        client: daemon.client,
        daemonUrl: daemon.url,
        token: daemon.token,
        workers: 2,
        pollMs: { min: 20, max: 200 },
        log: () => {},
      });
      runner.start();
    }
  });

  it('an unknown agent export fails with a message naming the exports', async () => {
    const r = await runToEnd({ input: {}, agent: `${agents}#nope` });
    const [attempt] = await daemon.client.getAttempts(r.id);
    assert.equal(r.status, 'failed');
    assert.match(attempt.error?.message ?? '', /no exported function 'nope'.*askAgent/);
  });

  it("the trainer's store side drives the daemon's store remotely: runGroups through AglClient, a LightningStore", async () => {
    const resources = (await daemon.client.getLatestResources())!;
    const tasks = [
      { id: 't1', input: { question: 'what is 6*7?' } },
      { id: 't2', input: { question: 'and 40+2?' } },
    ];
    const groups = await runGroups(daemon.client, tasks, {
      agent: `${agents}#askAgent`,
      mode: 'train',
      resourcesId: resources.id,
      groupSize: 2,
      timeoutSeconds: 30,
      metadata: { runId: 'remote' },
    });
    assert.deepEqual(
      groups.map((g) => [g.task.id, g.rollout.status, g.error]),
      [
        ['t1', 'succeeded', null],
        ['t1', 'succeeded', null],
        ['t2', 'succeeded', null],
        ['t2', 'succeeded', null],
      ],
    );
    // One LLM call per rollout, read back through the client (kept as a step only with token ids, which this upstream does not send).
    assert.deepEqual(
      groups.map((g) => [...g.trajectory!.steps.map(() => 'step'), ...g.trajectory!.skipped.map((x) => x.reason)]),
      Array(4).fill(['no-token-ids']),
    );
    assert.deepEqual(finalRewards(groups), [1, 1, 1, 1], 'the fake upstream answers 42: every final reward is 1');
  });
});
