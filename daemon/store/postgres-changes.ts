/**
 * What a PostgreSQL store committed, for PostgresStore.watchChanges (protocol/lightning-store.ts): the daemon's event
 * stream tells the editor from it. Every writer of the database, this daemon or any other, notifies: statement
 * triggers (schema migration 3, CHANGE_TRIGGERS_SQL) send the rows a statement wrote, as a StoreChange in JSON, on
 * the channel CHANGES_CHANNEL, and PostgreSQL delivers a transaction's notifications when it commits, in commit
 * order, to every session listening. While anyone watches, the feed holds one connection of its own that LISTENs;
 * when that connection drops it connects again and reports `truncated` (changes may have been missed meanwhile).
 */
import pg from 'pg';
import { StoreChange, emptyChange } from '../../protocol/events.js';

export const CHANGES_CHANNEL = 'agl_store_changes';
const RETRY_MS = { min: 250, max: 5_000 };

/**
 * The triggers. A notification's payload must stay under 8000 bytes or the writing transaction fails, so each
 * lists a few rows (an agent name can be long) and agl_notify sends `{"truncated": true}` instead of a payload that
 * would be too long. Transition tables need one trigger per event (INSERT, UPDATE); a statement that wrote no row
 * sends nothing. Written to run again over itself (a store migrated back by hand, as a test does).
 */
export const CHANGE_TRIGGERS_SQL = `
  CREATE OR REPLACE FUNCTION agl_notify(payload jsonb) RETURNS void LANGUAGE plpgsql AS $$
  BEGIN
    IF octet_length(payload::text) > 7900 THEN payload := '{"truncated": true}'::jsonb; END IF;
    PERFORM pg_notify('${CHANGES_CHANNEL}', payload::text);
  END $$;

  CREATE OR REPLACE FUNCTION agl_rollouts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE n bigint; items jsonb;
  BEGIN
    SELECT count(*) INTO n FROM changed_rows;
    IF n = 0 THEN RETURN NULL; END IF;
    SELECT jsonb_agg(jsonb_build_object('id', id, 'agent', agent, 'status', status, 'attemptId', latest_attempt_id, 'attempts', attempt_count))
      INTO items FROM (SELECT * FROM changed_rows LIMIT 40) c;
    PERFORM agl_notify(jsonb_build_object('rollouts', items, 'truncated', n > 40));
    RETURN NULL;
  END $$;
  DROP TRIGGER IF EXISTS agl_rollouts_inserted ON rollouts;
  CREATE TRIGGER agl_rollouts_inserted AFTER INSERT ON rollouts REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION agl_rollouts_changed();
  DROP TRIGGER IF EXISTS agl_rollouts_updated ON rollouts;
  CREATE TRIGGER agl_rollouts_updated AFTER UPDATE ON rollouts REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION agl_rollouts_changed();

  CREATE OR REPLACE FUNCTION agl_spans_added() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE n bigint; items jsonb;
  BEGIN
    SELECT count(DISTINCT rollout_id) INTO n FROM changed_rows;
    IF n = 0 THEN RETURN NULL; END IF;
    SELECT jsonb_agg(rollout_id) INTO items FROM (SELECT DISTINCT rollout_id FROM changed_rows LIMIT 100) s;
    PERFORM agl_notify(jsonb_build_object('spans', items, 'truncated', n > 100));
    RETURN NULL;
  END $$;
  DROP TRIGGER IF EXISTS agl_spans_added ON spans;
  CREATE TRIGGER agl_spans_added AFTER INSERT ON spans REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION agl_spans_added();

  CREATE OR REPLACE FUNCTION agl_runs_changed() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE items jsonb;
  BEGIN
    SELECT jsonb_agg(jsonb_build_object('id', id, 'agent', agent, 'status', status, 'step', step, 'totalSteps', total_steps))
      INTO items FROM changed_rows;
    IF items IS NOT NULL THEN PERFORM agl_notify(jsonb_build_object('runs', items)); END IF;
    RETURN NULL;
  END $$;
  DROP TRIGGER IF EXISTS agl_runs_inserted ON training_runs;
  CREATE TRIGGER agl_runs_inserted AFTER INSERT ON training_runs REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION agl_runs_changed();
  DROP TRIGGER IF EXISTS agl_runs_updated ON training_runs;
  CREATE TRIGGER agl_runs_updated AFTER UPDATE ON training_runs REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION agl_runs_changed();

  CREATE OR REPLACE FUNCTION agl_metrics_added() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE items jsonb;
  BEGIN
    SELECT jsonb_agg(jsonb_build_object('runId', run_id, 'step', step)) INTO items
      FROM (SELECT run_id, max(step) AS step FROM changed_rows GROUP BY run_id) m;
    IF items IS NOT NULL THEN PERFORM agl_notify(jsonb_build_object('metrics', items)); END IF;
    RETURN NULL;
  END $$;
  DROP TRIGGER IF EXISTS agl_metrics_added ON metrics;
  CREATE TRIGGER agl_metrics_added AFTER INSERT ON metrics REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION agl_metrics_added();

  CREATE OR REPLACE FUNCTION agl_transitions_added() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE items jsonb;
  BEGIN
    SELECT jsonb_agg(run_id) INTO items FROM (SELECT DISTINCT run_id FROM changed_rows) t;
    IF items IS NOT NULL THEN PERFORM agl_notify(jsonb_build_object('transitions', items)); END IF;
    RETURN NULL;
  END $$;
  DROP TRIGGER IF EXISTS agl_transitions_added ON transitions;
  CREATE TRIGGER agl_transitions_added AFTER INSERT ON transitions REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION agl_transitions_added();

  CREATE OR REPLACE FUNCTION agl_resources_added() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE items jsonb;
  BEGIN
    SELECT jsonb_agg(jsonb_build_object('id', id, 'version', version)) INTO items FROM changed_rows;
    IF items IS NOT NULL THEN PERFORM agl_notify(jsonb_build_object('resources', items)); END IF;
    RETURN NULL;
  END $$;
  DROP TRIGGER IF EXISTS agl_resources_added ON resources;
  CREATE TRIGGER agl_resources_added AFTER INSERT ON resources REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION agl_resources_added();
`;

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
    client?.end().catch(() => undefined);
  }

  close(): void {
    this.listeners.clear();
    this.stop();
  }

  private emit(change: StoreChange): void {
    for (const listener of this.listeners) listener(change);
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
      if (generation !== this.generation) return void client.end().catch(() => undefined);
      this.retryMs = RETRY_MS.min;
      if (again) this.emit({ ...emptyChange(), truncated: true });
    } catch (e) {
      lost((e as Error).message);
    }
  }
}

function parseChange(payload: string | undefined): StoreChange | null {
  try {
    const parsed = StoreChange.safeParse(JSON.parse(payload ?? ''));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
