/**
 * The rollouts list's search, filters and sorts on PostgreSQL: full-text search over `rollout_text` (one row
 * per rollout: its input's words, then its outputs', pre-split by search.ts so PostgreSQL's parser and SQLite's
 * FTS5 see the same words) with a GIN index on `to_tsvector('simple', body)`, the reward/error columns on
 * `rollouts` kept in step with the spans, the migration that builds both for an existing store, and the SQL
 * dialect rollout-query.ts builds queries with.
 */
import { ROLLOUT_METADATA_KEYS } from '../../protocol/store.js';
import type pg from 'pg';
import { SPAN } from '../../protocol/spans.js';
import type { Span } from '../../protocol/store.js';
import {
  MAX_SEARCH_TEXT,
  changesSummary,
  digestChange,
  digestSpans,
  indexedWords,
  searchTextOf,
  servedColumnOf,
  type SpanDigest,
  type SummaryRow,
} from './search.js';
import type { SqlDialect } from './rollout-query.js';
import { summaryColumnsSql } from './schema.js';

type Queryable = Pick<pg.PoolClient, 'query'>;

/** Schema migration 2: the search table, the summary columns and their indexes (filled by backfillSearch). */
export const SEARCH_MIGRATION_SQL = `
  ${summaryColumnsSql('postgres')}
  CREATE INDEX rollouts_run_step ON rollouts(((metadata::jsonb) ->> '${ROLLOUT_METADATA_KEYS.runId}'), seq);
  CREATE TABLE rollout_text (rollout_id TEXT PRIMARY KEY, body TEXT NOT NULL);
  CREATE INDEX rollout_text_words ON rollout_text USING GIN (to_tsvector('simple', body));
`;

/** The dialect of rollout-query.ts over PostgreSQL (`$n` placeholders). */
export function postgresDialect(): SqlDialect {
  const params: unknown[] = [];
  const param = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  return {
    params,
    param,
    anyOf: (column, values) => `${column} = ANY(${param([...values])})`,
    // Terms are letters and digits only (searchTerms), so `term:*` is always a valid prefix query.
    matchesAll: (terms) =>
      `r.id IN (SELECT rollout_id FROM rollout_text WHERE to_tsvector('simple', body) @@ to_tsquery('simple', ${param(terms.map((t) => `${t}:*`).join(' & '))}))`,
    metadataText: (key) => `((r.metadata::jsonb) ->> '${key}')`,
    metadataNumber: (key) => `(CASE WHEN jsonb_typeof((r.metadata::jsonb) -> '${key}') = 'number' THEN ((r.metadata::jsonb) ->> '${key}')::float8 END)`,
    spanAttributeText: (key) => `((s.data::jsonb) -> 'attributes' ->> '${key}')`,
    servedByName: (name) => `(r.served::jsonb) @> jsonb_build_array(jsonb_build_object('name', ${param(name)}::text))`,
  };
}

/** The indexed words of rollouts' inputs, for INSERT INTO rollout_text ... unnest($ids, $bodies). */
export function inputBodies(inputs: unknown[]): string[] {
  return inputs.map((input) => indexedWords(searchTextOf(input)));
}
/** Indexes new rollouts' inputs (run in the statement or transaction that inserts them). */
export const INSERT_TEXT_SQL = (ids: string, bodies: string) =>
  `INSERT INTO rollout_text (rollout_id, body) SELECT * FROM unnest(${ids}::text[], ${bodies}::text[])`;

/**
 * Applies what stored spans change (the rollouts are locked by the caller's transaction): search text, and the latest
 * attempt's final reward, error count and the models that answered its calls, in one UPDATE of the rollouts.
 * `withServed` false: migration 2's backfill, before schema 8 added the `served` column.
 */
export async function applySpanDigests(c: Queryable, digests: SpanDigest[], withServed = true): Promise<void> {
  if (digests.length === 0) return;
  const read = `SELECT id, latest_attempt_id, final_reward, reward_final, reward_time, ${withServed ? 'served' : 'NULL AS served'} FROM rollouts WHERE id = ANY($1)`;
  const rows = (await c.query(read, [digests.map((d) => d.rolloutId)])).rows as Array<SummaryRow & { id: string }>;
  const byId = new Map(rows.map((r) => [r.id, r]));
  const text: [string[], string[]] = [[], []];
  // The summary's columns, one array each, in the order of the UPDATE's unnest.
  const summary = [[], [], [], [], [], [], []] as [
    string[],
    number[],
    boolean[],
    Array<number | null>,
    Array<boolean | null>,
    Array<number | null>,
    Array<string | null>,
  ];
  for (const d of digests) {
    const r = byId.get(d.rolloutId);
    if (!r) continue;
    const change = digestChange(d, r, withServed);
    if (change.output) {
      text[0].push(d.rolloutId);
      text[1].push(indexedWords(change.output));
    }
    if (changesSummary(change)) {
      summary[0].push(d.rolloutId);
      summary[1].push(change.errors);
      summary[2].push(change.reward !== null);
      summary[3].push(change.reward?.value ?? null);
      summary[4].push(change.reward?.final ?? null);
      summary[5].push(change.reward?.time ?? null);
      summary[6].push(change.served);
    }
  }
  if (text[0].length) {
    await c.query(
      `UPDATE rollout_text t SET body = left(t.body || ' ' || v.body, ${MAX_SEARCH_TEXT})
      FROM unnest($1::text[], $2::text[]) AS v(id, body) WHERE t.rollout_id = v.id AND length(t.body) < ${MAX_SEARCH_TEXT}`,
      text,
    );
  }
  if (summary[0].length) {
    await c.query(
      `UPDATE rollouts r SET error_spans = r.error_spans + v.errors,
        final_reward = CASE WHEN v.set THEN v.value ELSE r.final_reward END,
        reward_final = CASE WHEN v.set THEN v.final ELSE r.reward_final END,
        reward_time = CASE WHEN v.set THEN v.time ELSE r.reward_time END${withServed ? ', served = COALESCE(v.served, r.served)' : ''}
      FROM unnest($1::text[], $2::int[], $3::bool[], $4::float8[], $5::bool[], $6::float8[]${withServed ? ', $7::text[]' : ''})
        AS v(id, errors, set, value, final, time${withServed ? ', served' : ''})
      WHERE r.id = v.id`,
      withServed ? summary : summary.slice(0, 6),
    );
  }
}

/** Spans that change a rollout's search text or summary (the rest are skipped by the backfill). */
const DIGESTED_SPANS_SQL = `SELECT data FROM spans WHERE rollout_id = ANY($1) AND (name = ANY($2)
  OR (data::jsonb) #>> '{attributes,gen_ai.operation.name}' IN ('chat', 'text_completion')
  OR (data::jsonb) #>> '{status,code}' = 'error') ORDER BY rollout_id, sequence_id`;

/** Migration 2's data: every rollout's input words, then its spans digested, 500 rollouts at a time. */
export async function backfillSearch(c: Queryable): Promise<void> {
  let after = -1;
  for (;;) {
    const rollouts = (await c.query('SELECT seq, id, input FROM rollouts WHERE seq > $1 ORDER BY seq LIMIT 500', [after])).rows as Array<{
      seq: string;
      id: string;
      input: string;
    }>;
    if (rollouts.length === 0) return;
    after = Number(rollouts[rollouts.length - 1]!.seq);
    const ids = rollouts.map((r) => r.id);
    await c.query(INSERT_TEXT_SQL('$1', '$2'), [ids, inputBodies(rollouts.map((r) => JSON.parse(r.input)))]);
    const spans = (await c.query(DIGESTED_SPANS_SQL, [ids, [SPAN.llmCall, SPAN.reward, SPAN.message]])).rows.map((r) => JSON.parse(r.data) as Span);
    await applySpanDigests(c, [...digestSpans(spans).values()], false);
  }
}

/** Schema 8's data: each rollout's `served` from the LLM call spans of its latest attempt, 500 rollouts at a time. */
export async function backfillServed(c: Queryable): Promise<void> {
  let after = -1;
  for (;;) {
    const rollouts = (await c.query('SELECT seq, id FROM rollouts WHERE seq > $1 ORDER BY seq LIMIT 500', [after])).rows as Array<{ seq: string; id: string }>;
    if (rollouts.length === 0) return;
    after = Number(rollouts[rollouts.length - 1]!.seq);
    const rows = (
      await c.query(
        `SELECT s.rollout_id, s.data FROM spans s JOIN rollouts r ON r.id = s.rollout_id AND s.attempt_id = r.latest_attempt_id
        WHERE s.rollout_id = ANY($1) AND (s.name = $2 OR (s.data::jsonb) #>> '{attributes,gen_ai.operation.name}' IN ('chat', 'text_completion'))
        ORDER BY s.rollout_id, s.sequence_id`,
        [rollouts.map((r) => r.id), SPAN.llmCall],
      )
    ).rows as Array<{ rollout_id: string; data: string }>;
    const byRollout = new Map<string, Span[]>();
    for (const row of rows) {
      const spans = byRollout.get(row.rollout_id) ?? [];
      spans.push(JSON.parse(row.data) as Span);
      byRollout.set(row.rollout_id, spans);
    }
    const ids: string[] = [];
    const served: string[] = [];
    for (const [id, spans] of byRollout) {
      const column = servedColumnOf(spans);
      if (!column) continue;
      ids.push(id);
      served.push(column);
    }
    if (ids.length)
      await c.query('UPDATE rollouts r SET served = v.served FROM unnest($1::text[], $2::text[]) AS v(id, served) WHERE r.id = v.id', [ids, served]);
  }
}
