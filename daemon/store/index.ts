/**
 * openStore: picks the backend from a spec. `postgres://` / `postgresql://` URLs open PostgreSQL;
 * anything else is a SQLite file path; `{ dataDir }` opens `<dataDir>/store.sqlite`.
 * The default data dir (~/.agent-lightning or --data-dir) is the caller's choice, not the store's.
 */
import { join } from 'node:path';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { SqliteStore } from './sqlite.js';

export type StoreSpec = string | { dataDir: string };

export const SQLITE_FILE_NAME = 'store.sqlite';

export function isPostgresUrl(spec: string): boolean {
  return /^postgres(ql)?:\/\//i.test(spec);
}

export async function openStore(spec: StoreSpec): Promise<LightningStore> {
  if (typeof spec !== 'string') return new SqliteStore(join(spec.dataDir, SQLITE_FILE_NAME));
  if (isPostgresUrl(spec)) {
    const { PostgresStore } = await import('./postgres.js');
    return PostgresStore.connect(spec);
  }
  if (spec.trim() === '') throw new TypeError('store spec is empty: give a SQLite file path or a postgres:// URL');
  return new SqliteStore(spec);
}

export { SqliteStore } from './sqlite.js';
export { Watchdog } from './watchdog.js';
export * from '../../protocol/lightning-store.js';
