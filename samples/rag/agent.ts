/**
 * The rag sample agent: two-hop question answering over the local corpus, written with the OpenAI Agents
 * SDK (@openai/agents) unchanged. A query-writer agent writes one search query per hop (reading what the
 * earlier hop found), MiniSearch retrieves the best new document, and an answer agent answers from the
 * documents found. Both agents use a chat-completions model on an OpenAI client pointed at the LLM
 * resource (the daemon's gateway). Reward: token F1 of the answer against the gold answer.
 *   agl rollout samples/rag/agent.ts#ragAgent --task '{"question":"In which region was Rinbel Moul born?","answer":"..."}'
 *   agl train samples/rag/agent.ts#ragAgent --train samples/rag/data/train.jsonl --val samples/rag/data/val.jsonl
 */
import { Agent, OpenAIChatCompletionsModel, Runner } from '@openai/agents';
import OpenAI from 'openai';
import { type LLM, emitObject, operation, rollout } from '../../sdk/index.js';
import { type Doc, type RagTask, tokenF1 } from './corpus.js';
import { loadCorpus } from './data.js';
import { ANSWER_INSTRUCTIONS, answerInput, cleanQuery, HOPS, QUERY_INSTRUCTIONS, queryInput } from './prompts.js';
import { CorpusSearch } from './search.js';

export const AGENTS = { query: 'query_writer', answer: 'answerer' } as const;
/** Reply length when the resource sets none: names and short answers. */
const DEFAULT_MAX_TOKENS = 48;

let corpusSearch: CorpusSearch | undefined;
/** One index per worker process: the corpus does not change between rollouts. */
function searchIndex(): CorpusSearch {
  return (corpusSearch ??= new CorpusSearch(loadCorpus()));
}

function checkTask(task: unknown): RagTask {
  const t = task as Partial<RagTask> | null;
  if (!t || typeof t.question !== 'string' || typeof t.answer !== 'string') {
    throw new TypeError('rag task: expected {"question": string, "answer": string}');
  }
  return t as RagTask;
}

export interface RagOutcome {
  answer: string;
  queries: string[];
  docs: Doc[];
  reward: number;
}

/** The agents' instructions: the agent reads them with llm.prompt (so `agl optimize` can rewrite them); default the seeds. */
export interface RagInstructions {
  query: string;
  answer: string;
}
const SEED_INSTRUCTIONS: RagInstructions = { query: QUERY_INSTRUCTIONS, answer: ANSWER_INSTRUCTIONS };

/** The agent's work on one question, given a chat-completions model for the Agents SDK. */
export async function answerQuestion(
  task: RagTask,
  model: OpenAIChatCompletionsModel,
  settings: Agent['modelSettings'],
  instructions: RagInstructions = SEED_INSTRUCTIONS,
): Promise<RagOutcome> {
  // Tracing to the OpenAI platform stays off: the gateway records every call already.
  const runner = new Runner({ tracingDisabled: true });
  const queryWriter = new Agent({ name: AGENTS.query, instructions: instructions.query, model, modelSettings: settings });
  const answerer = new Agent({ name: AGENTS.answer, instructions: instructions.answer, model, modelSettings: settings });
  const found: Doc[] = [];
  const queries: string[] = [];
  for (let hop = 0; hop < HOPS; hop++) {
    const reply = await operation(AGENTS.query, () => runner.run(queryWriter, queryInput(task.question, found)), { agentName: AGENTS.query });
    const query = cleanQuery(String(reply.finalOutput ?? ''));
    queries.push(query);
    // A search that finds nothing is a failed tool call (what AIR's tool_failed rules see); the episode goes on.
    const hits = await operation(
      'search',
      () => {
        const h = searchIndex().search(query, 1, new Set(found.map((d) => d.id)));
        if (h.length === 0) throw new Error(`no document matches '${query}'`);
        return h;
      },
      { tool: true, input: query, attributes: { 'search.query': query } },
    ).catch(() => [] as Doc[]);
    found.push(...hits);
  }
  const reply = await operation(AGENTS.answer, () => runner.run(answerer, answerInput(task.question, found)), { agentName: AGENTS.answer });
  const answer = String(reply.finalOutput ?? '').trim();
  return { answer, queries, docs: found, reward: tokenF1(answer, task.answer) };
}

export const ragAgent = rollout(
  async (task: RagTask, llm: LLM) => {
    const t = checkTask(task);
    const client = new OpenAI({ baseURL: llm.baseUrl, apiKey: llm.apiKey, maxRetries: 0 });
    const model = new OpenAIChatCompletionsModel(client, llm.model);
    const p = llm.samplingParams;
    const settings = {
      maxTokens: p.maxTokens ?? DEFAULT_MAX_TOKENS,
      ...(p.temperature !== undefined ? { temperature: p.temperature } : {}),
      ...(p.topP !== undefined ? { topP: p.topP } : {}),
    };
    const instructions = { query: llm.prompt(AGENTS.query, QUERY_INSTRUCTIONS), answer: llm.prompt(AGENTS.answer, ANSWER_INSTRUCTIONS) };
    const outcome = await answerQuestion(t, model, settings, instructions);
    // The episode's answer for the viewer; the queries and documents that led to it ride along as attributes.
    emitObject({ answer: outcome.answer }, { 'agl.object.kind': 'rag.final', 'rag.queries': outcome.queries, 'rag.docs': outcome.docs.map((d) => d.title) });
    return outcome.reward;
  },
  { name: 'ragAgent' },
);
