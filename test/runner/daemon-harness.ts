/**
 * Starts a real daemon app for tests and benchmarks: SQLite store in a temp dir, the store API, the
 * LLM gateway and the OTLP receiver, bound to 127.0.0.1 on a free port; plus an AglClient for it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeGracefully, createApp, createServerContext, listen } from '../../daemon/server/app.js';
import type { PolicyProvider } from '../../daemon/server/gateway-local.js';
import { SqliteStore } from '../../daemon/store/sqlite.js';
import { AglClient } from '../../sdk/client.js';

export interface Harness { url: string; token: string; store: SqliteStore; client: AglClient; dataDir: string; close(): Promise<void> }

export async function startDaemon(opts: { getPolicy?: PolicyProvider } = {}): Promise<Harness> {
  const dataDir = mkdtempSync(join(tmpdir(), 'agl-runner-test-'));
  const store = new SqliteStore(join(dataDir, 'store.sqlite'));
  const token = 'test-token-0123456789abcdef';
  // getPolicy: how `agl serve` hands the gateway its loaded policy model (read per call).
  const ctx = Object.assign(createServerContext({ store, token, dataDir, log: () => {} }), { getPolicy: opts.getPolicy });
  const server = await listen(createApp(ctx), ctx, '127.0.0.1', 0);
  const client = new AglClient({ url: ctx.url, token });
  return {
    url: ctx.url, token, store, client, dataDir,
    async close() { await closeGracefully(server, 1000); await store.close(); rmSync(dataDir, { recursive: true, force: true }); },
  };
}
