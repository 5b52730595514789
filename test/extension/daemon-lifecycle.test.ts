/**
 * How the extension finds, starts and stops the daemon (extension/daemon.ts, the vscode-free half of
 * Ctx): spawn the real `agl serve` and wait until daemon.json names it, attach to a running daemon
 * through daemon.json + /health, report a taken port so Ctx can retry on a free one, and stop gracefully.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { DaemonStartError, findRunningDaemon, healthy, spawnDaemon, stopDaemon } from '../../extension/daemon.js';
import { readDaemonState } from '../../client/daemon-state.js';
import { tempDataDir } from '../helpers/daemon-process.js';

const AGL = join(process.cwd(), 'bin', 'agl.mjs'); // runs the TypeScript sources through tsx

test('spawn, attach, stop: one daemon per data dir, found again through daemon.json', { timeout: 120_000 }, async () => {
  const dataDir = tempDataDir('ext-daemon');
  assert.equal(await findRunningDaemon(dataDir), null, 'nothing runs yet');
  const lines: string[] = [];
  const spawned = await spawnDaemon({
    node: process.execPath,
    agl: AGL,
    port: 0,
    dataDir,
    storeUrl: '',
    model: 'builtin:0.8m',
    cwd: process.cwd(),
    onOutput: (l) => lines.push(l),
  });
  try {
    assert.ok(spawned.child, 'spawned by us');
    assert.ok(await healthy(spawned.endpoint.url));
    assert.ok(spawned.endpoint.token.length >= 16);
    assert.ok(
      lines.some((l) => /listening on/.test(l)),
      `the daemon's output reaches the log: ${lines.join('\n')}`,
    );

    const attached = await findRunningDaemon(dataDir);
    assert.ok(attached, 'a second window attaches');
    assert.equal(attached.pid, spawned.pid);
    assert.equal(attached.endpoint.url, spawned.endpoint.url);
    assert.equal(attached.endpoint.token, spawned.endpoint.token);
    assert.equal(attached.child, null, 'attached, not owned');
  } finally {
    await stopDaemon(spawned);
  }
  assert.equal(spawned.child!.exitCode, 0, 'SIGTERM is a clean shutdown');
  assert.equal(readDaemonState(dataDir).state?.pid, null, 'daemon.json says stopped');
  assert.equal(await findRunningDaemon(dataDir), null);
});

test('a taken port is reported as such (Ctx then starts on a free port); a bad node binary is named', { timeout: 120_000 }, async () => {
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
  const port = (blocker.address() as { port: number }).port;
  try {
    await assert.rejects(
      spawnDaemon({
        node: process.execPath,
        agl: AGL,
        port,
        dataDir: tempDataDir('ext-port'),
        storeUrl: '',
        model: 'builtin:0.8m',
        cwd: process.cwd(),
        onOutput: () => undefined,
      }),
      (err: unknown) => err instanceof DaemonStartError && err.portTaken && /already in use/.test(err.output),
    );
  } finally {
    blocker.close();
  }
  await assert.rejects(
    spawnDaemon({
      node: join(tempDataDir('ext-node'), 'no-such-node'),
      agl: AGL,
      port: 0,
      dataDir: tempDataDir('ext-node2'),
      storeUrl: '',
      model: 'builtin:0.8m',
      cwd: process.cwd(),
      onOutput: () => undefined,
    }),
    (err: unknown) => err instanceof DaemonStartError && /could not run .*no-such-node/.test(err.message),
  );
});
