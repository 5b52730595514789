/**
 * The sql agent's graph, written with LangChain.js: three chat-model agents around a query executor.
 *
 *   writer ──> execute ──> checker ──yes──> done
 *                 ^           │no
 *                 └─ rewriter ┘         (at most `maxTurns` rewrites)
 *
 * LangGraph.js is not used: its npm resolution fails in this environment (a @langchain/langgraph-checkpoint
 * range with no published match), so the loop is plain TypeScript over LangChain runnables. Each agent runs
 * inside an SDK `operation()` carrying its agent name, so the LLM calls it makes through the gateway are
 * recorded under that name and training can select writer and rewriter only (selective optimization).
 */
import { AIMessage, type BaseMessage, HumanMessage, SystemMessage } from '@langchain/core/messages';
import { StringOutputParser } from '@langchain/core/output_parsers';
import { RunnableLambda, type Runnable } from '@langchain/core/runnables';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type Database from 'better-sqlite3';
import { operation } from '../../sdk/index.js';
import { formatResult, runQuery } from './execute.js';
import { checkerAccepts, checkerMessages, extractSql, type Msg, rewriterMessages, writerMessages } from './task.js';

export const AGENTS = { writer: 'writer', checker: 'checker', rewriter: 'rewriter' } as const;

export interface SqlState {
  question: string;
  /** The latest query and what running it gave. */
  sql: string;
  result: string;
  /** Every query tried, in order, and the checker's replies. */
  history: { sql: string; result: string; verdict?: string }[];
  accepted: boolean;
}

function toLangChain(messages: Msg[]): BaseMessage[] {
  return messages.map((m) => (m.role === 'system' ? new SystemMessage(m.content) : m.role === 'user' ? new HumanMessage(m.content) : new AIMessage(m.content)));
}

/** A chat agent: its messages -> the model -> the reply text, run under its agent name. */
function chatAgent(name: string, model: BaseChatModel, build: (s: SqlState) => Msg[]): Runnable<SqlState, string> {
  const chain = RunnableLambda.from((s: SqlState) => toLangChain(build(s))).pipe(model).pipe(new StringOutputParser());
  return RunnableLambda.from((s: SqlState) => operation(name, () => chain.invoke(s), { agentName: name }));
}

export interface SqlGraphOptions {
  /** Rewrites allowed after the first query (the paper's agent allows a few turns). */
  maxTurns?: number;
}

/** Builds the graph over one database; `invoke(question)` runs it and returns the final state. */
export function buildSqlGraph(model: BaseChatModel, db: Database.Database, o: SqlGraphOptions = {}) {
  const maxTurns = o.maxTurns ?? 2;
  const writer = chatAgent(AGENTS.writer, model, (s) => writerMessages(s.question));
  const checker = chatAgent(AGENTS.checker, model, (s) => checkerMessages(s.question, s.sql, s.result));
  const rewriter = chatAgent(AGENTS.rewriter, model, (s) => rewriterMessages(s.question, s.sql, s.result));
  const execute = RunnableLambda.from((sql: string) => operation('execute_sql', () => {
    const r = runQuery(db, sql);
    if (r.error !== null) throw new Error(r.error); // recorded as a failed tool span (AIR rules can see it)
    return formatResult(r);
  }, { tool: true, attributes: { 'sql.query': sql } }).catch((e: Error) => `error: ${e.message}`));

  async function run(state: SqlState, reply: string): Promise<SqlState> {
    const sql = extractSql(reply);
    const result = await execute.invoke(sql);
    return { ...state, sql, result, history: [...state.history, { sql, result }] };
  }

  return {
    async invoke(question: string): Promise<SqlState> {
      let state: SqlState = { question, sql: '', result: '', history: [], accepted: false };
      state = await run(state, await writer.invoke(state));
      for (let turn = 0; turn <= maxTurns; turn++) {
        const verdict = await checker.invoke(state);
        state.history[state.history.length - 1].verdict = verdict;
        if (checkerAccepts(verdict)) return { ...state, accepted: true };
        if (turn === maxTurns) break;
        state = await run(state, await rewriter.invoke(state));
      }
      return state;
    },
  };
}
