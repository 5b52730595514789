/**
 * Evaluations (`agl eval`, daemon/eval/): the dataset's rows, the graders they name, and what an evaluation keeps in
 * its run (a TrainingRun of kind 'eval': its config EvalConfig, its summary EvalSummary). Each rollout of an eval
 * carries RolloutMetadata { runId, taskId, sample }, so the trajectory viewer's run filter finds them; a row graded
 * against its `expected` answer gets the grader's verdict as the rollout's final reward, the verdict's reason as that
 * reward's feedback (the field prompt optimization reads).
 *
 * A dataset is JSON lines (`*.eval.jsonl`), one task per line:
 *   { "id": "t1", "input": { ...the task as the agent gets it... }, "expected": 42, "grader": "number", "tolerance": 0.01 }
 * Only `input` is required. Without `expected` a row is scored by the agent's own reward; with it, by its grader (the
 * row's, else --grader, else `exact`). `agl dataset from-rollouts` writes these rows from recorded rollouts.
 */
import { z } from 'zod';

/**
 * How a row's answer is scored (each a verdict in [0, 1] with its reason):
 *   reward       the agent's own final reward (no `expected` needed)
 *   exact        the answer equals `expected` (strings compared trimmed; other values as canonical JSON)
 *   contains     the answer's text contains `expected` (a string, or every string of a list)
 *   regex        the answer's text matches `expected` (a JavaScript regular expression's source)
 *   number       the answer's number is within `tolerance` of `expected` (default 1e-6, absolute)
 *   json-schema  the answer (JSON, or a string holding JSON) is valid against `expected` (a JSON Schema)
 *   judge        the LLM judge's score (single mode, the --judge-* flags), `expected` shown to it as the reference
 */
export const GRADERS = ['reward', 'exact', 'contains', 'regex', 'number', 'json-schema', 'judge'] as const;
export const GraderName = z.enum(GRADERS);
export type GraderName = z.infer<typeof GraderName>;

/** The source (spans.ts AGL.rewardSource) of the reward span a grader's verdict is recorded as. */
export const EVAL_REWARD_SOURCE = 'eval';

/** The tolerance of the number grader when neither the row nor --tolerance gives one. */
export const DEFAULT_TOLERANCE = 1e-6;
/** A task passes when its score reaches this (the JUnit failures, pass@k), unless --pass says otherwise. */
export const DEFAULT_PASS = 0.5;

/** An LLM call's request as a dataset row keeps it: a completion's prompt text, or a chat's messages (OpenAI form). */
export const FinalCall = z.union([
  z.object({ prompt: z.string() }).strict(),
  z.object({ messages: z.array(z.record(z.string(), z.unknown())).min(1) }).strict(),
]);
export type FinalCall = z.infer<typeof FinalCall>;

/** One row of a dataset, as read (daemon/eval/dataset.ts adds the line number to each error). */
export const EvalRow = z
  .object({
    /** The task's id in the results (default: `line-N`); unique in the file. */
    id: z.union([z.string().min(1), z.number()]).optional(),
    /** The task as the agent function gets it. */
    input: z.unknown().refine((v) => v !== undefined, 'every row needs the task the agent gets, as "input"'),
    /** The answer the grader compares with (the regex's source, the JSON Schema, the number...). */
    expected: z.unknown().optional(),
    grader: GraderName.optional(),
    /** The number grader's tolerance (absolute). */
    tolerance: z.number().min(0).optional(),
    /**
     * Where a row written from a recorded rollout came from (agl dataset from-rollouts, the viewer's Add to dataset).
     * A row whose expected answer the user corrected also keeps what the agent answered (`answered`; null: nothing) and
     * its final LLM call's request (`call`): `agl sft --data` trains that call to answer `expected` (protocol/dataset-rows.ts).
     */
    from: z.object({ rolloutId: z.string(), runId: z.string().nullable(), answered: z.unknown().optional(), call: FinalCall.optional() }).strict().optional(),
  })
  .strict();
export type EvalRow = z.infer<typeof EvalRow>;

/** One line of a dataset as read: its row and task id, or what is wrong with it (the field at fault and the fix). */
export type EvalLine = { line: number; id: string; row: EvalRow } | { line: number; error: string };

/**
 * The lines of a dataset's text, each read and checked (blank lines skipped): the words `agl eval` refuses a bad row
 * with (daemon/eval/dataset.ts adds the graders' own checks) and the editor's Test Explorer shows on its item.
 */
export function readEvalLines(text: string): EvalLine[] {
  const out: EvalLine[] = [];
  const seen = new Map<string, number>();
  text.split('\n').forEach((raw, i) => {
    const line = i + 1;
    if (!raw.trim()) return;
    try {
      const row = readEvalRow(raw);
      const id = row.id === undefined ? `line-${line}` : String(row.id);
      const first = seen.get(id);
      if (first !== undefined) throw new Error(`field 'id': '${id}' is the id of line ${first} too: give each row its own id`);
      seen.set(id, line);
      out.push({ line, id, row });
    } catch (e) {
      out.push({ line, error: (e as Error).message });
    }
  });
  return out;
}

/** One row from its JSON text; throws naming the field at fault. */
function readEvalRow(raw: string): EvalRow {
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
  return parsed.data;
}

/** An evaluation's settings, as its run record keeps them (TrainingRun.config of a run of kind 'eval'). */
export interface EvalConfig {
  agent: string;
  agentSpec: string;
  /** The dataset file (absolute) and a digest of its rows. */
  data: { file: string; digest: string };
  repeat: number;
  pass: number;
  grader: GraderName | null;
  llm: { upstream: { url: string; model: string; keyEnv: string } | null; model: string | null };
  /** The prompt versions pinned (--prompt NAME=VERSION): each name's version (a candidate id, or `promoted`). */
  prompts: Record<string, string>;
  /** The task ids --task chose, in the dataset's order; absent: every task of the dataset. */
  only?: string[];
}

/** One task's result: its samples' scores (in sample order), their mean, and whether any passed. */
export interface EvalTaskResult {
  id: string;
  scores: number[];
  mean: number;
  passed: boolean;
  grader: GraderName;
  /** The first sample's answer (as JSON text), what was expected, the verdict's reason; each sample's rollout. */
  answer: string | null;
  expected: string | null;
  reason: string;
  rolloutIds: string[];
  /** Whether a sample's rollout failed (the agent threw, timed out): a JUnit error rather than a failure. */
  errored: boolean;
}

/** What an evaluation keeps in its run's summary (TrainingRun.summary, kind 'eval'). */
export interface EvalSummary {
  tasks: EvalTaskResult[];
  mean: number;
  /** The 95% interval of the mean over tasks (Student's t on the per-task means); null under two tasks. */
  interval: [number, number] | null;
  /** Tasks where at least one of the `repeat` samples passed, over all tasks. */
  passAtK: number;
  repeat: number;
  elapsedMs: number;
}
