/**
 * Datasets from traces: the one row builder that `agl dataset from-rollouts` (daemon/eval/from-rollouts.ts) and the
 * trajectory viewer's "Add to dataset" (extension/panels/dataset-add.ts) both use, and the one rule for adding rows to a
 * dataset file that already has some. Pure, over a reader of rollouts and spans (the store, or the daemon's HTTP client).
 *
 * A rollout's row (protocol/eval.ts EvalRow): its task input, the answer its latest attempt recorded as `expected`
 * (span-reading.ts episodeAnswer: the value the agent returned, else its final object), its task id, and where it came
 * from. A corrected row (the user gave the expected answer) also keeps what the agent answered (`from.answered`) and the
 * agent's final LLM call's request (`from.call`: its prompt text, or its chat messages): `agl sft --data` trains that
 * call to answer the correction. A rollout that recorded no answer gives no row unless it is corrected.
 *
 * Adding rows never duplicates one: a row whose task input (as canonical JSON) is already in the file, or earlier in the
 * rows added, is left out; an id already taken becomes the rollout's id (then `-2`, `-3`...).
 */
import type { EvalRow, FinalCall, GraderName } from './eval.js';
import type { RolloutQuery, SpanQuery } from './lightning-store.js';
import { canonicalJson, episodeAnswer, llmCallNumbers } from './span-reading.js';
import { GENAI } from './spans.js';
import { readRolloutMetadata, type Rollout, type Span } from './store.js';

/** What rows are read through: the store (LightningStore) or the daemon's HTTP client (AglClient). */
export interface RolloutReader {
  queryRollouts(q: RolloutQuery): Promise<{ items: Rollout[]; nextCursor: string | null }>;
  querySpans(q: SpanQuery): Promise<Span[]>;
}

export interface RowOptions {
  /** The rows' grader (omitted: the dataset's reader picks `exact` for rows with `expected`). */
  grader?: GraderName | null;
  /** Expected answers the user corrected, by rollout id (they replace the recorded answer). */
  corrected?: ReadonlyMap<string, unknown>;
}

/** The agent's final LLM call's request (the last call started), or null when it made none. */
export function finalCall(spans: Span[]): FinalCall | null {
  const lastId = [...llmCallNumbers(spans).keys()].at(-1); // in call-number order
  const last = spans.find((s) => s.spanId === lastId);
  const raw = last?.attributes[GENAI.inputMessages];
  if (!last || typeof raw !== 'string') return null;
  const value = parseJson(raw);
  if (typeof value === 'string') return { prompt: value };
  if (last.attributes[GENAI.operationName] === 'text_completion' || !Array.isArray(value) || !value.length) return null;
  return value.every((m) => m !== null && typeof m === 'object') ? { messages: value as Record<string, unknown>[] } : null;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** One rollout's row (its latest attempt's `spans`), or null when it recorded no answer and was not corrected. */
export function datasetRow(rollout: Rollout, spans: Span[], o: RowOptions = {}): EvalRow | null {
  const answer = episodeAnswer(spans);
  const corrected = o.corrected?.has(rollout.id) ?? false;
  if (answer.source === 'none' && !corrected) return null;
  const m = readRolloutMetadata(rollout.metadata);
  const call = corrected ? finalCall(spans) : null;
  return {
    id: m.taskId ?? rollout.id,
    input: rollout.input as EvalRow['input'],
    expected: corrected ? o.corrected!.get(rollout.id) : answer.value,
    ...(o.grader ? { grader: o.grader } : {}),
    from: {
      rolloutId: rollout.id,
      runId: m.runId ?? null,
      ...(corrected ? { answered: answer.source === 'none' ? null : answer.value } : {}),
      ...(call ? { call } : {}),
    },
  };
}

export interface RowsResult {
  rows: EvalRow[];
  /** Rollouts selected that recorded no answer (no row). */
  noAnswer: string[];
}

/** Rollouts asked for per page. */
const PAGE = 200;

/** The rows of the rollouts `query` selects (newest first), at most `limit`. */
export async function rowsFromRollouts(
  reader: RolloutReader,
  query: Omit<RolloutQuery, 'limit' | 'cursor' | 'offset' | 'sort' | 'order'>,
  o: RowOptions & { limit: number },
): Promise<RowsResult> {
  const out: RowsResult = { rows: [], noAnswer: [] };
  let cursor: string | null = null;
  do {
    const page = await reader.queryRollouts({ ...query, limit: PAGE, ...(cursor ? { cursor } : {}) });
    await addRows(reader, page.items, o, out, o.limit);
    cursor = page.nextCursor;
  } while (cursor && out.rows.length < o.limit);
  return out;
}

/** The rows of the rollouts `ids`, in that order (an id the store does not have is an error naming it). */
export async function rowsOfRollouts(reader: RolloutReader, ids: string[], o: RowOptions = {}): Promise<RowsResult> {
  const found = new Map<string, Rollout>();
  for (let i = 0; i < ids.length; i += PAGE)
    for (const r of (await reader.queryRollouts({ ids: ids.slice(i, i + PAGE), limit: PAGE })).items) found.set(r.id, r);
  const missing = ids.filter((id) => !found.has(id));
  if (missing.length)
    throw new Error(`no rollout ${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ` (and ${missing.length - 3} more)` : ''} in this store`);
  const out: RowsResult = { rows: [], noAnswer: [] };
  await addRows(
    reader,
    [...new Set(ids)].map((id) => found.get(id)!),
    o,
    out,
    Infinity,
  );
  return out;
}

/** Adds the rows of `rollouts` to `out` (their latest attempts' spans read one by one) until it holds `limit`. */
async function addRows(reader: RolloutReader, rollouts: Rollout[], o: RowOptions, out: RowsResult, limit: number): Promise<void> {
  for (const r of rollouts) {
    if (out.rows.length >= limit) return;
    const row = datasetRow(r, await reader.querySpans({ rolloutId: r.id, attemptId: 'latest' }), o);
    if (row) out.rows.push(row);
    else out.noAnswer.push(r.id);
  }
}

/** What a dataset file already holds: its rows' ids, and each task input (canonical JSON) with its line. */
export interface DatasetContents {
  ids: Set<string>;
  inputs: Map<string, number>;
}

/** Reads what `text` (a dataset file's) holds; a line that is not a JSON object is an error naming it. */
export function datasetContents(text: string, file: string): DatasetContents {
  const out: DatasetContents = { ids: new Set(), inputs: new Map() };
  text.split('\n').forEach((raw, i) => {
    if (!raw.trim()) return;
    let row: unknown;
    try {
      row = JSON.parse(raw);
    } catch (e) {
      throw new Error(`${file}:${i + 1}: not valid JSON (${(e as Error).message}): fix it before adding rows`, { cause: e });
    }
    if (!row || typeof row !== 'object' || Array.isArray(row)) throw new Error(`${file}:${i + 1}: a row is a JSON object: fix it before adding rows`);
    const r = row as { id?: unknown; input?: unknown };
    out.ids.add(r.id === undefined ? `line-${i + 1}` : String(r.id));
    if (!out.inputs.has(canonicalJson(r.input))) out.inputs.set(canonicalJson(r.input), i + 1);
  });
  return out;
}

export interface NewRows {
  /** The rows to add (ids made unique). */
  rows: EvalRow[];
  /** Rows left out: their task is in the file already (its line), or earlier among the rows (line null). */
  duplicates: { rolloutId: string | null; line: number | null }[];
}

/** The rows of `rows` that `existing` does not hold yet, each with an id not taken (in the file or among them). */
export function newRows(existing: DatasetContents, rows: EvalRow[]): NewRows {
  const out: NewRows = { rows: [], duplicates: [] };
  const ids = new Set(existing.ids);
  const added = new Set<string>();
  for (const row of rows) {
    const key = canonicalJson(row.input);
    const line = existing.inputs.get(key);
    if (line !== undefined || added.has(key)) {
      out.duplicates.push({ rolloutId: row.from?.rolloutId ?? null, line: line ?? null });
      continue;
    }
    added.add(key);
    const wanted = [row.id === undefined ? null : String(row.id), row.from?.rolloutId ?? null].filter((x): x is string => x !== null);
    const base = wanted[0] ?? 'row';
    let id = wanted.find((w) => !ids.has(w));
    for (let n = 2; id === undefined; n++) if (!ids.has(`${base}-${n}`)) id = `${base}-${n}`;
    ids.add(id);
    out.rows.push({ ...row, id });
  }
  return out;
}

/** The row on line `line` (1-based) of `text`, a dataset file's (read by datasetContents first: a JSON object). */
export function rowAt(text: string, line: number): Record<string, unknown> {
  return JSON.parse(text.split('\n')[line - 1]!) as Record<string, unknown>;
}

/** `text` with line `line` (1-based) holding `row` instead, every other line (and a CRLF ending) as it was. */
export function replacedText(text: string, line: number, row: Record<string, unknown>): string {
  const lines = text.split('\n');
  lines[line - 1] = `${JSON.stringify(row)}${lines[line - 1]!.endsWith('\r') ? '\r' : ''}`;
  return lines.join('\n');
}

/** The text that appends `rows` to a file holding `text` (a missing last newline is added first). */
export function appendedText(text: string, rows: EvalRow[]): string {
  const body = rows.map((r) => `${JSON.stringify(r)}\n`).join('');
  return body && text.length && !text.endsWith('\n') ? `\n${body}` : body;
}
