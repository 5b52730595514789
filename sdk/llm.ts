/**
 * The `LLM` resource an agent receives: an OpenAI-compatible base URL tied to its attempt (calls
 * through it are recorded and, in training, served by the policy being trained), the model name and
 * sampling params, and the agent's prompts (`llm.prompt`). Point any OpenAI client at it:
 *   new OpenAI({ baseURL: llm.baseUrl, apiKey: llm.apiKey })
 *   new ChatOpenAI({ model: llm.model, apiKey: llm.apiKey, configuration: { baseURL: llm.baseUrl } })
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { type GivenPrompt, PROMPT_NAME_PATTERN, PROMPT_SHA_LENGTH, type PromptSource, SEED_VERSION, renderPrompt } from '../protocol/prompt-template.js';
import { AGL, SPAN } from '../protocol/spans.js';
import type { SamplingParams } from '../protocol/store.js';
import { currentRollout } from './context.js';
import { recordSpan } from './emit.js';

export interface LLMInit {
  baseUrl: string;
  model: string;
  samplingParams?: SamplingParams;
  apiKey?: string;
  /**
   * The texts this attempt's prompts have before their seeds, by prompt name (the runner gives them): a candidate
   * being scored (a prompt_template of the resources of a rollout naming its candidate), else the text promoted for
   * the agent.
   */
  prompts?: Record<string, GivenPrompt>;
  /** The folder of the agent's file, where a file seed is read from (the runner gives it; default: the working directory). */
  agentDir?: string;
}

/** A prompt's seed: its text, or a file holding it (relative to the agent's file, or absolute). */
export type PromptSeed = string | { file: string };

export class LLM {
  /** Per-attempt OpenAI base URL (ends with /v1). */
  readonly baseUrl: string;
  readonly model: string;
  readonly samplingParams: SamplingParams;
  /** Any string works on the per-attempt URL; kept for clients that insist on a key. */
  readonly apiKey: string;
  readonly prompts: Readonly<Record<string, GivenPrompt>>;
  readonly agentDir: string | undefined;

  constructor(init: LLMInit) {
    this.baseUrl = init.baseUrl;
    this.model = init.model;
    this.samplingParams = init.samplingParams ?? {};
    this.apiKey = init.apiKey ?? 'agl';
    this.prompts = init.prompts ?? {};
    this.agentDir = init.agentDir;
  }

  /** Python-style alias (`llm.base_url`), so agents ported from agent-lightning read naturally. */
  get base_url(): string {
    return this.baseUrl;
  }

  /** The sampling params as OpenAI request fields, to spread into a request. */
  get openaiParams(): Record<string, unknown> {
    const p = this.samplingParams;
    return {
      ...(p.temperature !== undefined ? { temperature: p.temperature } : {}),
      ...(p.topP !== undefined ? { top_p: p.topP } : {}),
      ...(p.maxTokens !== undefined ? { max_tokens: p.maxTokens } : {}),
      ...(p.stop !== undefined ? { stop: p.stop } : {}),
      ...(p.seed !== undefined ? { seed: p.seed } : {}),
    };
  }

  /**
   * The prompt `name`'s text: inside a rollout of a prompt optimization, the candidate being scored; else the text
   * promoted for this agent (`agl optimize promote`); else `seed` (a string, or `{ file }` read relative to the
   * agent's file). With `vars`, its placeholders `{name}` / `{{name}}` are filled in (protocol/prompt-template.ts:
   * a placeholder without a var is an error naming it; `\{name}` is the text `{name}`); without, it comes back as it
   * is. Inside a rollout each call records which text it was (an `agentlightning.prompt` span).
   */
  prompt(name: string, seed: PromptSeed, vars?: Readonly<Record<string, unknown>>): string {
    const what = `llm.prompt('${name}')`;
    if (typeof name !== 'string' || !PROMPT_NAME_PATTERN.test(name))
      throw new TypeError(`llm.prompt: name ${JSON.stringify(name)} is not a prompt name: use 1-64 letters, digits, _, - or .`);
    const file = seedFile(seed, what, this.agentDir);
    if (vars !== undefined && (vars === null || typeof vars !== 'object' || Array.isArray(vars)))
      throw new TypeError(`${what}: vars must be an object of placeholder values ({ question: ... }), got ${Array.isArray(vars) ? 'an array' : String(vars)}`);
    const given = Object.hasOwn(this.prompts, name) ? this.prompts[name] : undefined;
    const template = given ? given.text : file !== null ? readSeedFile(file, what) : (seed as string);
    const source: PromptSource = given ? given.source : 'seed';
    const ctx = currentRollout();
    if (ctx) {
      recordSpan(ctx, SPAN.prompt, {
        [AGL.promptName]: name,
        [AGL.promptSource]: source,
        [AGL.promptVersion]: given ? given.version : SEED_VERSION,
        [AGL.promptSha]: promptSha(template),
        [AGL.promptTemplate]: template,
        ...(file !== null ? { [AGL.promptFile]: file } : {}),
      });
    }
    return vars === undefined ? template : renderPrompt(template, vars, what);
  }

  toJSON(): LLMInit {
    return {
      baseUrl: this.baseUrl,
      model: this.model,
      samplingParams: this.samplingParams,
      apiKey: this.apiKey,
      ...(Object.keys(this.prompts).length ? { prompts: { ...this.prompts } } : {}),
      ...(this.agentDir !== undefined ? { agentDir: this.agentDir } : {}),
    };
  }
}

/** The first PROMPT_SHA_LENGTH hex digits of the sha256 of a prompt's text (`agl.prompt.sha`). */
export function promptSha(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex').slice(0, PROMPT_SHA_LENGTH);
}

/** The absolute path of a file seed, null for a text seed; a TypeError naming what is wrong with any other seed. */
function seedFile(seed: PromptSeed, what: string, agentDir: string | undefined): string | null {
  if (typeof seed === 'string') return null;
  const file = seed && typeof seed === 'object' ? (seed as { file?: unknown }).file : undefined;
  if (typeof file !== 'string' || file === '')
    throw new TypeError(
      `${what}: the seed must be the prompt's text or { file: 'path/to/prompt.md' } (relative to the agent's file), got ${JSON.stringify(seed)}`,
    );
  return isAbsolute(file) ? file : resolve(agentDir ?? process.cwd(), file);
}

function readSeedFile(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new Error(
      `${what}: cannot read its seed file ${file} (${code}): a relative seed file is read from the agent's folder in a rollout, ` +
        'else from the working directory (new LLM({ ..., agentDir }) sets it)',
      { cause: err },
    );
  }
}
