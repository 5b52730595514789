/**
 * An answer without its reasoning: reasoning models (DeepSeek-R1, Qwen3, QwQ, ...) begin their answer with their
 * thinking between `<think>` tags (or `<thinking>`, `<reasoning>`), drafts and quoted tool results included, then give
 * the answer itself. Whoever reads an answer (the judge's scores, the optimizer's prompt) reads it without that text,
 * so nothing drafted there is taken for the answer. Some servers drop the opening tag and keep the closing one: a
 * closing tag ending its line, with no opening tag before it, ends reasoning that began the answer. An opening tag
 * never closed (cut off while thinking) leaves nothing. Only reasoning that begins the answer is dropped: the same tags
 * later on are the answer's own words (a judge quoting a trajectory's `</think>` in an explanation, a proposed prompt
 * that tells the agent to think in `<think>` tags), and JSON strings cannot hold a line break, so a quoted closing tag
 * never ends its line.
 */

const TAGS = 'think|thinking|reasoning';
const LEADING_OPEN = new RegExp(`^\\s*<(${TAGS})>`, 'i');
const LINE_ENDING_CLOSE = new RegExp(`</(?:${TAGS})>[ \\t]*(?:\\r?\\n|$)`, 'i');
const ANY_OPEN = new RegExp(`<(?:${TAGS})>`, 'i');

/** `answer` with the reasoning it begins with removed (and trimmed); '' when it is all reasoning. */
export function withoutReasoning(answer: string): string {
  let text = answer;
  for (let open = LEADING_OPEN.exec(text); open; open = LEADING_OPEN.exec(text)) {
    const close = new RegExp(`</${open[1]}\\s*>`, 'i').exec(text.slice(open[0].length));
    if (!close) return '';
    text = text.slice(open[0].length + close.index + close[0].length);
  }
  const strayClose = LINE_ENDING_CLOSE.exec(text);
  if (strayClose && !ANY_OPEN.test(text.slice(0, strayClose.index))) text = text.slice(strayClose.index + strayClose[0].length);
  return text.trim();
}
