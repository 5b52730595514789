/**
 * The rag agent's two prompts (a query writer that runs once per hop, an answerer), short so the built-in
 * model's context holds them. The warm-up's demonstrations use them too (warmup-demos.ts).
 */
import type { Doc } from './corpus.js';

export interface Msg {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

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
  return line
    .replace(/^(search query|query|search)\s*:\s*/i, '')
    .replace(/^["'`]+|["'`]+$/g, '')
    .trim();
}

/** The query an expert writes for a document: its title (a name, "(guild)" spelled as a word). */
export function queryFor(doc: Pick<Doc, 'title'>): string {
  return doc.title.replace(/ \(guild\)$/, ' guild');
}
