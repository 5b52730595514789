/**
 * A prompt's text as agents read it (`llm.prompt(name, seed, vars)`): its placeholder rule, where a text comes from,
 * and what the runner hands an attempt. One definition for every reader and writer: the TypeScript SDK renders with
 * it (sdk/llm.ts), the Python helper follows the same rule (sdk/python/agl_runner.py), prompt optimization counts a
 * candidate's placeholders with it (a candidate keeps every placeholder of its seed). Plain functions, no zod.
 *
 * The placeholder rule (as Python's str.format has one, but JSON and code in a prompt need no escaping):
 *  - `{name}` and `{{name}}` (spaces allowed inside the double braces: `{{ name }}`) are placeholders, filled from
 *    `vars[name]`; a name is a letter or `_`, then letters, digits or `_`;
 *  - every other brace is text as written: `{"a": 1}`, `{ x }`, `{}` stay as they are;
 *  - a backslash right before a placeholder writes it as text: `\{name}` gives `{name}`, `\{{name}}` gives `{{name}}`;
 *  - a placeholder without a var is an error naming it; vars the text does not use are ignored; a var that is not a
 *    string is written as JSON (`3`, `true`, `["a"]`).
 * Braces around a placeholder stay text: `{{{name}}}` gives `{` + the value + `}`.
 */

/** A prompt's name as agents use it in `llm.prompt(name, ...)`: letters, digits, `_`, `-`, `.`; 1-64 characters. */
export const PROMPT_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/** An escaping backslash (group 1), then `{{ name }}` (group 2) or `{name}` (group 3). */
const PLACEHOLDER = /(\\?)(?:\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\})/g;

/** The placeholder names of a text, each once, in order of first use (escaped ones are text, not placeholders). */
export function promptPlaceholders(text: string): string[] {
  const names = new Set<string>();
  for (const m of text.matchAll(PLACEHOLDER)) if (!m[1]) names.add((m[2] ?? m[3])!);
  return [...names];
}

/** A var as prompt text: a string as it is, anything else as JSON. */
function varText(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * The text with every placeholder filled from `vars` (the rule above). Throws a TypeError naming the first placeholder
 * that has no var (undefined counts as none), and `what` the text is (e.g. "llm.prompt('system')").
 */
export function renderPrompt(text: string, vars: Readonly<Record<string, unknown>>, what = 'the prompt'): string {
  return text.replace(PLACEHOLDER, (whole: string, escape: string, double: string | undefined, single: string | undefined) => {
    if (escape) return whole.slice(1);
    const name = (double ?? single)!;
    const value = Object.hasOwn(vars, name) ? vars[name] : undefined;
    if (value === undefined) {
      const given = Object.keys(vars);
      throw new TypeError(
        `${what}: placeholder {${name}} has no value: give it in vars ({ ${name}: ... })` +
          `${given.length ? `; vars given: ${given.join(', ')}` : '; no vars were given'}` +
          ` (write \\{${name}} for the text {${name}} itself)`,
      );
    }
    return varText(value);
  });
}

/** Where the text `llm.prompt` returned came from. */
export const PROMPT_SOURCES = ['candidate', 'promoted', 'seed'] as const;
export type PromptSource = (typeof PROMPT_SOURCES)[number];

/** The version recorded for a seed's text (the sha tells one seed text from another). */
export const SEED_VERSION = 'seed';
/** The version recorded for a promoted text the user gave, from no candidate. */
export const PROMOTED_TEXT_VERSION = 'promoted';
/** Hex digits of a text's sha256 that identify it (`agl.prompt.sha`). */
export const PROMPT_SHA_LENGTH = 12;

/**
 * A text the runner gives an attempt for one prompt name (LLMInit.prompts), which `llm.prompt` returns instead of the
 * seed: a candidate being scored (in a rollout whose metadata names the candidate, a prompt_template of its resources;
 * version: the candidate id) or the text promoted for the agent (version: the candidate it came from, or
 * PROMOTED_TEXT_VERSION).
 */
export interface GivenPrompt {
  text: string;
  source: Exclude<PromptSource, 'seed'>;
  version: string;
}
