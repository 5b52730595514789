/**
 * Tokenizer of Hugging Face models: tokenizer.json through @huggingface/tokenizers (offline, pure JS) and the
 * model's own chat template (tokenizer_config.json "chat_template" or chat_template.jinja) through
 * @huggingface/jinja. The chat template's special tokens encode to their ids; the prompt text is encoded
 * without adding BOS/EOS again (templates write them themselves).
 */
import { Tokenizer as HfTokenizerImpl } from '@huggingface/tokenizers';
import { Template } from '@huggingface/jinja';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChatMessage, Tokenizer, ToolSpec } from './policy-contract.js';

type TokenizerConfig = Record<string, unknown> & { chat_template?: string | { name: string; template: string }[] };

function tokenString(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string') return (v as { content: string }).content;
  return undefined;
}

export class HfTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly eosTokenIds: number[];
  private readonly template: Template | null;
  private readonly specials: Record<string, string | undefined>;

  constructor(
    private readonly impl: HfTokenizerImpl,
    config: TokenizerConfig,
    templateText: string | null,
    extraEos: number[] = [],
  ) {
    const vocab = impl.get_vocab(true);
    let maxId = 0;
    for (const id of vocab.values()) if (id > maxId) maxId = id;
    this.vocabSize = maxId + 1;
    this.specials = { bos_token: tokenString(config.bos_token), eos_token: tokenString(config.eos_token), pad_token: tokenString(config.pad_token) };
    const eos = new Set(extraEos);
    for (const s of [this.specials.eos_token, '<|endoftext|>', '<|im_end|>', '<|eot_id|>', '</s>']) {
      const id = s ? impl.token_to_id(s) : undefined;
      if (id !== undefined) eos.add(id);
    }
    this.eosTokenIds = [...eos];
    this.template = templateText ? new Template(templateText) : null;
  }

  /** Reads tokenizer.json, tokenizer_config.json and an optional chat_template.jinja from a model folder. */
  static fromFolder(dir: string, extraEos: number[] = []): HfTokenizer {
    const tj = join(dir, 'tokenizer.json');
    if (!existsSync(tj)) throw new Error(`${dir} has no tokenizer.json`);
    const json = JSON.parse(readFileSync(tj, 'utf8')) as object;
    const cfgPath = join(dir, 'tokenizer_config.json');
    const config = (existsSync(cfgPath) ? JSON.parse(readFileSync(cfgPath, 'utf8')) : {}) as TokenizerConfig;
    let template: string | null = null;
    const jinjaPath = join(dir, 'chat_template.jinja');
    if (existsSync(jinjaPath)) template = readFileSync(jinjaPath, 'utf8');
    else if (typeof config.chat_template === 'string') template = config.chat_template;
    else if (Array.isArray(config.chat_template)) template = config.chat_template.find((t) => t.name === 'default')?.template ?? null;
    return new HfTokenizer(new HfTokenizerImpl(json, config), config, template, extraEos);
  }

  encode(text: string): number[] {
    return this.impl.encode(text, { add_special_tokens: false }).ids;
  }

  decode(ids: number[]): string {
    return this.impl.decode(ids, { skip_special_tokens: false });
  }

  applyChatTemplate(messages: ChatMessage[], opts: { addGenerationPrompt?: boolean; tools?: ToolSpec[] } = {}): string {
    if (!this.template) throw new Error('this model has no chat template (tokenizer_config.json "chat_template" or chat_template.jinja)');
    // Templates expect tool-call arguments as objects (they serialise them with tojson).
    const msgs = messages.map((m) => ({
      ...m,
      tool_calls: m.tool_calls?.map((c) => {
        let args: unknown = c.function.arguments;
        try {
          args = JSON.parse(c.function.arguments);
        } catch {
          /* keep the string */
        }
        return { ...c, function: { name: c.function.name, arguments: args } };
      }),
    }));
    return this.template.render({
      messages: msgs,
      tools: opts.tools?.length ? opts.tools : undefined,
      add_generation_prompt: opts.addGenerationPrompt ?? true,
      ...this.specials,
    });
  }
}
