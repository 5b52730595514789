/**
 * A process that watches a SQLite store's changes and dies without closing it (argv: the store file), for
 * test/store/sqlite.test.ts: what a daemon killed while the editor watched leaves in the file.
 */
import { SqliteStore } from '../../daemon/store/sqlite.js';

async function main(): Promise<void> {
  await new SqliteStore(process.argv[2]!).watchChanges(() => {});
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
