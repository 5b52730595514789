/**
 * A task input as a person reads it in one table cell: the task's own question/prompt field when it has
 * one (else the last user message of a chat, else its first text), shortened at a word boundary, with the
 * full text for a tooltip. Pure; the rollouts list uses it for its Input column.
 */

/** Fields that hold what a task asks, most telling first. */
const PROMPT_KEYS = ['question', 'prompt', 'query', 'task', 'instruction', 'problem', 'input', 'text', 'content', 'message'];

function firstText(value: unknown, depth = 0): string | null {
  if (typeof value === 'string') return value.trim() ? value : null;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null || typeof value !== 'object' || depth > 6) return null;
  if (Array.isArray(value)) {
    // A chat: the last user message says what is asked.
    const user = [...value].reverse().find((m) => m && typeof m === 'object' && (m as { role?: unknown }).role === 'user');
    if (user) return firstText((user as { content?: unknown }).content, depth + 1);
    for (const v of value) {
      const t = firstText(v, depth + 1);
      if (t) return t;
    }
    return null;
  }
  const obj = value as Record<string, unknown>;
  const lower = new Map(Object.keys(obj).map((k) => [k.toLowerCase(), k]));
  for (const key of PROMPT_KEYS) {
    const k = lower.get(key);
    if (k !== undefined) {
      const t = firstText(obj[k], depth + 1);
      if (t) return t;
    }
  }
  if (Array.isArray(obj.messages)) {
    const t = firstText(obj.messages, depth + 1);
    if (t) return t;
  }
  for (const v of Object.values(obj)) {
    const t = firstText(v, depth + 1);
    if (t) return t;
  }
  return null;
}

/** `text` cut to at most `max` characters at a word boundary, with an ellipsis when cut. */
export function clipAtWord(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  const cut = flat.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > max * 0.6 ? cut.slice(0, space) : cut).replace(/[\s,.;:!?-]+$/, '')}…`;
}

/** The summary and the tooltip of a task input. */
export function taskSummary(input: unknown, max = 90): { text: string; full: string } {
  const found = firstText(input);
  const full = found ?? (input === null || input === undefined ? '' : JSON.stringify(input));
  return { text: clipAtWord(full, max), full: full.replace(/\s+/g, ' ').trim() };
}
