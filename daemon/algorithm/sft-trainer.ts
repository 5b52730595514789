/**
 * Supervised fine-tuning from demonstrations (`agl sft --data demos.jsonl`): the warm-up a tiny model
 * needs before RL has any reward to learn from. A demonstration line is either
 *   {"prompt": "...", "completion": "..."}                     (text, as the agent sends to /v1/completions)
 *   {"messages": [{"role": "user", ...}, ..., {"role": "assistant", ...}]}   (chat: the last assistant turn is learned)
 * The completion is followed by the tokenizer's end-of-sequence token, so the model learns to stop.
 */
import { readFileSync } from 'node:fs';
import type { ChatMessage, PolicyModel, SequencePair, Tokenizer } from '../model/policy-contract.js';
import { makeRng } from '../model/sampling.js';

export interface Demonstration {
  prompt?: string;
  completion?: string;
  messages?: ChatMessage[];
}

/** One value of a JSON-lines file and the line it is on (1-based, blank lines counted: what an editor shows). */
export interface JsonlLine<T> {
  line: number;
  value: T;
}

/** The values of a JSON-lines file with their line numbers; blank lines are skipped, a line that is no JSON is named. */
export function readJsonlLines<T = unknown>(path: string): JsonlLine<T>[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`cannot read ${path}: ${(e as Error).message}`, { cause: e });
  }
  const out: JsonlLine<T>[] = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    try {
      out.push({ line: i + 1, value: JSON.parse(line) as T });
    } catch (e) {
      throw new Error(`${path}:${i + 1}: not valid JSON (${(e as Error).message})`, { cause: e });
    }
  });
  return out;
}

/** The values of a JSON-lines file (readJsonlLines without the line numbers). */
export function readJsonl<T = unknown>(path: string): T[] {
  return readJsonlLines<T>(path).map((l) => l.value);
}

export function demoToPair(demo: Demonstration, tok: Tokenizer, where = 'demonstration'): SequencePair {
  const eos = tok.eosTokenIds[0];
  if (typeof demo.prompt === 'string' && typeof demo.completion === 'string') {
    return { promptIds: tok.encode(demo.prompt), completionIds: [...tok.encode(demo.completion), eos] };
  }
  if (Array.isArray(demo.messages) && demo.messages.length >= 2 && demo.messages.at(-1)?.role === 'assistant') {
    const prompt = tok.applyChatTemplate(demo.messages.slice(0, -1), { addGenerationPrompt: true });
    const full = tok.applyChatTemplate(demo.messages, { addGenerationPrompt: false });
    if (!full.startsWith(prompt)) throw new Error(`${where}: the chat template does not extend the prompt with the answer`);
    const completionIds = tok.encode(full.slice(prompt.length));
    if (!tok.eosTokenIds.includes(completionIds.at(-1) ?? -1)) completionIds.push(eos);
    return { promptIds: tok.encode(prompt), completionIds };
  }
  throw new Error(`${where}: expected {"prompt","completion"} strings or {"messages": [..., {"role":"assistant"}]}`);
}

export interface SftOptions {
  steps: number;
  batchSize: number;
  /** Every update's learning rate, sent with it (the policy's configured settings give the others). */
  lr: number;
  seed?: number;
  /** Called after each step; return true to stop early. */
  onStep?: (step: number, loss: number, tokensPerSecond: number) => boolean | void | Promise<boolean | void>;
}

/** Trains on the pairs for `steps` updates of `batchSize` sequences (reshuffled each pass). */
export async function runSft(policy: PolicyModel, pairs: SequencePair[], o: SftOptions): Promise<{ steps: number; lastLoss: number }> {
  if (pairs.length === 0) throw new Error('no demonstrations to train on');
  const tooLong = pairs.findIndex((p) => p.promptIds.length + p.completionIds.length > policy.contextLength);
  if (tooLong >= 0)
    throw new Error(
      `demonstration ${tooLong + 1} has ${pairs[tooLong].promptIds.length + pairs[tooLong].completionIds.length} tokens; the model's context is ${policy.contextLength}`,
    );
  const r = makeRng(o.seed ?? 1);
  let order: number[] = [];
  let lastLoss = NaN;
  for (let step = 0; step < o.steps; step++) {
    const batch: SequencePair[] = [];
    while (batch.length < o.batchSize) {
      if (order.length === 0) {
        order = pairs.map((_, i) => i);
        for (let i = order.length - 1; i > 0; i--) {
          const j = Math.floor(r() * (i + 1));
          [order[i], order[j]] = [order[j], order[i]];
        }
      }
      batch.push(pairs[order.pop()!]);
    }
    const res = await policy.trainStep(batch, { kind: 'nll' }, { lr: o.lr });
    lastLoss = res.loss;
    if (await o.onStep?.(step + 1, res.loss, res.seconds > 0 ? res.tokens / res.seconds : 0)) return { steps: step + 1, lastLoss };
  }
  return { steps: o.steps, lastLoss };
}
