/**
 * An evaluation's dataset (protocol/eval.ts EvalRow, JSON lines): read whole and checked before anything runs. A bad
 * row refuses the whole file, naming its line and the field at fault (and the fix), as every row's error at once: a
 * CI run that fails on row 3 should not fail again on row 9 after the fix.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { EvalRow, type GraderName } from '../../protocol/eval.js';
import { type PreparedGrader, prepareGrader } from './graders.js';

/** A row ready to run: its task id, the task input, its grader (prepared) and what it expects. */
export interface EvalTask {
  id: string;
  line: number;
  input: unknown;
  expected: unknown;
  grader: PreparedGrader;
}

/** How many bad rows one refusal lists. */
const MAX_ERRORS = 20;

/** What rows that name none get: the grader (--grader) and the number grader's tolerance (--tolerance). */
export interface RowDefaults {
  grader: GraderName | null;
  tolerance?: number;
}

/**
 * The rows of `file`, each with its grader: the row's `grader`, else --grader, else `exact` when the row has
 * `expected`, `reward` (the agent's own) when it has none. Throws naming every bad row (up to 20).
 */
export function readDataset(file: string, defaults: RowDefaults): { tasks: EvalTask[]; digest: string } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`--data ${file}: cannot read it (${(e as Error).message})`, { cause: e });
  }
  const tasks: EvalTask[] = [];
  const errors: string[] = [];
  const seen = new Map<string, number>();
  text.split('\n').forEach((raw, i) => {
    const line = i + 1;
    if (!raw.trim()) return;
    try {
      const task = readRow(raw, line, defaults);
      const first = seen.get(task.id);
      if (first !== undefined) throw new Error(`field 'id': '${task.id}' is the id of line ${first} too: give each row its own id`);
      seen.set(task.id, line);
      tasks.push(task);
    } catch (e) {
      errors.push(`${file}:${line}: ${(e as Error).message}`);
    }
  });
  if (errors.length)
    throw new Error(
      `--data ${file}: ${errors.length} bad row${errors.length > 1 ? 's' : ''} (fix them; nothing was run):\n  ${errors.slice(0, MAX_ERRORS).join('\n  ')}` +
        (errors.length > MAX_ERRORS ? `\n  ... and ${errors.length - MAX_ERRORS} more` : ''),
    );
  if (!tasks.length) throw new Error(`--data ${file}: no rows (one JSON object per line: { "input": ..., "expected": ... })`);
  const digest = createHash('sha256').update(text).digest('hex').slice(0, 16);
  return { tasks, digest };
}

function readRow(raw: string, line: number, defaults: RowDefaults): EvalTask {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (e) {
    throw new Error(`not valid JSON (${(e as Error).message})`, { cause: e });
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error('a row is a JSON object: { "input": ..., "expected": ..., "grader": ... }');
  const parsed = EvalRow.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    if (issue.code === 'unrecognized_keys')
      throw new Error(`field '${issue.keys[0]}' is not a row's field (id, input, expected, grader, tolerance, from): a typo?`);
    throw new Error(`field '${issue.path.join('.') || 'input'}': ${issue.message}`);
  }
  const row = parsed.data;
  const name = row.grader ?? defaults.grader ?? (row.expected === undefined ? 'reward' : 'exact');
  const grader = prepareGrader(name, row.expected, row.tolerance ?? defaults.tolerance);
  return { id: row.id === undefined ? `line-${line}` : String(row.id), line, input: row.input, expected: row.expected, grader };
}
