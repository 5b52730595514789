/**
 * The checks a proposed candidate passes before a rollout is spent on it (issue #40 item 4): every prompt keeps each
 * placeholder of its seed and adds none the agent does not fill (the agent renders `{name}` / `{{name}}` from the
 * vars it passes to `llm.prompt`, by protocol/prompt-template.ts's rule: a lost one would drop the task from the
 * prompt, a new one fails the render), no text is empty or longer than the cap, and the candidate is not one already
 * scored. A refused candidate is stored with the reason this returns, and never rolled out.
 */
import { promptPlaceholders } from '../../protocol/prompt-template.js';

/** The placeholder names of a text, each once, in order of first use: the renderer's own reading. */
export const placeholders = promptPlaceholders;

export interface CheckContext {
  /** Each optimized prompt's seed text, by name. */
  seed: Record<string, string>;
  /** The longest text a prompt may have (characters). */
  maxChars: number;
  /** Whether these texts were already proposed and scored (the seed included): a duplicate spends rollouts on nothing new. */
  seen(prompts: Record<string, string>): boolean;
}

/** Why `prompts` must not be rolled out, in a sentence naming the prompt; null when it may be. */
export function refusal(prompts: Record<string, string>, c: CheckContext): string | null {
  for (const [name, seedText] of Object.entries(c.seed)) {
    const text = prompts[name];
    if (text === undefined) return `prompt ${name} is missing`;
    if (text.trim() === '') return `prompt ${name} is empty`;
    if (text.length > c.maxChars) return `prompt ${name} is ${text.length} characters, over the cap of ${c.maxChars} (--max-prompt-chars)`;
    const have = new Set(placeholders(text));
    const lost = placeholders(seedText).filter((p) => !have.has(p));
    if (lost.length) return `prompt ${name} dropped the placeholder${lost.length > 1 ? 's' : ''} ${lost.map((p) => `{${p}}`).join(', ')} of its seed`;
    const seedNames = new Set(placeholders(seedText));
    const added = [...have].filter((p) => !seedNames.has(p));
    if (added.length)
      return `prompt ${name} added the placeholder${added.length > 1 ? 's' : ''} ${added.map((p) => `{${p}}`).join(', ')}, which the agent does not fill`;
  }
  const extra = Object.keys(prompts).find((n) => !Object.hasOwn(c.seed, n));
  if (extra) return `prompt ${extra} is not one of the prompts optimized (${Object.keys(c.seed).join(', ')})`;
  if (c.seen(prompts)) return 'identical to a candidate already scored';
  return null;
}

/** A key equal for candidates with the same texts (order of names aside). */
export function promptsKey(prompts: Record<string, string>): string {
  return JSON.stringify(
    Object.keys(prompts)
      .sort()
      .map((n) => [n, prompts[n]]),
  );
}
