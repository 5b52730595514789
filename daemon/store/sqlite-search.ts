/**
 * The rollouts list's search, filters and sorts on SQLite: the FTS5 table `rollout_search` (rowid = the
 * rollout's seq; columns input and output), the reward/error columns on `rollouts` kept in step with the
 * spans (search.ts digests them), the migration that builds both for a store written before they existed,
 * and the SQL dialect rollout-query.ts builds queries with.
 */
import { ROLLOUT_METADATA_KEYS } from '../../protocol/store.js';
import type Database from 'better-sqlite3';
import { SPAN } from '../../protocol/spans.js';
import type { Span } from '../../protocol/store.js';
import { MAX_SEARCH_TEXT, digestChange, digestSpans, searchTextOf, servedColumnOf, type SpanDigest, type SummaryRow } from './search.js';
import type { SqlDialect } from './rollout-query.js';
import { summaryColumnsSql } from './schema.js';

type Statement = (sql: string) => Database.Statement;

/** Schema migration 2: the search table, the summary columns and their indexes (filled by backfillSearch). */
export const SEARCH_MIGRATION_SQL = `
  ${summaryColumnsSql('sqlite')}
  CREATE INDEX rollouts_run_step ON rollouts(json_extract(metadata, '$.${ROLLOUT_METADATA_KEYS.runId}'), json_extract(metadata, '$.${ROLLOUT_METADATA_KEYS.step}'), seq);
  CREATE VIRTUAL TABLE rollout_search USING fts5(input, output, tokenize = 'unicode61 remove_diacritics 0');
`;

/** The dialect of rollout-query.ts over SQLite (positional `?`). */
export function sqliteDialect(): SqlDialect {
  const params: unknown[] = [];
  return {
    params,
    param(v) {
      params.push(typeof v === 'boolean' ? Number(v) : v);
      return '?';
    },
    anyOf(column, values) {
      params.push(JSON.stringify(values));
      return `${column} IN (SELECT value FROM json_each(?))`;
    },
    // Terms are letters and digits only (searchTerms); quoting them makes each a plain FTS5 string, `*` a prefix.
    matchesAll(terms) {
      params.push(terms.map((t) => `"${t}"*`).join(' '));
      return 'r.seq IN (SELECT rowid FROM rollout_search WHERE rollout_search MATCH ?)';
    },
    metadataText(key) {
      return `json_extract(r.metadata, '$.${key}')`;
    },
    metadataNumber(key) {
      return `json_extract(r.metadata, '$.${key}')`;
    },
    // Our attribute names hold dots: quoted, each is one key of the path.
    spanAttributeText(key) {
      return `json_extract(s.data, '$.attributes."${key}"')`;
    },
    servedByName(name) {
      params.push(name);
      return "EXISTS (SELECT 1 FROM json_each(r.served) WHERE json_extract(value, '$.name') = ?)";
    },
  };
}

/** Indexes a new rollout's input (inside the transaction that inserts it). */
export function indexRolloutInput(st: Statement, seq: number, input: unknown): void {
  st('INSERT INTO rollout_search (rowid, input, output) VALUES (?, ?, ?)').run(seq, searchTextOf(input), '');
}

/**
 * Applies what stored spans change: search text, and the latest attempt's final reward, error count and the models
 * that answered its calls. `withServed` false: migration 2's backfill, before schema 8 added the `served` column.
 */
export function applySpanDigests(st: Statement, digests: Iterable<SpanDigest>, withServed = true): void {
  const read = `SELECT seq, latest_attempt_id, final_reward, reward_final, reward_time, ${withServed ? 'served' : 'NULL AS served'} FROM rollouts WHERE id = ?`;
  for (const d of digests) {
    const r = st(read).get(d.rolloutId) as (SummaryRow & { seq: number }) | undefined;
    if (!r) continue;
    const change = digestChange(d, r, withServed);
    // A full text stays as it is: not rewriting it spares FTS5 re-indexing the whole document on every call of a long rollout.
    if (change.output)
      st("UPDATE rollout_search SET output = substr(output || ' ' || ?, 1, ?) WHERE rowid = ? AND length(output) < ?").run(
        change.output,
        MAX_SEARCH_TEXT,
        r.seq,
        MAX_SEARCH_TEXT,
      );
    if (change.errors) st('UPDATE rollouts SET error_spans = error_spans + ? WHERE seq = ?').run(change.errors, r.seq);
    if (change.reward) {
      st('UPDATE rollouts SET final_reward = ?, reward_final = ?, reward_time = ? WHERE seq = ?').run(
        change.reward.value,
        change.reward.final ? 1 : 0,
        change.reward.time,
        r.seq,
      );
    }
    // Written when a call names a model the attempt had not had yet: once per attempt, mostly, not once per call.
    if (change.served) st('UPDATE rollouts SET served = ? WHERE seq = ?').run(change.served, r.seq);
  }
}

/**
 * Migration 2's data: indexes every rollout's input and digests its spans that matter (LLM calls, rewards,
 * messages, errors) in the order they were stored.
 */
export function backfillSearch(db: Database.Database): void {
  const cache = new Map<string, Database.Statement>();
  const st: Statement = (sql) => {
    let s = cache.get(sql);
    if (!s) cache.set(sql, (s = db.prepare(sql)));
    return s;
  };
  // better-sqlite3 runs nothing else while an iterator is open: read the ids first, then one rollout at a time.
  const rollouts = db.prepare('SELECT seq, id, input FROM rollouts').all() as Array<{ seq: number; id: string; input: string }>;
  const insert = db.prepare('INSERT INTO rollout_search (rowid, input, output) VALUES (?, ?, ?)');
  const spans = db.prepare(`SELECT data FROM spans WHERE rollout_id = ? AND (name IN (?, ?, ?)
    OR json_extract(data, '$.attributes."gen_ai.operation.name"') IN ('chat', 'text_completion')
    OR json_extract(data, '$.status.code') = 'error') ORDER BY sequence_id`);
  for (const r of rollouts) {
    insert.run(r.seq, searchTextOf(JSON.parse(r.input)), '');
    const rows = spans.all(r.id, SPAN.llmCall, SPAN.reward, SPAN.message) as Array<{ data: string }>;
    if (rows.length) applySpanDigests(st, digestSpans(rows.map((x) => JSON.parse(x.data) as Span)).values(), false);
  }
}

/** Schema 8's data: each rollout's `served` from the LLM call spans of its latest attempt, in the order they were stored. */
export function backfillServed(db: Database.Database): void {
  const rollouts = db.prepare('SELECT seq, id, latest_attempt_id FROM rollouts WHERE latest_attempt_id IS NOT NULL').all() as Array<{
    seq: number;
    id: string;
    latest_attempt_id: string;
  }>;
  const calls = db.prepare(`SELECT data FROM spans WHERE rollout_id = ? AND attempt_id = ? AND (name = ?
    OR json_extract(data, '$.attributes."gen_ai.operation.name"') IN ('chat', 'text_completion')) ORDER BY sequence_id`);
  const write = db.prepare('UPDATE rollouts SET served = ? WHERE seq = ?');
  for (const r of rollouts) {
    const rows = calls.all(r.id, r.latest_attempt_id, SPAN.llmCall) as Array<{ data: string }>;
    const served = rows.length ? servedColumnOf(rows.map((x) => JSON.parse(x.data) as Span)) : null;
    if (served) write.run(served, r.seq);
  }
}
