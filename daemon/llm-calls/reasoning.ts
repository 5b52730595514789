/**
 * An answer without its reasoning: reasoning models (DeepSeek-R1, Qwen3, QwQ, ...) write their thinking into the answer
 * between `<think>` tags (or `<thinking>`, `<reasoning>`), drafts and quoted tool results included, before the answer
 * itself. Whoever reads an answer (the judge's scores, the optimizer's prompt) reads it without that text, so nothing
 * drafted there is taken for the answer. Some servers drop the opening tag and keep the closing one (everything before
 * a stray `</think>` is reasoning); an opening tag never closed (cut off while thinking) leaves nothing after it.
 */

const TAGS = 'think|thinking|reasoning';

/** `answer` with its reasoning blocks removed (and trimmed). */
export function withoutReasoning(answer: string): string {
  let text = answer.replace(new RegExp(`<(${TAGS})>[\\s\\S]*?</\\1\\s*>`, 'gi'), '');
  // A closing tag left over: its opening tag was not sent (the reasoning began the answer).
  const strayClose = [...text.matchAll(new RegExp(`</(?:${TAGS})\\s*>`, 'gi'))].pop();
  if (strayClose) text = text.slice(strayClose.index + strayClose[0].length);
  // An opening tag left over: the reasoning was never closed, nothing after it is an answer.
  const open = new RegExp(`<(?:${TAGS})>`, 'i').exec(text);
  if (open) text = text.slice(0, open.index);
  return text.trim();
}
