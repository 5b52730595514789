/**
 * The rag agent's two prompts (a query writer that runs once per hop, an answerer) and the
 * demonstrations an `agl sft` warm-up learns from. Short, so the built-in model's context holds them.
 */
import type { Doc, RagTask } from './corpus.js';

export interface Msg { role: 'system' | 'user' | 'assistant'; content: string }

export const QUERY_INSTRUCTIONS = 'Write a search query.';
export const ANSWER_INSTRUCTIONS = 'Answer in a few words.';
/** Search hops per question: the questions are two-hop. */
export const HOPS = 2;

/** What the query writer reads: the question, and what the earlier hops found. */
export function queryInput(question: string, known: Doc[]): string {
  return known.length ? `${question}\nKnown: ${known.map((d) => d.text).join(' ')}` : question;
}

export function answerInput(question: string, docs: Doc[]): string {
  return `${docs.map((d) => d.text).join('\n')}\n${question}`;
}

/** The query writer's reply as a search query: its first line, quotes and a "Query:" label dropped. */
export function cleanQuery(reply: string): string {
  const line = reply.trim().split('\n')[0] ?? '';
  return line.replace(/^(search query|query|search)\s*:\s*/i, '').replace(/^["'`]+|["'`]+$/g, '').trim();
}

/** The query an expert writes for a document: its title (a name, "(guild)" spelled as a word). */
export function queryFor(doc: Pick<Doc, 'title'>): string {
  return doc.title.replace(/ \(guild\)$/, ' guild');
}

/**
 * Demonstrations in the exact chat form the agent sends: one per hop (the expert query for the next
 * needed document, given the documents already found) and the answer given both documents.
 */
export function demonstrations(task: RagTask, docByTitle: Map<string, Doc>): { messages: Msg[] }[] {
  const docs = task.hops.map((t) => {
    const d = docByTitle.get(t);
    if (!d) throw new Error(`task ${task.id}: no document titled '${t}'`);
    return d;
  });
  return [
    ...docs.map((d, hop) => ({ messages: [
      { role: 'system', content: QUERY_INSTRUCTIONS } as Msg,
      { role: 'user', content: queryInput(task.question, docs.slice(0, hop)) } as Msg,
      { role: 'assistant', content: queryFor(d) } as Msg,
    ] })),
    { messages: [
      { role: 'system', content: ANSWER_INSTRUCTIONS },
      { role: 'user', content: answerInput(task.question, docs) },
      { role: 'assistant', content: task.answer },
    ] },
  ];
}
