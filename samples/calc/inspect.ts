/**
 * What a calc checkpoint does on held-out problems, offline (the policy is called directly, no daemon):
 * greedy exact-answer accuracy, how often it calls the calculator, how often the call is the right
 * expression, and how often it copies the calculator's result into its answer.
 *   npx tsx samples/calc/inspect.ts samples/calc/warmup [--data samples/calc/data/val.jsonl] [--temperature 0]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { PolicyModel } from '../../daemon/model/policy-contract.js';
import { openPolicy } from '../../daemon/algorithm/open-policy.js';
import { solveCalc } from './solve.js';
import { type CalcTask, demonstrations, parseToolCall } from './task.js';

export interface CalcInspection {
  n: number;
  accuracy: number;
  toolRate: number;
  rightCallRate: number;
  copyRate: number;
}

/** Runs every task through solveCalc with the policy, batching the LLM calls of all tasks together. */
export async function inspectCalc(policy: PolicyModel, tasks: CalcTask[], temperature = 0, seed = 1): Promise<CalcInspection> {
  // Collect the prompts of one "round" of all tasks, answer them in one batched generate call.
  const batchComplete = async (prompts: string[]): Promise<string[]> => {
    const gens = await policy.generate(
      prompts.map((p) => policy.tokenizer.encode(p)),
      { maxTokens: 16, temperature, seed, stop: ['\n'] },
    );
    return gens.map((g) => g.text);
  };
  let pending: { prompt: string; resolve: (s: string) => void }[] = [];
  let scheduled = false;
  const complete = (prompt: string) =>
    new Promise<string>((resolve) => {
      pending.push({ prompt, resolve });
      if (!scheduled) {
        scheduled = true;
        setImmediate(async () => {
          const batch = pending;
          pending = [];
          scheduled = false;
          const out = await batchComplete(batch.map((b) => b.prompt));
          batch.forEach((b, i) => b.resolve(out[i]));
        });
      }
    });
  const outcomes = await Promise.all(tasks.map((t) => solveCalc(t, complete)));
  let tool = 0,
    right = 0,
    copied = 0;
  outcomes.forEach((o, i) => {
    if (o.toolCall === null) return;
    tool++;
    const expected = parseToolCall(demonstrations(tasks[i])[0].completion);
    if (o.toolCall === expected) right++;
    if (o.toolResult !== null && o.answer.trim() === String(o.toolResult)) copied++;
  });
  const n = tasks.length;
  return { n, accuracy: outcomes.filter((o) => o.reward === 1).length / n, toolRate: tool / n, rightCallRate: right / n, copyRate: tool ? copied / tool : 0 };
}

/** Greedy exact-answer accuracy of a checkpoint on a calc tasks file (the test split's score in bench:learning). */
export async function calcScore(checkpoint: string, file: string): Promise<number> {
  const tasks = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as CalcTask);
  const policy = await openPolicy(checkpoint, { backend: 'wasm' });
  try {
    return (await inspectCalc(policy, tasks)).accuracy;
  } finally {
    policy.dispose();
  }
}

if (/calc[\\/]inspect\.[mc]?[tj]s$/.test(process.argv[1] ?? '')) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { data: { type: 'string' }, temperature: { type: 'string' }, backend: { type: 'string' } },
  });
  const tasks = readFileSync(values.data ?? 'samples/calc/data/val.jsonl', 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as CalcTask);
  void (async () => {
    const policy = await openPolicy(positionals[0] ?? 'samples/calc/warmup', { backend: values.backend ?? 'wasm' });
    const r = await inspectCalc(policy, tasks, Number(values.temperature ?? 0));
    const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
    console.log(
      `${r.n} problems: accuracy ${pct(r.accuracy)}, calls the calculator ${pct(r.toolRate)}, right expression ${pct(r.rightCallRate)}, copies the result ${pct(r.copyRate)} of tool calls`,
    );
    policy.dispose();
  })();
}
