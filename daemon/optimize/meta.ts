/**
 * The meta-prompts: what the optimizer's model is asked (meta/reflect.md for GEPA's reflection, meta/critique.md and
 * meta/edit.md for the beam's critique then edit, meta/merge.md for merging two candidates' texts), as files a user
 * overrides with --meta-reflect / --meta-critique / --meta-edit / --meta-merge. A template names what it is given as
 * `{{prompt}}`, `{{examples}}`, ...; each must name what its purpose needs (checked when read, naming the flag). The
 * texts are kept in the run's config, so a resumed run asks exactly what it asked before.
 * And how an answer is read (issue #40 item 4): the new prompt is the text inside the first ``` fence, else the
 * whole answer.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

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

/**
 * The new prompt in an optimizer's answer: the text inside the first ``` fence (its info string, as in ```text,
 * left out), else the whole answer. Unusable: empty, or a fence opened and never closed (a cut-off answer).
 */
export function promptFromAnswer(answer: string): ReadAnswer {
  const open = /(^|\n)[ \t]*```[^\n`]*\n/.exec(answer);
  if (!open) {
    const whole = answer.trim();
    return whole ? { text: whole } : { unusable: 'the answer is empty' };
  }
  const start = open.index + open[0].length;
  const close = /(^|\n)[ \t]*```[ \t]*(\n|$)/.exec(answer.slice(start));
  if (!close) return { unusable: 'the answer opens a ``` block and never closes it (cut off?)' };
  const text = answer.slice(start, start + close.index).replace(/^\n+|\s+$/g, '');
  return text ? { text } : { unusable: 'the ``` block of the answer is empty' };
}

/** A critique is any non-empty text. */
export function critiqueFromAnswer(answer: string): ReadAnswer {
  const text = answer.trim();
  return text ? { text } : { unusable: 'the answer is empty' };
}
