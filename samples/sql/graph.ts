/**
 * The sql agent's graph, a LangGraph.js StateGraph of three chat-model agents around a query executor:
 *
 *   START -> writer -> execute -> checker --yes--> END
 *                        ^          |no
 *                        +- rewriter+        (at most `maxTurns` rewrites, then END)
 *
 * Each agent node runs a LangChain runnable (messages -> chat model -> text) inside an SDK `operation()`
 * carrying its agent name, so the LLM calls it makes through the gateway are recorded under that name and
 * training can select writer and rewriter only (selective optimization, as the paper's SQL agent).
 */
import { AIMessage, type BaseMessage, HumanMessage, SystemMessage } from '@langchain/core/messages';
import { StringOutputParser } from '@langchain/core/output_parsers';
import { RunnableLambda, type Runnable } from '@langchain/core/runnables';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import type Database from 'better-sqlite3';
import { operation } from '../../sdk/index.js';
import { formatResult, runQuery } from './execute.js';
import { checkerAccepts, checkerMessages, extractSql, type Msg, rewriterMessages, SEED_PROMPTS, type SqlPrompts, writerMessages } from './task.js';

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
  const chain = RunnableLambda.from((s: SqlState) => toLangChain(build(s)))
    .pipe(model)
    .pipe(new StringOutputParser());
  return RunnableLambda.from((s: SqlState) => operation(name, () => chain.invoke(s), { agentName: name }));
}

export interface SqlGraphOptions {
  /** Rewrites allowed after the first query (the paper's agent allows a few turns). */
  maxTurns?: number;
  /** The agents' texts (agent.ts reads them with llm.prompt); default the seeds. */
  prompts?: SqlPrompts;
}

/** The graph's state channels (each keeps the last value written). */
const SqlStateAnnotation = Annotation.Root({
  question: Annotation<string>(),
  sql: Annotation<string>(),
  result: Annotation<string>(),
  history: Annotation<SqlState['history']>(),
  accepted: Annotation<boolean>(),
  /** Rewrites so far. */
  turns: Annotation<number>(),
});

/** Builds the compiled graph over one database; `invoke(question)` runs it and returns the final state. */
export function buildSqlGraph(model: BaseChatModel, db: Database.Database, o: SqlGraphOptions = {}) {
  const maxTurns = o.maxTurns ?? 2;
  const prompts = o.prompts ?? SEED_PROMPTS;
  const writer = chatAgent(AGENTS.writer, model, (s) => writerMessages(s.question, prompts));
  const checker = chatAgent(AGENTS.checker, model, (s) => checkerMessages(s.question, s.sql, s.result, prompts));
  const rewriter = chatAgent(AGENTS.rewriter, model, (s) => rewriterMessages(s.question, s.sql, s.result, prompts));
  const execute = (sql: string) =>
    operation(
      'execute_sql',
      () => {
        const r = runQuery(db, sql);
        if (r.error !== null) throw new Error(r.error); // recorded as a failed tool span (AIR rules can see it)
        return formatResult(r);
      },
      { tool: true, input: sql, attributes: { 'sql.query': sql } },
    ).catch((e: Error) => `error: ${e.message}`);

  type S = typeof SqlStateAnnotation.State;
  const graph = new StateGraph(SqlStateAnnotation)
    .addNode('writer', async (s: S) => ({ sql: extractSql(await writer.invoke(s)) }))
    .addNode('execute', async (s: S) => {
      const result = await execute(s.sql);
      return { result, history: [...s.history, { sql: s.sql, result }] };
    })
    .addNode('checker', async (s: S) => {
      const verdict = await checker.invoke(s);
      const history = s.history.map((h, i) => (i === s.history.length - 1 ? { ...h, verdict } : h));
      return { history, accepted: checkerAccepts(verdict) };
    })
    .addNode('rewriter', async (s: S) => ({ sql: extractSql(await rewriter.invoke(s)), turns: s.turns + 1 }))
    .addEdge(START, 'writer')
    .addEdge('writer', 'execute')
    .addEdge('execute', 'checker')
    .addConditionalEdges('checker', (s: S) => (s.accepted || s.turns >= maxTurns ? END : 'rewriter'), ['rewriter', END])
    .addEdge('rewriter', 'execute')
    .compile();

  return {
    graph,
    async invoke(question: string): Promise<SqlState> {
      const final = await graph.invoke({ question, sql: '', result: '', history: [], accepted: false, turns: 0 });
      return { question: final.question, sql: final.sql, result: final.result, history: final.history, accepted: final.accepted };
    },
  };
}
