/**
 * `agl serve --store postgres://...`: the same API on the PostgreSQL backend (a throwaway Debian
 * cluster), the password kept out of daemon.json and `agl status`, and data kept across a restart.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { runCli, startDaemonProcess, tempDataDir } from '../helpers/daemon-process.js';

describe('agl serve on PostgreSQL', () => {
  let pgServer: PostgresServer;
  before(async () => {
    pgServer = await startPostgres();
  });
  after(async () => {
    await pgServer?.stop();
  });

  it('serves the store API from PostgreSQL and never writes the password down', async () => {
    // The throwaway cluster trusts local connections, so any password works: it is here to be hidden.
    const url = (await pgServer.createDatabase()).replace('postgres://agl@', 'postgres://agl:s3cret-pw@');
    const dataDir = tempDataDir('pg');
    const d = await startDaemonProcess(dataDir, ['--store', url]);
    let rolloutId: string;
    try {
      assert.equal((await d.client.health()).store, 'postgres');
      const claim = await d.client.startRollout({ input: { q: 'pg' } }, 'w');
      rolloutId = claim.rollout.id;
      const ack = await d.client.addSpans([{ rolloutId, attemptId: claim.attempt.id, name: 'a', startTime: 1 }]);
      assert.equal(ack.length, 1);
      await d.client.finishAttempt(claim.attempt.id, { status: 'succeeded' });

      const status = await runCli(['status', '--data-dir', dataDir]);
      assert.equal(status.code, 0, status.stderr);
      assert.match(status.stdout, /store:\s+postgres:\/\/agl:\*\*\*@127\.0\.0\.1/);
      assert.doesNotMatch(status.stdout + readFileSync(join(dataDir, 'daemon.json'), 'utf8') + d.output().stdout, /s3cret-pw/);
    } finally {
      assert.equal((await d.stop('SIGTERM')).code, 0);
    }

    const again = await startDaemonProcess(dataDir, ['--store', url]);
    try {
      assert.equal((await again.client.getRollout(rolloutId))?.status, 'succeeded');
      assert.equal((await again.client.querySpans({ rolloutId })).length, 1);
    } finally {
      await again.stop('SIGTERM');
    }
  });

  it('explains a PostgreSQL server that cannot be reached', async () => {
    const r = await runCli(['serve', '--port', '0', '--data-dir', tempDataDir('pg-down'), '--store', 'postgres://agl:pw@127.0.0.1:1/nope']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /cannot open the store postgres:\/\/agl:\*\*\*@127\.0\.0\.1:1\/nope/);
    assert.doesNotMatch(r.stderr, /:pw@/);
  });
});
