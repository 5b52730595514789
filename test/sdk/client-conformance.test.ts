/**
 * AglClient is a LightningStore: the store conformance suite, unchanged, through the HTTP client against a
 * real daemon (SQLite store, express + hot path, real HTTP) started fresh for every test. What it cannot run
 * is what cannot be remote: health checks with an injected `now` (the daemon's clock decides; the suite's
 * watchdog test times attempts out on the real clock, through POST /v1/agl/health-checks).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { storeConformance } from '../store/conformance.js';
import { startDaemon } from '../helpers/daemon.js';

storeConformance(
  'http (AglClient)',
  async () => {
    const daemon = await startDaemon();
    return {
      store: daemon.client,
      cleanup: async () => {
        await daemon.client.close();
        await daemon.close();
      },
    };
  },
  { injectableClock: false },
);

describe('AglClient as a store: what stays local', () => {
  it('refuses an injected clock, and says why', async () => {
    const daemon = await startDaemon();
    try {
      await assert.rejects(daemon.client.runHealthCheck(Date.now() + 60_000), /the daemon's clock decides over HTTP/);
      assert.deepEqual(await daemon.client.runHealthCheck(), { timedOut: [], unresponsive: [], requeued: [], failed: [] });
      assert.equal(daemon.client.kind, 'http');
    } finally {
      await daemon.close();
    }
  });
});
