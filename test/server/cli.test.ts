/**
 * The `agl` CLI as a user meets it: help texts, a port already taken, a data dir that cannot be written,
 * the token file's mode, `agl status` and `agl rollouts list|show`, one daemon per data dir, and a clean
 * shutdown on SIGTERM that leaves the store and daemon.json consistent for the next start.
 */
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runCli, startDaemonProcess, tempDataDir } from '../helpers/daemon-process.js';

describe('agl CLI', () => {
  it('prints help for the CLI and for each of its commands', async () => {
    const top = await runCli(['--help']);
    assert.equal(top.code, 0);
    for (const cmd of ['serve', 'status', 'rollouts']) assert.match(top.stdout, new RegExp(`^  ${cmd}\\s+\\S`, 'm'));
    for (const cmd of ['serve', 'status', 'rollouts']) {
      const r = await runCli([cmd, '--help']);
      assert.equal(r.code, 0, `${cmd} --help: ${r.stderr}`);
      assert.match(r.stdout, new RegExp(`usage: agl ${cmd}`));
    }
    const unknown = await runCli(['frobnicate']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown command 'frobnicate'/);
    const badFlag = await runCli(['serve', '--prot', '1']);
    assert.equal(badFlag.code, 2);
    assert.match(badFlag.stderr, /--prot/);
  });

  it('explains a port that is already taken', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const r = await runCli(['serve', '--port', String(port), '--data-dir', tempDataDir('port')]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use`));
      assert.match(r.stderr, /--port 0/);
    } finally {
      blocker.close();
    }
  });

  it('explains a data dir that cannot be written', async () => {
    const file = join(tempDataDir('unwritable'), 'a-file');
    writeFileSync(file, 'not a directory');
    const r = await runCli(['serve', '--port', '0', '--data-dir', join(file, 'data')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /data dir .*a-file\/data is not writable/);
    assert.match(r.stderr, /--data-dir/);
    assert.match(r.stderr, /AGL_DATA_DIR/);
  });

  it('starts over a daemon.json whose pid is alive but is not an agl daemon (pid reused after a reboot)', async () => {
    const dataDir = tempDataDir('reused-pid');
    // This test process is alive and is no daemon; nothing listens on port 9 of loopback.
    writeFileSync(join(dataDir, 'daemon.json'), JSON.stringify({ pid: process.pid, url: 'http://127.0.0.1:9', agents: [] }));
    const d = await startDaemonProcess(dataDir);
    try {
      assert.match(d.output().stderr, /did not shut down cleanly/);
      assert.equal(JSON.parse(readFileSync(join(dataDir, 'daemon.json'), 'utf8')).pid, d.child.pid);
    } finally {
      await d.stop('SIGTERM');
    }
  });

  it('serves, reports status and rollouts, refuses a second daemon, and stops cleanly on SIGTERM', async () => {
    const dataDir = tempDataDir('cli');
    const none = await runCli(['status', '--data-dir', dataDir]);
    assert.equal(none.code, 1);
    assert.match(none.stdout, /not running \(no daemon has run with this data dir\)/);

    const d = await startDaemonProcess(dataDir);
    const tokenFile = join(dataDir, 'token');
    assert.equal(statSync(tokenFile).mode & 0o777, 0o600, 'token readable by the user only');
    const token = readFileSync(tokenFile, 'utf8').trim();
    assert.ok(token.length >= 32);

    const claim = await d.client.startRollout({ input: { q: '1+1' }, agent: 'calc#agent' }, 'w');
    await d.client.addSpans([
      { rolloutId: claim.rollout.id, attemptId: claim.attempt.id, name: 'gen_ai.chat', startTime: 1 },
      { rolloutId: claim.rollout.id, attemptId: claim.attempt.id, name: 'agentlightning.reward', startTime: 2, attributes: { 'agl.reward.value': 0.75 } },
    ]);
    await d.client.finishAttempt(claim.attempt.id, { status: 'succeeded' });
    await d.client.enqueueRollouts([{ input: 'a', mode: 'val' }, { input: 'b' }]);

    const second = await runCli(['serve', '--port', '0', '--data-dir', dataDir]);
    assert.equal(second.code, 1);
    assert.match(second.stderr, /a daemon is already running for .* at http:\/\/127\.0\.0\.1:\d+ \(pid \d+\)/);

    const status = await runCli(['status', '--data-dir', dataDir]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /running/);
    assert.ok(status.stdout.includes(d.url));
    assert.ok(status.stdout.includes(tokenFile));
    assert.match(status.stdout, /rollouts:\s+3 \(/);
    assert.match(status.stdout, /spans:\s+2/);
    const json = JSON.parse((await runCli(['status', '--data-dir', dataDir, '--json'])).stdout);
    assert.equal(json.running, true);
    assert.equal(json.pid, d.child.pid);
    assert.equal(json.statistics.rollouts.queuing, 2);

    const list = await runCli(['rollouts', 'list', '--data-dir', dataDir]);
    assert.equal(list.code, 0, list.stderr);
    assert.equal(list.stdout.trim().split('\n').length, 4, 'a header and three rollouts');
    assert.equal(list.stdout.match(/ queuing: no runner is connected /g)?.length, 2, `the two queued rollouts wait for no runner:\n${list.stdout}`);
    await d.client.heartbeatWorker('runner-1', { status: 'idle' });
    const polled = await runCli(['rollouts', 'list', '--data-dir', dataDir]);
    assert.equal(polled.stdout.match(/ queuing /g)?.length, 2, `a runner polls the queue: plain "queuing" again:\n${polled.stdout}`);
    assert.doesNotMatch(polled.stdout, /no runner/);
    const vals = await runCli(['rollouts', 'list', '--mode', 'val', '--status', 'queuing', '--json', '--data-dir', dataDir]);
    assert.deepEqual(
      JSON.parse(vals.stdout).items.map((r: { input: string }) => r.input),
      ['a'],
    );
    const limited = await runCli(['rollouts', 'list', '--limit', '1', '--data-dir', dataDir]);
    assert.match(limited.stdout, /more: agl rollouts list --cursor \S+/);
    const badStatus = await runCli(['rollouts', 'list', '--status', 'done', '--data-dir', dataDir]);
    assert.equal(badStatus.code, 2);
    assert.match(badStatus.stderr, /unknown --status 'done'/);

    const show = await runCli(['rollouts', 'show', claim.rollout.id, '--data-dir', dataDir]);
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /status:\s+succeeded/);
    assert.match(show.stdout, /#1 \S+\s+succeeded\s+worker w .* 2 spans/);
    assert.match(show.stdout, /LLM calls: 1/);
    assert.match(show.stdout, /rewards: 0\.750/);
    const missing = await runCli(['rollouts', 'show', 'ro-missing', '--data-dir', dataDir]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no rollout 'ro-missing'/);

    const exit = await d.stop('SIGTERM');
    assert.equal(exit.code, 0, d.output().stderr);
    assert.match(d.output().stdout, /agl: stopped/);
    const state = JSON.parse(readFileSync(join(dataDir, 'daemon.json'), 'utf8'));
    assert.equal(state.pid, null);
    assert.equal(state.url, null);
    assert.deepEqual(
      state.agents.map((a: { agent: string }) => a.agent),
      ['calc#agent'],
    );
    const after = await runCli(['status', '--data-dir', dataDir]);
    assert.match(after.stdout, /not running \(it was stopped\)/);
    const notRunning = await runCli(['rollouts', 'list', '--data-dir', dataDir]);
    assert.equal(notRunning.code, 1);
    assert.match(notRunning.stderr, /not running .*agl serve/);

    // The next start finds everything, with the same token, and no complaint about an unclean stop.
    const again = await startDaemonProcess(dataDir);
    try {
      assert.doesNotMatch(again.output().stderr, /did not shut down cleanly/);
      assert.equal(again.token, token);
      assert.equal((await again.client.getRollout(claim.rollout.id))?.status, 'succeeded');
      assert.equal((await again.client.statistics()).spans, 2);
    } finally {
      await again.stop('SIGTERM');
    }
  });
});
