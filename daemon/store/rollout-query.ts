/**
 * The one translation of a RolloutQuery (filters, search, sort, paging) into SQL, shared by SQLite and
 * PostgreSQL: each backend gives its dialect (placeholders, lists, full-text match, JSON metadata access) and
 * runs the statements. Every value a caller sends travels as a bound parameter; the SQL text is built only
 * from our constants. Rows carry the latest attempt's columns (a_*) for RolloutSummary.
 */
import { AGL, SPAN } from '../../protocol/spans.js';
import { ROLLOUT_METADATA_KEYS } from '../../protocol/store.js';
import type { RolloutSummary } from '../../protocol/store.js';
import { decodeCursor, encodeCursor, pageLimit, rowToRollout, type Row } from './common.js';
import { STATUS_RANK_SQL, searchTerms, storedServed } from './search.js';
import type { RolloutPage, RolloutQuery } from '../../protocol/lightning-store.js';

export interface SqlDialect {
  /** Every value bound so far, in placeholder order. */
  readonly params: unknown[];
  /** Binds a value; returns its placeholder. */
  param(value: unknown): string;
  /** `column` is one of `values` (values bound). */
  anyOf(column: string, values: readonly string[]): string;
  /** The rollout `r` has search text holding every term (each as a prefix); terms are letters and digits only. */
  matchesAll(terms: string[]): string;
  /** The metadata key as text / as a number. */
  metadataText(key: string): string;
  metadataNumber(key: string): string;
  /** The attribute `key` (one of ours: letters, digits, `.`, `_`) as text, of the span row `s` (spans table). */
  spanAttributeText(key: string): string;
  /** The rollout `r`'s `served` column (a JSON list of models, search.ts) names a model called `name` (bound). */
  servedByName(name: string): string;
}

/** The rollouts with their latest attempt (absent before the first claim). */
export const ROLLOUTS_FROM = 'rollouts r LEFT JOIN attempts a ON a.id = r.latest_attempt_id';
export const ROLLOUT_COLUMNS = 'r.*, a.started_at AS a_started_at, a.ended_at AS a_ended_at, a.error AS a_error';

const SORT_KEYS = {
  createdAt: 'r.seq',
  duration: '(a.ended_at - a.started_at)',
  reward: 'r.final_reward',
  status: STATUS_RANK_SQL,
} as const;

/**
 * The conditions of the query's filters (cursor excluded), ANDed by the caller. `agentAliases`: the stored agent
 * names that are the asked-for agent (protocol/agent-id.ts agentAliasesIn), which the backend looks up.
 */
function filterSql(q: RolloutQuery, d: SqlDialect, agentAliases: readonly string[]): string[] {
  const where: string[] = [];
  if (q.status) where.push(d.anyOf('r.status', q.status));
  if (q.ids) where.push(d.anyOf('r.id', q.ids));
  if (q.mode !== undefined) where.push(`r.mode = ${d.param(q.mode)}`);
  if (q.resourcesId !== undefined) where.push(`r.resources_id = ${d.param(q.resourcesId)}`);
  if (q.resourcesVersion !== undefined) where.push(`r.resources_version = ${d.param(q.resourcesVersion)}`);
  if (q.agent !== undefined) where.push(d.anyOf('r.agent', agentAliases.length ? agentAliases : [q.agent]));
  if (q.rewardMin !== undefined) where.push(`r.final_reward >= ${d.param(q.rewardMin)}`);
  if (q.rewardMax !== undefined) where.push(`r.final_reward <= ${d.param(q.rewardMax)}`);
  if (q.runId !== undefined) where.push(`${d.metadataText(ROLLOUT_METADATA_KEYS.runId)} = ${d.param(q.runId)}`);
  if (q.step !== undefined) where.push(`${d.metadataNumber(ROLLOUT_METADATA_KEYS.step)} = ${d.param(q.step)}`);
  if (q.candidate !== undefined) where.push(`${d.metadataText(ROLLOUT_METADATA_KEYS.candidate)} = ${d.param(q.candidate)}`);
  if (q.promptVersion !== undefined) where.push(promptVersionSql(q.promptVersion, d));
  if (q.servedBy !== undefined) where.push(`r.served IS NOT NULL AND ${d.servedByName(q.servedBy)}`);
  if (q.hasError === true) where.push('(a.error IS NOT NULL OR r.error_spans > 0)');
  if (q.hasError === false) where.push('(a.error IS NULL AND r.error_spans = 0)');
  if (q.search !== undefined) {
    const terms = searchTerms(q.search);
    if (terms.length) where.push(d.matchesAll(terms));
  }
  return where;
}

/**
 * The rollout read a prompt at this version or text sha: one of its prompt spans says so (the spans of one rollout
 * are found by the spans table's key, the rollout id first).
 */
function promptVersionSql(version: string, d: SqlDialect): string {
  // Each placeholder binds its own value (SQLite's `?` are positional).
  return (
    `EXISTS (SELECT 1 FROM spans s WHERE s.rollout_id = r.id AND s.name = ${d.param(SPAN.prompt)}` +
    ` AND (${d.spanAttributeText(AGL.promptVersion)} = ${d.param(version)} OR ${d.spanAttributeText(AGL.promptSha)} = ${d.param(version)}))`
  );
}

export interface RolloutStatements {
  /** The page, with every parameter the dialect bound (LIMIT and OFFSET last). */
  page: string;
  /** The count of every match, or null when not asked for; its parameters are the first `countParams` bound. */
  count: string | null;
  countParams: number;
  limit: number;
}

/** Builds the page (and count) statements, binding values into `d`. */
export function rolloutStatements(q: RolloutQuery, d: SqlDialect, agentAliases: readonly string[] = []): RolloutStatements {
  const limit = pageLimit(q.limit);
  const sort = q.sort ?? 'createdAt';
  if (q.cursor !== undefined && sort !== 'createdAt') throw new TypeError(`a cursor pages sort=createdAt only (got sort=${sort}): use offset`);
  if (q.cursor !== undefined && q.offset !== undefined) throw new TypeError('give a cursor or an offset, not both');
  if (q.offset !== undefined && (!Number.isInteger(q.offset) || q.offset < 0)) throw new TypeError(`offset must be a non-negative integer, got ${q.offset}`);
  const where = filterSql(q, d, agentAliases);
  const whereSql = (w: string[]) => (w.length ? ' WHERE ' + w.join(' AND ') : '');
  // Only the error filter reads the latest attempt: without it, counting skips the join.
  const countFrom = q.hasError === undefined ? 'rollouts r' : ROLLOUTS_FROM;
  const count = q.withTotal ? `SELECT COUNT(*) AS n FROM ${countFrom}${whereSql(where)}` : null;
  const countParams = d.params.length;
  const asc = q.order === 'asc';
  const dir = asc ? 'ASC' : 'DESC';
  if (q.cursor !== undefined) where.push(`r.seq ${asc ? '>' : '<'} ${d.param(decodeCursor(q.cursor))}`);
  const order = sort === 'createdAt' ? `r.seq ${dir}` : `${SORT_KEYS[sort]} ${dir} NULLS LAST, r.seq ${dir}`;
  const page = `SELECT ${ROLLOUT_COLUMNS} FROM ${ROLLOUTS_FROM}${whereSql(where)}
    ORDER BY ${order} LIMIT ${d.param(limit + 1)} OFFSET ${d.param(q.offset ?? 0)}`;
  return { page, count, countParams, limit };
}

/** A RolloutSummary from a row of ROLLOUT_COLUMNS. */
export function rowToSummary(r: Row): RolloutSummary {
  const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
  const startedAt = num(r.a_started_at);
  const endedAt = num(r.a_ended_at);
  return {
    finalReward: num(r.final_reward),
    startedAt,
    durationMs: startedAt !== null && endedAt !== null ? endedAt - startedAt : null,
    error: r.a_error ? (JSON.parse(r.a_error) as { message: string }).message : null,
    errorSpans: Number(r.error_spans ?? 0),
    served: storedServed(r.served),
  };
}

/** The page from its rows (limit + 1 asked, to know whether more follow) and the count's row. */
export function rolloutPage(q: RolloutQuery, rows: Row[], limit: number, total: number | null): RolloutPage {
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  const sortsByCreation = (q.sort ?? 'createdAt') === 'createdAt';
  const out: RolloutPage = {
    items: page.map(rowToRollout),
    nextCursor: more && sortsByCreation ? encodeCursor(Number(page[page.length - 1]!.seq)) : null,
  };
  if (total !== null) out.total = total;
  if (q.withSummaries) out.summaries = page.map(rowToSummary);
  return out;
}
