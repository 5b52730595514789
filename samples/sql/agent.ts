/**
 * The sql sample agent: text-to-SQL over the company database with three LangChain.js agents in a LangGraph.js graph (writer,
 * checker, rewriter; see graph.ts). It uses LangChain's ChatOpenAI unchanged, pointed at the LLM resource
 * it is given (the daemon's gateway). Reward: 1 when the final query's rows equal the gold query's.
 *   agl rollout samples/sql/agent.ts#sqlAgent --task '{"question":"How many employees are in Sales?","gold":"SELECT COUNT(*) FROM emp WHERE dept='"'"'Sales'"'"'"}'
 *   agl train samples/sql/agent.ts#sqlAgent --train samples/sql/data/train.jsonl --val samples/sql/data/val.jsonl --config samples/sql/train.yaml
 */
import { ChatOpenAI } from '@langchain/openai';
import { type LLM, emitObject, roleFetch, rollout } from '../../sdk/index.js';
import { openCompanyDb } from './db.js';
import { executionReward, formatRows, runQuery } from './execute.js';
import { buildSqlGraph } from './graph.js';
import { CHECKER_SYSTEM, REWRITER_PROMPT, type SqlPrompts, type SqlTask, WRITER_SYSTEM } from './task.js';

/** Reply length when the resource sets none: a query with a join is ~80 characters. */
const DEFAULT_MAX_TOKENS = 160;

export function chatModelFor(llm: LLM): ChatOpenAI {
  const p = llm.samplingParams;
  return new ChatOpenAI({
    model: llm.model,
    apiKey: llm.apiKey,
    // roleFetch names each call's role (writer, checker, rewriter) also when the graph runs outside a rollout
    // (inspect.ts against `agl serve --model <checkpoint>` of a run with one policy per role).
    configuration: { baseURL: llm.baseUrl, fetch: roleFetch() },
    maxRetries: 0,
    maxTokens: p.maxTokens ?? DEFAULT_MAX_TOKENS,
    ...(p.temperature !== undefined ? { temperature: p.temperature } : {}),
    ...(p.topP !== undefined ? { topP: p.topP } : {}),
    ...(p.stop !== undefined ? { stop: p.stop } : {}),
  });
}

/** The agents' texts through llm.prompt (their seeds fill in to the warm-up's texts): `agl optimize` can rewrite them. */
export function sqlPrompts(llm: LLM): SqlPrompts {
  return {
    writer: llm.prompt('writer', WRITER_SYSTEM),
    checker: llm.prompt('checker', CHECKER_SYSTEM),
    rewriter: (review) => llm.prompt('rewriter', REWRITER_PROMPT, { review }),
  };
}

function checkTask(task: unknown): SqlTask {
  const t = task as Partial<SqlTask> | null;
  if (!t || typeof t.question !== 'string' || typeof t.gold !== 'string') {
    throw new TypeError('sql task: expected {"question": string, "gold": string (the gold SQL)}');
  }
  return t as SqlTask;
}

export const sqlAgent = rollout(
  async (task: SqlTask, llm: LLM) => {
    const t = checkTask(task);
    const db = openCompanyDb();
    try {
      const final = await buildSqlGraph(chatModelFor(llm), db, { prompts: sqlPrompts(llm) }).invoke(t.question);
      const reward = executionReward(db, final.sql, t.gold);
      // The episode's answer (the final query and what it gave, one row per line) and the gold it is scored against,
      // for the viewer; how it got there (accepted by the checker, turns) rides along as attributes.
      emitObject(
        { sql: final.sql, result: formatRows(runQuery(db, final.sql)) },
        { 'agl.object.kind': 'sql.final', 'sql.accepted': final.accepted, 'sql.turns': final.history.length },
      );
      emitObject({ sql: t.gold, result: formatRows(runQuery(db, t.gold)) }, { 'agl.object.kind': 'sql.expected' });
      return reward;
    } finally {
      db.close();
    }
  },
  { name: 'sqlAgent' },
);
