/**
 * What `agl sft --data F` trains on: each line a demonstration (sft-trainer.ts: {"prompt","completion"} or
 * {"messages"}), or a dataset row (protocol/eval.ts EvalRow: it has `input`). A row the user corrected in the
 * trajectory viewer (protocol/dataset-rows.ts: `from.answered` and `from.call` beside `expected`) is a demonstration
 * of its final LLM call answering the correction: that call's prompt (or chat messages) with the expected answer's text
 * as the completion (or the last assistant turn). Rows not corrected are left out: their expected answer is what the
 * agent already said, nothing to learn. A bad line is an error naming the file, the line and the field.
 */
import { canonicalJson } from '../../protocol/span-reading.js';
import { EvalRow } from '../../protocol/eval.js';
import type { ChatMessage } from '../model/policy-contract.js';
import type { Demonstration, JsonlLine } from './sft-trainer.js';

/**
 * The text a corrected answer trains the final call to write: a string as it is, a number or boolean as written, an
 * object of one field (calc's `{ "answer": "564" }`) that field's value, anything else as canonical JSON.
 */
export function targetText(expected: unknown): string {
  if (typeof expected === 'string') return expected;
  if (typeof expected === 'number' || typeof expected === 'boolean') return String(expected);
  if (expected && typeof expected === 'object' && !Array.isArray(expected)) {
    const values = Object.values(expected);
    if (values.length === 1 && (typeof values[0] === 'string' || typeof values[0] === 'number')) return String(values[0]);
  }
  return canonicalJson(expected);
}

/** An OpenAI chat message as the policy's chat template reads it (content parts joined as text). */
function chatMessage(m: Record<string, unknown>): ChatMessage {
  const c = m.content;
  const content =
    typeof c === 'string' || c === null
      ? c
      : Array.isArray(c)
        ? c.map((p) => (typeof p === 'string' ? p : String((p as { text?: unknown }).text ?? ''))).join('')
        : '';
  return { ...(m as unknown as ChatMessage), content };
}

/**
 * The demonstrations of `lines` (a --data file's, with their line numbers), the line each came from, and how many
 * dataset rows were left out (not corrected).
 */
export function demonstrationsOf(lines: JsonlLine<unknown>[], file: string): { demos: Demonstration[]; lineOf: number[]; rows: number; uncorrected: number } {
  const demos: Demonstration[] = [];
  const lineOf: number[] = [];
  let rows = 0,
    uncorrected = 0;
  for (const { line: n, value: line } of lines) {
    if (!line || typeof line !== 'object' || !('input' in line)) {
      demos.push(line as Demonstration);
      lineOf.push(n);
      continue;
    }
    rows++;
    const parsed = EvalRow.safeParse(line);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new Error(`${file}:${n}: a dataset row with a bad field '${issue.path.join('.')}': ${issue.message}`);
    }
    const { expected, from } = parsed.data;
    if (!from?.call || !('answered' in from) || expected === undefined) {
      uncorrected++;
      continue;
    }
    const completion = targetText(expected);
    if ('prompt' in from.call) demos.push({ prompt: from.call.prompt, completion });
    else demos.push({ messages: [...from.call.messages.map(chatMessage), { role: 'assistant', content: completion }] });
    lineOf.push(n);
  }
  if (!demos.length)
    throw new Error(
      `${file}: nothing to train on: ${rows} dataset row${rows === 1 ? '' : 's'}, none corrected (correct an answer in the trajectory viewer's rollout view, then Add to dataset)`,
    );
  return { demos, lineOf, rows, uncorrected };
}
