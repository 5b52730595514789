/**
 * How the model zoo's optimizer (model-zoo.ts) answers: the order desk's optimizer (samples/apo/scripted-llm.ts) writes
 * the new prompt from the evidence it is shown; the behaviours the model name asks for then bend it the ways real
 * optimizer models do: only one fix per rewrite, a paragraph more every round, a placeholder renamed, commentary
 * around the prompt or the old prompt quoted in a fenced block before the new one.
 */
import { optimizerAnswer } from '../../samples/apo/scripted-llm.js';
import { fencedBlocks } from '../../samples/apo/world.js';

type Behaviours = ReadonlyMap<string, number | null>;

/** The paragraph `grow` adds each rewrite (numbered, so each round's prompt is longer than its parent's). */
const growth = (n: number) =>
  `Note ${n}: read the whole record before answering, keep to the record's own wording where the rules above say nothing, ` +
  'and do not add anything the question did not ask for.';

/** `next` with only the first of the rule lines it added to `current`'s first paragraph (withRules adds them there). */
function oneFix(current: string, next: string): string {
  const head = (t: string) => (t.includes('\n\n') ? t.slice(0, t.indexOf('\n\n')) : t);
  const had = head(current).split('\n').length;
  const lines = head(next).split('\n');
  if (lines.length <= had + 1) return next;
  return [...lines.slice(0, had + 1)].join('\n') + next.slice(head(next).length);
}

/** `prompt` with one more growth paragraph in its first paragraph. */
function grown(prompt: string): string {
  const notes = prompt.match(/^Note \d+: /gm)?.length ?? 0;
  const cut = prompt.indexOf('\n\n');
  return cut < 0 ? `${prompt}\n${growth(notes + 1)}` : `${prompt.slice(0, cut)}\n${growth(notes + 1)}${prompt.slice(cut)}`;
}

/** A zoo optimizer's answer to the request `text`. */
export function optimizerZooAnswer(text: string, b: Behaviours, seed: number): string {
  const plain = optimizerAnswer(text, { blind: false, seed, dropPlaceholder: 0, unfenced: 1 });
  if (/Reply with the critique/i.test(text)) return b.has('onefix') ? plain.split('\n').slice(0, 2).join('\n') : plain;
  const blocks = fencedBlocks(text);
  const current = (blocks.length >= 3 ? blocks[1] : blocks[0]) ?? '';
  let next = b.has('onefix') ? oneFix(current, plain) : plain;
  if (b.has('grow')) next = grown(next);
  if (b.has('rename')) next = next.replaceAll('{question}', '{query}');
  if (b.has('commentary'))
    return `Looking at the failures, the instructions miss a rule of the task.\n\nHere is the revised prompt:\n\n\`\`\`\n${next}\n\`\`\`\n\nThis keeps every placeholder and should fix the failing cases.`;
  if (b.has('blocks')) return `The instructions were:\n\n\`\`\`\n${current}\n\`\`\`\n\nThe new version:\n\n\`\`\`\n${next}\n\`\`\`\n`;
  return `Here is the new version:\n\n\`\`\`\n${next}\n\`\`\`\n`;
}
