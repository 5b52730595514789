/**
 * The agent finder: which functions of a source file are agents, and the ids the store and runner use
 * for them (`relative/path.ts#exportName`, `relative/path.py:function`, relative to the workspace folder).
 * TS/JS goes through the TypeScript compiler API, Python through tree-sitter.
 */
import { relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { AgentInfo, AgentLanguage } from '../../protocol/lsp.js';
import { findPyAgents } from './agents-py.js';
import { findTsAgents, type FoundAgent } from './agents-ts.js';

export const AGENT_FILE_PATTERN = /\.(ts|mts|cts|tsx|js|mjs|cjs|jsx|py)$/;

export function languageOf(fileName: string): AgentLanguage | null {
  if (/\.py$/.test(fileName)) return 'python';
  if (/\.(ts|mts|cts|tsx)$/.test(fileName) && !/\.d\.[mc]?ts$/.test(fileName)) return 'typescript';
  if (/\.(js|mjs|cjs|jsx)$/.test(fileName)) return 'javascript';
  return null;
}

/** The agent id for an agent found in `filePath`, relative to `root` with forward slashes. */
export function agentId(root: string, filePath: string, name: string, language: AgentLanguage): string {
  const rel = relative(root, filePath).split(sep).join('/');
  return language === 'python' ? `${rel}:${name}` : `${rel}#${name}`;
}

/** Splits an agent id into its file (relative) and function/export name. */
export function parseAgentId(id: string): { file: string; name: string } {
  const hash = id.lastIndexOf('#');
  if (hash > 0) return { file: id.slice(0, hash), name: id.slice(hash + 1) };
  const colon = id.lastIndexOf(':');
  if (colon > 0 && /\.py$/.test(id.slice(0, colon))) return { file: id.slice(0, colon), name: id.slice(colon + 1) };
  return { file: id, name: 'default' };
}

export async function findAgentsInText(fileName: string, text: string): Promise<FoundAgent[]> {
  const language = languageOf(fileName);
  if (!language) return [];
  if (language === 'python') return findPyAgents(text);
  // Cheap pre-check: most files never mention rollout; skip parsing them.
  if (!text.includes('rollout')) return [];
  return findTsAgents(fileName, text);
}

/**
 * Agents of one document. `roots` are the workspace folder paths; the deepest one containing the file
 * makes the id relative (a file outside every root is named relative to its own folder's parent chain: the first root).
 */
export async function findAgents(uri: string, text: string, roots: string[]): Promise<AgentInfo[]> {
  const filePath = uri.startsWith('file:') ? fileURLToPath(uri) : uri;
  const language = languageOf(filePath);
  if (!language) return [];
  const root = rootFor(filePath, roots);
  const found = await findAgentsInText(filePath, text);
  return found.map((f) => ({
    id: agentId(root, filePath, f.name, language),
    name: f.name,
    language,
    uri: uri.startsWith('file:') ? uri : pathToFileURL(filePath).href,
    range: { start: f.start, end: f.end },
  }));
}

export function rootFor(filePath: string, roots: string[]): string {
  const containing = roots.filter((r) => filePath === r || filePath.startsWith(r.endsWith(sep) ? r : r + sep));
  if (containing.length > 0) return containing.sort((a, b) => b.length - a.length)[0]!;
  return roots[0] ?? process.cwd();
}
