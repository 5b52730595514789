/**
 * The prompt finder: the `llm.prompt(name, seed)` calls of a source file (prompts-ts.ts, prompts-py.ts), each given the
 * agent that reads it, so its lens can show that agent's optimizations of it and Optimize This Prompt knows what to
 * run: the agent whose declaration holds the call (an inline `rollout(async (task, llm) => ...)`, a decorated def),
 * else the file's only agent (a helper function beside it), else none (the command then asks).
 */
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { AgentInfo, PromptInfo } from '../../protocol/lsp.js';
import { findAgents, languageOf } from './agents.js';
import { findPyPrompts } from './prompts-py.js';
import { findTsPrompts, type FoundPrompt } from './prompts-ts.js';

/** Files worth parsing for prompts: they mention `.prompt(` somewhere. */
export const mayHavePrompts = (text: string): boolean => /\.prompt\s*\(/.test(text);

const contains = (a: AgentInfo, line: number) => a.range.start.line <= line && line <= a.range.end.line;

/** The agent that reads a prompt called at `line`: the one declared around it, else the only one of the file. */
export function readingAgent(agents: readonly AgentInfo[], line: number): AgentInfo | null {
  return agents.find((a) => contains(a, line)) ?? (agents.length === 1 ? agents[0]! : null);
}

/** The prompts of one document, each with the agent that reads it (`agents`: the document's, when already found). */
export async function findPrompts(uri: string, text: string, agents?: AgentInfo[]): Promise<PromptInfo[]> {
  const filePath = uri.startsWith('file:') ? fileURLToPath(uri) : uri;
  const language = languageOf(filePath);
  if (!language || !mayHavePrompts(text)) return [];
  const found: FoundPrompt[] = language === 'python' ? await findPyPrompts(text) : findTsPrompts(filePath, text);
  if (!found.length) return [];
  const inFile = agents ?? (await findAgents(uri, text));
  return found.map((p) => ({
    name: p.name,
    seed: p.seed,
    agent: readingAgent(inFile, p.start.line)?.id ?? null,
    language,
    uri: uri.startsWith('file:') ? uri : pathToFileURL(filePath).href,
    range: { start: p.start, end: p.end },
  }));
}
