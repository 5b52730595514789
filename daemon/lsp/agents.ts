/**
 * The agent finder: which functions of a source file are agents, and the ids the store and runner use
 * for them (`path/from/project/root.ts#exportName`, `...py:function`: protocol/agent-id.ts says why).
 * TS/JS goes through the TypeScript compiler API, Python through tree-sitter.
 */
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { AgentInfo, AgentLanguage } from '../../protocol/lsp.js';
import { agentIdentity } from '../../client/agent-id.js';
import { findPyAgents } from './agents-py.js';
import { findTsAgents, type FoundAgent } from './agents-ts.js';

export const AGENT_FILE_PATTERN = /\.(ts|mts|cts|tsx|js|mjs|cjs|jsx|py)$/;

export function languageOf(fileName: string): AgentLanguage | null {
  if (/\.py$/.test(fileName)) return 'python';
  if (/\.(ts|mts|cts|tsx)$/.test(fileName) && !/\.d\.[mc]?ts$/.test(fileName)) return 'typescript';
  if (/\.(js|mjs|cjs|jsx)$/.test(fileName)) return 'javascript';
  return null;
}

export { parseAgentId } from '../../protocol/agent-id.js';

export async function findAgentsInText(fileName: string, text: string): Promise<FoundAgent[]> {
  const language = languageOf(fileName);
  if (!language) return [];
  if (language === 'python') return findPyAgents(text);
  // Cheap pre-check: most files never mention rollout; skip parsing them.
  if (!text.includes('rollout')) return [];
  return findTsAgents(fileName, text);
}

/**
 * Agents of one document, each named by its stable id (client/agent-id.ts agentIdentity: relative to the file's
 * project root, so the same whichever folder the editor opened).
 */
export async function findAgents(uri: string, text: string): Promise<AgentInfo[]> {
  const filePath = uri.startsWith('file:') ? fileURLToPath(uri) : uri;
  const language = languageOf(filePath);
  if (!language) return [];
  const found = await findAgentsInText(filePath, text);
  return found.map((f) => ({
    id: agentIdentity(filePath, f.name, language),
    name: f.name,
    language,
    uri: uri.startsWith('file:') ? uri : pathToFileURL(filePath).href,
    range: { start: f.start, end: f.end },
  }));
}
