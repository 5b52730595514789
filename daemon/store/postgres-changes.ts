/**
 * What a PostgreSQL store committed, for PostgresStore.watchChanges (protocol/lightning-store.ts): the daemon's event
 * stream tells the editor from it. Every writer of the database, this daemon or any other, notifies while a feed
 * listens: statement triggers (schema migrations 3, 5 and 7, changeTriggersSql, built from changes.ts) send the rows
 * a statement wrote, as a StoreChange in JSON, on the channel CHANGES_CHANNEL, and PostgreSQL delivers a
 * transaction's notifications when it commits, in commit order, to every session listening. While anyone watches,
 * the feed holds one connection of its own that LISTENs and is registered in agl_change_listeners; with nobody
 * registered the triggers return at once, so writers take no notification (and no commit-time notify lock, which
 * serialises every notifying commit of the cluster). When the connection drops the feed connects again and reports
 * `truncated` (changes may have been missed meanwhile).
 */
import pg from 'pg';
import { StoreChange, emptyChange } from '../../protocol/events.js';
import { changedItemsSql, type ChangeSource } from './changes.js';

export const CHANGES_CHANNEL = 'agl_store_changes';
const RETRY_MS = { min: 250, max: 5_000 };

/** The feeds listening now, by the backend pid of their LISTEN connection: the triggers notify only while there is one. */
const LISTENERS = 'agl_change_listeners';

/** A kind's trigger function: the items of the statement's rows (changes.ts), or nothing while no feed listens. */
function triggerFunctionSql(source: ChangeSource, fn: string): string {
  const items = (limit: string) => `(${changedItemsSql(source, 'changed_rows')}${limit}) c`;
  return `CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE n bigint; items jsonb;
  BEGIN
    IF NOT EXISTS (SELECT 1 FROM ${LISTENERS}) THEN RETURN NULL; END IF;
    SELECT count(*) INTO n FROM ${items('')};
    IF n = 0 THEN RETURN NULL; END IF;
    SELECT jsonb_agg(${source.select.startsWith('DISTINCT ') ? 'c.k' : 'to_jsonb(c)'}) INTO items FROM ${items(` LIMIT ${source.notifyAtMost}`)};
    PERFORM agl_notify(jsonb_build_object('${source.kind}', items, 'truncated', n > ${source.notifyAtMost}));
    RETURN NULL;
  END $$;`;
}

/** A trigger on `event` of the source's table running `fn` once per statement, over the rows it wrote. */
function triggerSql(source: ChangeSource, name: string, event: string, fn: string): string {
  return `DROP TRIGGER IF EXISTS ${name} ON ${source.table};
  CREATE TRIGGER ${name} AFTER ${event} ON ${source.table} REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ${fn}();`;
}

/** A source's trigger function and its triggers: on INSERT, and on UPDATE too for a table whose rows move. */
function sourceTriggersSql(s: ChangeSource): string {
  if (!s.moves) return [triggerFunctionSql(s, `agl_${s.kind}_added`), triggerSql(s, `agl_${s.kind}_added`, 'INSERT', `agl_${s.kind}_added`)].join('\n  ');
  const fn = `agl_${s.kind}_changed`;
  return [triggerFunctionSql(s, fn), triggerSql(s, `agl_${s.kind}_inserted`, 'INSERT', fn), triggerSql(s, `agl_${s.kind}_updated`, 'UPDATE', fn)].join('\n  ');
}

/**
 * The triggers (schema migrations 3 and 5 from changes.ts's CHANGE_SOURCES_SCHEMA_5, 7 from its CHANGE_SOURCES): each
 * statement that inserts rows, or updates rows of a table whose rows move, notifies their items while a feed listens
 * (an UPDATE trigger with a transition table takes no column list, so every update counts, not only those that set
 * `updated_at`: a few more events than SQLite's feed, never fewer). A notification's payload must stay under 8000
 * bytes or the writing transaction fails, so each lists a few rows (an agent name can be long) and agl_notify sends
 * `{"truncated": true}` instead of a payload that would be too long. Transition tables need one trigger per event
 * (INSERT, UPDATE); a statement that wrote no row sends nothing. Written to run again over itself (a store migrated
 * back by hand, as a test does).
 */
export const changeTriggersSql = (sources: readonly ChangeSource[]): string => `
  CREATE TABLE IF NOT EXISTS ${LISTENERS} (pid INTEGER PRIMARY KEY, since DOUBLE PRECISION NOT NULL);
  CREATE OR REPLACE FUNCTION agl_notify(payload jsonb) RETURNS void LANGUAGE plpgsql AS $$
  BEGIN
    IF octet_length(payload::text) > 7900 THEN payload := '{"truncated": true}'::jsonb; END IF;
    PERFORM pg_notify('${CHANGES_CHANNEL}', payload::text);
  END $$;
${sources.map(sourceTriggersSql).join('\n')}
`;

/** Registers a listening connection (after its LISTEN), first removing those whose backend is gone. */
const REGISTER_SQL = `DELETE FROM ${LISTENERS} WHERE pid NOT IN (SELECT pid FROM pg_stat_activity);
  INSERT INTO ${LISTENERS} (pid, since) VALUES (pg_backend_pid(), extract(epoch FROM now()) * 1000) ON CONFLICT (pid) DO NOTHING`;
const UNREGISTER_SQL = `DELETE FROM ${LISTENERS} WHERE pid = pg_backend_pid()`;
/** Listeners whose backend is gone (a daemon that died while watching): run when a store opens. */
export const FORGET_GONE_LISTENERS_SQL = `DELETE FROM ${LISTENERS} WHERE pid NOT IN (SELECT pid FROM pg_stat_activity)`;
/** Transactions in progress now (they may have written before a listener registered), and how many of them still are. */
const IN_PROGRESS_SQL = 'SELECT array_agg(x::text) AS xids FROM pg_snapshot_xip(pg_current_snapshot()) x';
const STILL_IN_PROGRESS_SQL = `SELECT count(*)::int AS n FROM unnest($1::xid8[]) x WHERE pg_xact_status(x) = 'in progress'`;
/** How long a new watch waits for the writers it may have missed before it resolves, and how often it looks (ms). */
const BARRIER_MS = 2_000;
const BARRIER_POLL_MS = 5;

export class PostgresChangeFeed {
  private readonly listeners = new Set<(c: StoreChange) => void>();
  private client: pg.Client | null = null;
  private retry: ReturnType<typeof setTimeout> | null = null;
  private retryMs = RETRY_MS.min;
  /** The first connection of the current watch, settled once it listens or failed. */
  private listening: Promise<void> = Promise.resolve();
  /** Bumped on stop: a connection made for an earlier watch is closed, not kept. */
  private generation = 0;

  constructor(
    private readonly connectionString: string,
    private readonly log: (message: string) => void,
  ) {}

  /**
   * Resolves once LISTEN is in place, so every commit after it is reported (or once the first try failed: the retries
   * report `truncated` when they get through).
   */
  async watch(listener: (c: StoreChange) => void): Promise<() => void> {
    this.listeners.add(listener);
    if (this.listeners.size === 1) this.listening = this.connect(false);
    await this.listening;
    return () => {
      if (this.listeners.delete(listener) && this.listeners.size === 0) this.stop();
    };
  }

  /** Stops listening (the last watcher left, or the store closes). */
  stop(): void {
    this.generation++;
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    const client = this.client;
    this.client = null;
    if (client) release(client);
  }

  close(): void {
    this.listeners.clear();
    this.stop();
  }

  private emit(change: StoreChange): void {
    for (const listener of this.listeners) listener(change);
  }

  /**
   * Waits for the transactions in progress when this feed registered: one may have written before the triggers saw a
   * listener and commit after the watch resolved, unannounced. After BARRIER_MS the watch goes on, and `truncated` is
   * reported once they are all done (a transaction left open that long is not the store's).
   */
  private async settle(client: pg.Client, generation: number): Promise<void> {
    const xids = ((await client.query(IN_PROGRESS_SQL)).rows[0]?.xids ?? []) as string[];
    const inProgress = async () => xids.length > 0 && ((await client.query(STILL_IN_PROGRESS_SQL, [xids])).rows[0]?.n ?? 0) > 0;
    const deadline = Date.now() + BARRIER_MS;
    while (await inProgress()) {
      if (Date.now() >= deadline) {
        void (async () => {
          while (generation === this.generation && (await inProgress())) await sleep(BARRIER_POLL_MS * 20);
          if (generation === this.generation) this.emit({ ...emptyChange(), truncated: true });
        })().catch(() => undefined);
        return;
      }
      await sleep(BARRIER_POLL_MS);
    }
  }

  /** LISTENs on a connection of its own; `again`: a dropped one is replaced, and what it may have missed is reported. */
  private async connect(again: boolean): Promise<void> {
    const generation = this.generation;
    const client = new pg.Client({ connectionString: this.connectionString });
    const lost = (why: string) => {
      if (generation !== this.generation || this.client !== client) return;
      this.client = null;
      this.log(`store changes: the listening connection dropped (${why}); connecting again`);
      client.end().catch(() => undefined);
      this.retry = setTimeout(() => void this.connect(true), this.retryMs);
      this.retryMs = Math.min(this.retryMs * 2, RETRY_MS.max);
    };
    client.on('error', (e) => lost(e.message));
    client.on('end', () => lost('closed'));
    client.on('notification', (n) => {
      if (n.channel !== CHANGES_CHANNEL) return;
      const change = parseChange(n.payload);
      if (!change) this.log(`store changes: a notification that is not a store change: ${String(n.payload).slice(0, 200)}`);
      this.emit(change ?? { ...emptyChange(), truncated: true });
    });
    this.client = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANGES_CHANNEL}`);
      await client.query(REGISTER_SQL);
      await this.settle(client, generation);
      if (generation !== this.generation) return release(client);
      this.retryMs = RETRY_MS.min;
      if (again) this.emit({ ...emptyChange(), truncated: true });
    } catch (e) {
      lost((e as Error).message);
    }
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Unregisters a listening connection, then closes it (a registration left behind is removed by the next feed or open). */
function release(client: pg.Client): void {
  client
    .query(UNREGISTER_SQL)
    .catch(() => undefined)
    .finally(() => client.end().catch(() => undefined));
}

function parseChange(payload: string | undefined): StoreChange | null {
  try {
    const parsed = StoreChange.safeParse(JSON.parse(payload ?? ''));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
