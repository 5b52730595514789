/**
 * Datasets from traces, headless (`agl dataset from-rollouts`): the rows of the rollouts a filter selects (the store's
 * rollout query: run, status, mode, agent, reward range, candidate, words), built by protocol/dataset-rows.ts (the one
 * row builder the trajectory viewer's "Add to dataset" uses too), written to a new file or appended to one: a row whose
 * task input the file holds already is left out, an id it has taken becomes the rollout's.
 */
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { appendedText, datasetContents, newRows, rowsFromRollouts } from '../../protocol/dataset-rows.js';
import type { GraderName } from '../../protocol/eval.js';
import type { LightningStore, RolloutQuery } from '../../protocol/lightning-store.js';

export interface FromRolloutsResult {
  /** Rows written. */
  rows: number;
  /** Rollouts selected that recorded no answer (no row written). */
  noAnswer: string[];
  /** Rows left out because their task is in the file already (or came twice). */
  duplicates: number;
}

/** Writes (or, with `append`, adds to `out`) the rows of the rollouts `query` selects, newest first, at most `limit`. */
export async function writeRowsFromRollouts(
  store: LightningStore,
  query: Omit<RolloutQuery, 'limit' | 'cursor'>,
  o: { out: string; append: boolean; limit: number; grader: GraderName | null },
): Promise<FromRolloutsResult> {
  const before = o.append && existsSync(o.out) ? readFileSync(o.out, 'utf8') : '';
  const contents = datasetContents(before, o.out);
  const got = await rowsFromRollouts(store, query, { limit: o.limit, grader: o.grader });
  const fresh = newRows(contents, got.rows);
  const text = appendedText(before, fresh.rows);
  if (o.append) appendFileSync(o.out, text);
  else writeFileSync(o.out, text);
  return { rows: fresh.rows.length, noAnswer: got.noAnswer, duplicates: fresh.duplicates.length };
}
