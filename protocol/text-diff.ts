/**
 * A prompt's change as a diff: the lines of the old text and the new (longest common subsequence), and within a line
 * that was replaced, the words that changed, so a sentence added to a paragraph reads as that sentence. Pure, no zod:
 * the optimization view (webview/optimize/) draws a candidate's diff against its parent with it, and `agl optimize`
 * prints seed against best with `lcsDiff` (daemon/optimize/report.ts printedLineDiff).
 */

export type DiffOp = 'same' | 'del' | 'add';

/** A piece of a replaced line: `changed` when it is not in the other side's line. */
export interface DiffPart {
  text: string;
  changed: boolean;
}

export interface DiffLine {
  op: DiffOp;
  text: string;
  /** For a line replaced by another (a `del` followed by its `add`): its words, the changed ones marked. */
  parts?: DiffPart[];
}

/** The edit script turning `x` into `y`: each item kept, deleted or added, in order (longest common subsequence; where both do, a deletion comes before the addition that replaces it). */
export function lcsDiff<T>(x: readonly T[], y: readonly T[]): { op: DiffOp; item: T }[] {
  const common: Uint32Array[] = Array.from({ length: x.length + 1 }, () => new Uint32Array(y.length + 1));
  for (let i = x.length - 1; i >= 0; i--)
    for (let j = y.length - 1; j >= 0; j--) common[i]![j] = x[i] === y[j] ? common[i + 1]![j + 1]! + 1 : Math.max(common[i + 1]![j]!, common[i]![j + 1]!);
  const out: { op: DiffOp; item: T }[] = [];
  let i = 0;
  let j = 0;
  while (i < x.length || j < y.length) {
    if (i < x.length && j < y.length && x[i] === y[j]) {
      out.push({ op: 'same', item: x[i++]! });
      j++;
    } else if (i < x.length && (j === y.length || common[i + 1]![j]! >= common[i]![j + 1]!)) out.push({ op: 'del', item: x[i++]! });
    else out.push({ op: 'add', item: y[j++]! });
  }
  return out;
}

/** Words and the spaces between them, as tokens (joined they give the line back). */
const tokens = (line: string): string[] => line.match(/\s+|[^\s]+/g) ?? [];

/** The two sides of a replaced line, each as parts: unchanged runs of words, and the changed ones. */
export function wordDiff(before: string, after: string): { before: DiffPart[]; after: DiffPart[] } {
  const side = { before: [] as DiffPart[], after: [] as DiffPart[] };
  const push = (parts: DiffPart[], text: string, changed: boolean) => {
    const last = parts.at(-1);
    if (last && last.changed === changed) last.text += text;
    else parts.push({ text, changed });
  };
  for (const { op, item } of lcsDiff(tokens(before), tokens(after))) {
    if (op !== 'add') push(side.before, item, op === 'del');
    if (op !== 'del') push(side.after, item, op === 'add');
  }
  return side;
}

/**
 * The lines of `before` and `after`, kept, deleted or added; a run of deleted lines followed by as many added ones
 * pairs them up line by line, each pair with its changed words.
 */
export function lineDiff(before: string, after: string): DiffLine[] {
  const lines: DiffLine[] = lcsDiff(before.split('\n'), after.split('\n')).map(({ op, item }) => ({ op, text: item }));
  for (let k = 0; k < lines.length;) {
    if (lines[k]!.op !== 'del') {
      k++;
      continue;
    }
    let dels = k;
    while (dels < lines.length && lines[dels]!.op === 'del') dels++;
    let adds = dels;
    while (adds < lines.length && lines[adds]!.op === 'add') adds++;
    if (adds - dels === dels - k) {
      for (let n = 0; n < dels - k; n++) {
        const { before: b, after: a } = wordDiff(lines[k + n]!.text, lines[dels + n]!.text);
        lines[k + n]!.parts = b;
        lines[dels + n]!.parts = a;
      }
    }
    k = adds;
  }
  return lines;
}
