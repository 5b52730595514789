/**
 * The meta-prompts: what the optimizer's model is asked (meta/reflect.md for GEPA's reflection, meta/critique.md and
 * meta/edit.md for the beam's critique then edit, meta/merge.md for merging two candidates' texts), as files a user
 * overrides with --meta-reflect / --meta-critique / --meta-edit / --meta-merge. A template names what it is given as
 * `{{prompt}}`, `{{examples}}`, ...; each must name what its purpose needs (checked when read, naming the flag). The
 * texts are kept in the run's config, so a resumed run asks exactly what it asked before.
 * And how an answer is read (issue #40 item 4, #50 item 2): reasoning dropped, the new prompt is the text inside the
 * last ``` fence, else the whole answer.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withoutReasoning } from '../llm-calls/reasoning.js';

export const META_PURPOSES = ['reflect', 'critique', 'edit', 'merge'] as const;
export type MetaPurpose = (typeof META_PURPOSES)[number];
export type MetaPrompts = Record<MetaPurpose, string>;

/** What each template must use (it may use the others of its purpose too). */
const REQUIRED: Record<MetaPurpose, readonly string[]> = {
  reflect: ['prompt', 'examples'],
  critique: ['prompt', 'examples'],
  edit: ['prompt', 'critique'],
  merge: ['prompt_a', 'prompt_b'],
};
/** Every name a template may use: `{{name}}` for one of these is filled in, anything else is left as written. */
type MetaName = 'prompt_name' | 'prompt' | 'placeholders' | 'examples' | 'critique' | 'ancestor' | 'prompt_a' | 'prompt_b';
export type MetaVars = Partial<Record<MetaName, string>>;

function moduleDir(): string {
  if (typeof __dirname === 'string') return __dirname;
  return dirname(fileURLToPath(import.meta.url));
}
/** The shipped templates: daemon/optimize/meta in the sources, optimize/meta beside the bundle (esbuild.mjs copies them). */
export const DEFAULT_META_DIR = existsSync(join(moduleDir(), 'meta', 'reflect.md')) ? join(moduleDir(), 'meta') : join(moduleDir(), 'optimize', 'meta');

/** The templates: the shipped ones, each replaced by the file its flag names; an unusable file is an error naming its flag. */
export function readMetaPrompts(files: Partial<Record<MetaPurpose, string | undefined>> = {}): MetaPrompts {
  const out = {} as MetaPrompts;
  for (const purpose of META_PURPOSES) {
    const file = files[purpose];
    const path = file ?? join(DEFAULT_META_DIR, `${purpose}.md`);
    if (!existsSync(path)) throw new Error(`--meta-${purpose} ${path}: no such file`);
    const text = readFileSync(path, 'utf8');
    const missing = REQUIRED[purpose].filter((name) => !text.includes(`{{${name}}}`));
    if (missing.length)
      throw new Error(`--meta-${purpose} ${path}: the template must use ${missing.map((n) => `{{${n}}}`).join(' and ')} (what a ${purpose} is given)`);
    out[purpose] = text;
  }
  return out;
}

/** The template with its names filled in, in one pass (a filled-in text is never read for names again). */
export function renderMeta(template: string, vars: MetaVars): string {
  return template.replace(/\{\{([a-z_]+)\}\}/g, (whole, name: string) => {
    const v = (vars as Record<string, string | undefined>)[name];
    return v === undefined ? whole : v;
  });
}

/** Why an answer cannot be used as a prompt, or its prompt. */
export type ReadAnswer = { text: string } | { unusable: string };

/** The answer without its reasoning (llm-calls/reasoning.ts), or why nothing is left. */
function withoutThinking(answer: string): ReadAnswer {
  const text = withoutReasoning(answer);
  if (text) return { text };
  return { unusable: answer.trim() ? 'the answer holds nothing but reasoning (a <think> block)' : 'the answer is empty' };
}

/** The ``` blocks of a text in order (an opening line may name a language; a closing line is the fence alone), and whether the last is left open. */
function fencedBlocks(text: string): { blocks: string[]; open: boolean } {
  const blocks: string[] = [];
  let inside: string[] | null = null;
  for (const line of text.split('\n')) {
    if (inside === null) {
      if (/^[ \t]*```[^`]*$/.test(line)) inside = [];
    } else if (/^[ \t]*```[ \t]*$/.test(line)) {
      blocks.push(inside.join('\n'));
      inside = null;
    } else inside.push(line);
  }
  return { blocks, open: inside !== null };
}

/**
 * The new prompt in an optimizer's answer, reasoning (`<think>...</think>`) dropped: the text inside the last ```
 * block (its info string, as in ```text, left out; earlier blocks are drafts or quotes, the words around it
 * commentary), else the whole answer. Unusable: empty, only reasoning, or a block opened and never closed (a cut-off
 * answer).
 */
export function promptFromAnswer(answer: string): ReadAnswer {
  const whole = withoutThinking(answer);
  if (!('text' in whole)) return whole;
  const { blocks, open } = fencedBlocks(whole.text);
  if (open) return { unusable: 'the answer opens a ``` block and never closes it (cut off?)' };
  if (!blocks.length) return whole;
  const text = blocks.at(-1)!.replace(/^\n+|\s+$/g, '');
  return text ? { text } : { unusable: 'the ``` block of the answer is empty' };
}

/** A critique is any non-empty text (reasoning dropped). */
export function critiqueFromAnswer(answer: string): ReadAnswer {
  return withoutThinking(answer);
}
