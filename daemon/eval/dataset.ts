/**
 * An evaluation's dataset (protocol/eval.ts EvalRow, JSON lines): read whole and checked before anything runs. A bad
 * row refuses the whole file, naming its line and the field at fault (and the fix), as every row's error at once: a
 * CI run that fails on row 3 should not fail again on row 9 after the fix.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type EvalRow, type GraderName, readEvalLines } from '../../protocol/eval.js';
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
  for (const read of readEvalLines(text)) {
    try {
      if ('error' in read) throw new Error(read.error);
      tasks.push(taskOf(read.id, read.line, read.row, defaults));
    } catch (e) {
      errors.push(`${file}:${read.line}: ${(e as Error).message}`);
    }
  }
  if (errors.length)
    throw new Error(
      `--data ${file}: ${errors.length} bad row${errors.length > 1 ? 's' : ''} (fix them; nothing was run):\n  ${errors.slice(0, MAX_ERRORS).join('\n  ')}` +
        (errors.length > MAX_ERRORS ? `\n  ... and ${errors.length - MAX_ERRORS} more` : ''),
    );
  if (!tasks.length) throw new Error(`--data ${file}: no rows (one JSON object per line: { "input": ..., "expected": ... })`);
  const digest = createHash('sha256').update(text).digest('hex').slice(0, 16);
  return { tasks, digest };
}

/** A checked row as a task: its grader prepared (a bad regex or schema throws, naming itself). */
function taskOf(id: string, line: number, row: EvalRow, defaults: RowDefaults): EvalTask {
  const name = row.grader ?? defaults.grader ?? (row.expected === undefined ? 'reward' : 'exact');
  const grader = prepareGrader(name, row.expected, row.tolerance ?? defaults.tolerance);
  return { id, line, input: row.input, expected: row.expected, grader };
}
