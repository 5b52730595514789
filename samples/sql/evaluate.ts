/**
 * Runs a sample agent directly against any OpenAI-compatible server named by environment variables,
 * with no daemon in between (nothing is recorded; the SDK's emitters do nothing outside a rollout):
 *   OPENAI_BASE_URL  the server's base URL, ending in /v1 (OpenAI, vLLM, Ollama, llama.cpp server)
 *   OPENAI_API_KEY   its key (any string for servers that need none)
 *   AGL_MODEL        the model name to ask for
 *   OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-... AGL_MODEL=gpt-4o-mini \
 *     npx tsx samples/sql/evaluate.ts samples/sql/agent.ts#sqlAgent samples/sql/data/test.jsonl --limit 20
 * Prints each task's reward and the mean. Works for any TypeScript agent marked with rollout().
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { isRolloutAgent, LLM } from '../../sdk/index.js';

export function llmFromEnv(env: NodeJS.ProcessEnv = process.env): LLM {
  const baseUrl = env.OPENAI_BASE_URL;
  const model = env.AGL_MODEL;
  if (!baseUrl || !model) throw new Error('set OPENAI_BASE_URL (ending in /v1) and AGL_MODEL (and OPENAI_API_KEY when the server needs one)');
  return new LLM({ baseUrl, model, apiKey: env.OPENAI_API_KEY ?? 'none', samplingParams: { temperature: 0 } });
}

export async function evaluateWithEnv(
  agentRef: string,
  tasksFile: string,
  limit: number,
  log = (line: string) => {
    process.stdout.write(`${line}\n`);
  },
): Promise<number> {
  const [file, exportName] = agentRef.split('#');
  const mod = (await import(pathToFileURL(resolve(file)).href)) as Record<string, unknown>;
  const agent = mod[exportName ?? 'default'];
  if (!isRolloutAgent(agent)) throw new Error(`${agentRef}: no agent marked with rollout() under that export`);
  const llm = llmFromEnv();
  const tasks = readFileSync(tasksFile, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .slice(0, limit)
    .map((l) => JSON.parse(l) as { id?: string });
  let total = 0;
  for (const [i, task] of tasks.entries()) {
    const reward = Number(await agent(task, llm, { rolloutId: `local-${i}`, attemptId: `local-${i}`, mode: 'test' }));
    total += reward;
    log(`${task.id ?? i}\t${reward.toFixed(3)}`);
  }
  return tasks.length ? total / tasks.length : 0;
}

if (/evaluate\.[mc]?[tj]s$/.test(process.argv[1] ?? '')) {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { limit: { type: 'string', default: '20' } } });
  if (positionals.length !== 2) {
    process.stderr.write('usage: evaluate.ts <agent file>#<export> <tasks.jsonl> [--limit N]\n');
    process.exit(2);
  }
  evaluateWithEnv(positionals[0], positionals[1], Number(values.limit)).then(
    (mean) => {
      process.stdout.write(`mean reward ${mean.toFixed(3)}\n`);
      process.exit(0);
    },
    (e) => {
      process.stderr.write(`${(e as Error).message}\n`);
      process.exit(1);
    },
  );
}
