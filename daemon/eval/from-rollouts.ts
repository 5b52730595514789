/**
 * Datasets from traces (`agl dataset from-rollouts`): the rollouts a filter selects (the store's rollout query: run,
 * status, mode, agent, reward range, candidate, words), each written as a dataset row (protocol/eval.ts EvalRow): its
 * task input, the answer its latest attempt recorded as `expected` (protocol/span-reading.ts episodeAnswer: the value
 * the agent returned, else its final object), its task id (the rollout's id when the task id is taken, as the rollouts
 * of one task in a GRPO group are), and where it came from. A rollout that recorded no answer gives no row.
 */
import type { EvalRow, GraderName } from '../../protocol/eval.js';
import type { LightningStore, RolloutQuery } from '../../protocol/lightning-store.js';
import { episodeAnswer } from '../../protocol/span-reading.js';
import { readRolloutMetadata, type Rollout } from '../../protocol/store.js';

export interface FromRolloutsResult {
  rows: EvalRow[];
  /** Rollouts selected that recorded no answer (no row written). */
  noAnswer: string[];
}

/** Rollouts asked for per page. */
const PAGE = 200;

/** The rows of the rollouts `query` selects (newest first), at most `limit`; ids already taken (`takenIds`, e.g. an appended file's) are avoided. */
export async function rowsFromRollouts(
  store: LightningStore,
  query: Omit<RolloutQuery, 'limit' | 'cursor'>,
  o: { limit: number; grader: GraderName | null; takenIds?: Iterable<string> },
): Promise<FromRolloutsResult> {
  const rows: EvalRow[] = [];
  const noAnswer: string[] = [];
  const taken = new Set(o.takenIds ?? []);
  let cursor: string | null = null;
  do {
    const page = await store.queryRollouts({ ...query, limit: PAGE, ...(cursor ? { cursor } : {}) });
    for (const r of page.items) {
      if (rows.length >= o.limit) break;
      const row = await rowOf(store, r, taken, o.grader);
      if (row) rows.push(row);
      else noAnswer.push(r.id);
    }
    cursor = page.nextCursor;
  } while (cursor && rows.length < o.limit);
  return { rows, noAnswer };
}

async function rowOf(store: LightningStore, r: Rollout, taken: Set<string>, grader: GraderName | null): Promise<EvalRow | null> {
  const answer = episodeAnswer(await store.querySpans({ rolloutId: r.id, attemptId: 'latest' }));
  if (answer.source === 'none') return null;
  const m = readRolloutMetadata(r.metadata);
  const id = m.taskId !== undefined && !taken.has(m.taskId) ? m.taskId : r.id;
  taken.add(id);
  return {
    id,
    input: r.input as EvalRow['input'],
    expected: answer.value,
    ...(grader ? { grader } : {}),
    from: { rolloutId: r.id, runId: m.runId ?? null },
  };
}
