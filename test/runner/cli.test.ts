/**
 * `agl rollout` and `agl runner` as real processes against a real `agl serve`: one rollout printed
 * with its spans and reward; a runner process working the queue and stopping gracefully on SIGTERM.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { SPAN } from '../../protocol/spans.js';
import { type DaemonProcess, runCli, startDaemonProcess } from '../helpers/daemon-process.js';
import { type FakeUpstream, startFakeUpstream } from '../helpers/fake-upstream.js';

const agents = 'test/runner/fixtures/agents.ts';

describe('agl rollout / agl runner', () => {
  let daemon: DaemonProcess;
  let upstream: FakeUpstream;
  before(async () => {
    upstream = await startFakeUpstream();
    daemon = await startDaemonProcess();
    await daemon.client.addResources({
      resources: { llm: { type: 'llm', endpoint: `${daemon.url}/v1`, model: 'fake-model', backend: 'upstream', upstreamUrl: upstream.url } },
    });
  });
  after(async () => {
    await daemon.stop();
    await upstream.close();
  });

  it('agl rollout runs one rollout and prints its span tree and reward', async () => {
    const res = await runCli(['rollout', `${agents}#askAgent`, '--task', '{"question":"what is 6*7?"}', '--data-dir', daemon.dataDir]);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /agentlightning\.rollout/);
    assert.match(res.stdout, /\n {4}gen_ai\.chat .*model=fake-model .*-> "The answer is 42\."/, 'the LLM call is nested under the solve operation');
    assert.match(res.stdout, /status: succeeded {3}reward: 1 /);
    // What answered its call, as the gateway recorded it: here the upstream model, not a local policy.
    assert.match(res.stdout, /\nmodel: fake-model \(upstream\)\nRan on the upstream model fake-model, not a local policy\.\n/);
    const json = await runCli(['rollout', `${agents}#throwingAgent`, '--json', '--data-dir', daemon.dataDir]);
    assert.equal(json.code, 1);
    const out = JSON.parse(json.stdout) as { rollout: { status: string; agent: string }; spans: { name: string }[] };
    assert.equal(out.rollout.status, 'failed');
    assert.equal(out.rollout.agent, `${agents}#throwingAgent`, 'stored agent name is relative to the working directory');
    assert.ok(out.spans.some((s) => s.name === SPAN.exception));
  });

  it('agl runner works the queue and stops gracefully on SIGTERM', async () => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(process.cwd(), 'daemon', 'cli.ts'), 'runner', '--workers', '2', '--data-dir', daemon.dataDir],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const rollouts = await daemon.client.enqueueRollouts([1, 2, 3].map((i) => ({ input: { question: `q${i} 6*7` }, agent: `${agents}#askAgent` })));
    const ids = rollouts.map((r) => r.id);
    let done: { status: string }[] = [];
    for (let i = 0; i < 60 && done.length < ids.length; i++) done = await daemon.client.waitForRollouts(ids, 2000);
    assert.deepEqual(
      done.map((r) => r.status),
      ['succeeded', 'succeeded', 'succeeded'],
    );
    child.kill('SIGTERM');
    assert.equal(await exited, 0, stderr);
    assert.match(stderr, /stopped; 3 succeeded, 0 failed/);
    const workers = await daemon.client.listWorkers();
    const mine = workers.filter((w) => w.id.includes(`-${child.pid}-`));
    assert.equal(mine.length, 2);
    assert.ok(mine.every((w) => w.status === 'offline'));
  });
});
