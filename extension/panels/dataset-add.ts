/**
 * "Add to dataset" in the trajectory viewer, on the host side and without the vscode API (the webview tests drive it
 * against a real daemon): how many rollouts the target holds, the file the user picks for them (DatasetChooser: the
 * extension's confirmation, quick pick and save dialog), their rows (protocol/dataset-rows.ts, the row builder
 * `agl dataset from-rollouts` uses) read through the daemon's HTTP client, and the rows the file does not hold yet
 * appended to it: a task already there is never added twice. A corrected answer whose task is there with another
 * expected answer replaces that row's, when the user agrees (DatasetChooser.replace).
 */
import { appendFileSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { MAX_PAGE } from '../../protocol/api.js';
import {
  appendedText,
  datasetContents,
  newRows,
  type NewRows,
  replacedText,
  rowAt,
  rowsFromRollouts,
  rowsOfRollouts,
  type RowsResult,
} from '../../protocol/dataset-rows.js';
import type { EvalRow } from '../../protocol/eval.js';
import { canonicalJson } from '../../protocol/span-reading.js';
import type { RolloutQuery } from '../../protocol/lightning-store.js';
import type { DatasetAdded, DatasetTarget, RolloutFilter } from '../../protocol/webview-trajectory.js';
import type { AglClient } from '../../client/client.js';

/** Asks the user which dataset file to add to (for a selection or a filter, after confirming how many rollouts); null: cancelled. */
export interface DatasetChooser {
  chooseFile(ask: { kind: DatasetTarget['kind']; count: number }): Promise<{ path: string; label: string } | null>;
  /**
   * Asked when a corrected answer's task is in the file already with another expected answer (`line`): whether that
   * row should expect the correction instead (true), or stay as it is (false; absent: it stays).
   */
  replace?(ask: { file: string; line: number; expected: unknown; corrected: unknown }): Promise<boolean>;
  /** Told what was added to the file at `path` (the extension says so and offers to open it). */
  added?(result: DatasetAdded, path: string): void;
}

/** The store's query of the list's filter (every match, newest first: the list's sort does not change which rollouts). */
function queryOf(filter: RolloutFilter): Omit<RolloutQuery, 'limit' | 'cursor' | 'offset' | 'sort' | 'order'> {
  const { sort: _sort, order: _order, ...query } = filter;
  return query;
}

/** How many rollouts `target` holds. */
async function countOf(client: AglClient, target: DatasetTarget): Promise<number> {
  if (target.kind === 'rollout') return 1;
  if (target.kind === 'selection') return new Set(target.rolloutIds).size;
  return (await client.queryRollouts({ ...queryOf(target.filter), limit: 1, withTotal: true })).total ?? 0;
}

function rowsOf(client: AglClient, target: DatasetTarget): Promise<RowsResult> {
  if (target.kind === 'filter') return rowsFromRollouts(client, queryOf(target.filter), { limit: MAX_PAGE });
  if (target.kind === 'selection') return rowsOfRollouts(client, target.rolloutIds);
  const corrected = target.corrected ? new Map([[target.rolloutId, target.corrected.expected]]) : undefined;
  return rowsOfRollouts(client, [target.rolloutId], { corrected });
}

/** Adds `target`'s rows to the file the user picks; null when they cancelled. Throws naming what is wrong. */
export async function addToDataset(client: AglClient, target: DatasetTarget, chooser: DatasetChooser): Promise<DatasetAdded | null> {
  const count = await countOf(client, target);
  if (count === 0) throw new Error(target.kind === 'filter' ? 'no rollout matches the filter: nothing to add' : 'no rollout selected: nothing to add');
  if (count > MAX_PAGE) throw new Error(`${count.toLocaleString('en-US')} rollouts match the filter: narrow it to at most ${MAX_PAGE.toLocaleString('en-US')}`);
  const file = await chooser.chooseFile({ kind: target.kind, count });
  if (!file) return null;
  const got = await rowsOf(client, target);
  const before = existsSync(file.path) ? readFileSync(file.path, 'utf8') : '';
  const fresh = newRows(datasetContents(before, file.label), got.rows);
  const line = target.kind === 'rollout' && target.corrected ? await replaceOn(before, got.rows[0], fresh, file.label, chooser) : null;
  if (line !== null) {
    // The row keeps what the user wrote in it (id, input, grader, ...); its expected answer and provenance are the correction's.
    const { expected, from } = got.rows[0]!;
    writeWhole(file.path, replacedText(before, line, { ...rowAt(before, line), expected, from }));
  } else if (fresh.rows.length) appendFileSync(file.path, appendedText(before, fresh.rows));
  const result: DatasetAdded = {
    file: file.label,
    added: fresh.rows.length,
    ...(line !== null ? { replacedLine: line } : {}),
    duplicates: fresh.duplicates.length - (line !== null ? 1 : 0),
    noAnswer: got.noAnswer.length,
  };
  chooser.added?.(result, file.path);
  return result;
}

/**
 * The line whose row a corrected answer replaces: its task's row when that expects another answer and the user agrees;
 * null when the task is new to the file, its row expects the correction already, or the user keeps it.
 */
async function replaceOn(before: string, row: EvalRow | undefined, fresh: NewRows, file: string, chooser: DatasetChooser): Promise<number | null> {
  const line = fresh.duplicates[0]?.line ?? null;
  if (!row || line === null || !chooser.replace) return null;
  const expected = rowAt(before, line).expected;
  if (canonicalJson(expected) === canonicalJson(row.expected)) return null;
  return (await chooser.replace({ file, line, expected, corrected: row.expected })) ? line : null;
}

/** Writes `text` as the whole of `path` through a file beside it renamed over it: a crash leaves the old file or the new one. */
function writeWhole(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}
