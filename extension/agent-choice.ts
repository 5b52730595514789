/**
 * Which agent a command (Train This Agent, Run Rollout) runs on when the user did not name one, without VS Code
 * (unit-tested in test/extension/agent-choice.test.ts). The issue behind it (#27 item 4): with the cursor outside
 * any agent, every agent of the workspace was offered, test fixtures included, and the first one (calcAgent) was
 * highlighted while samples/sql/agent.ts was open, so Enter trained an agent the user was not looking at.
 *
 * The order says where the user is: the agent under the cursor is taken without asking; else the agents of the
 * open file come first (the first of them highlighted); only then the other agents of the workspace, the one
 * last used first. Agents in test fixtures, build output and dependencies, and in files outside the workspace
 * folders, are not offered: they are never what "this agent" means, unless their file is the one open.
 */
import { isAbsolute, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AgentInfo } from '../protocol/lsp.js';

/** Folders whose agents are tests, fixtures, build output or dependencies rather than the user's agents. */
const FIXTURE_FOLDERS = new Set(['test', 'tests', '__tests__', 'fixtures', 'node_modules', 'dist', 'out']);

/** Is `rel` (a path inside a workspace folder) a test, a fixture, build output or a dependency? */
export function isFixturePath(rel: string): boolean {
  const parts = rel.split(/[\\/]/);
  const name = parts.pop() ?? '';
  return parts.some((p) => FIXTURE_FOLDERS.has(p)) || /\.(test|spec)\./.test(name);
}

/** The file of an agent as the language server names it (a file: URI), or null (an untitled or virtual document). */
export function agentFile(agent: AgentInfo): string | null {
  if (!agent.uri.startsWith('file:')) return null;
  try {
    return fileURLToPath(agent.uri);
  } catch {
    return null;
  }
}

/**
 * The same file? VS Code names a Windows drive `c:`, a URI the language server made from a scanned path `C:`
 * (its lowercase form comes from an open document's URI); nothing else differs between the two.
 */
export function samePath(a: string, b: string): boolean {
  const drive = (p: string) => p.replace(/^[a-z]:/, (d) => d.toUpperCase());
  return drive(a) === drive(b);
}

/** `file` relative to the innermost workspace folder holding it, or null when none does. */
export function workspaceRelative(file: string, folders: readonly string[]): string | null {
  let best: string | null = null;
  for (const folder of folders) {
    const rel = relative(folder, file);
    if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) continue;
    if (best === null || rel.length < best.length) best = rel;
  }
  return best;
}

/** Where the command was started from. */
export interface AgentContext {
  /** The agent whose declaration holds the cursor (the language server's agentAt). */
  cursor?: AgentInfo | null;
  /** The file of the editor the cursor is in (the focused one, else the last focused one still visible). */
  activeFile?: string | null;
  /** The workspace folders, as file paths. */
  folders: readonly string[];
  /** The id of the agent the user last chose in this workspace. */
  remembered?: string | null;
}

export type AgentDecision =
  /** Run on `agent` without asking: it is under the cursor, or the only agent offered. */
  | { kind: 'take'; agent: AgentInfo; why: 'cursor' | 'only' }
  /** Ask, `inFile` (the open file's agents, in source order) listed first, then `workspace`; the first is highlighted. */
  | { kind: 'ask'; inFile: AgentInfo[]; workspace: AgentInfo[] }
  /** Nothing to offer; `hidden` are the agents left out (fixtures, outside the workspace), for the message. */
  | { kind: 'none'; hidden: AgentInfo[] };

/** The agent to take, or the agents to offer in order (see the module comment). */
export function chooseAgent(all: readonly AgentInfo[], where: AgentContext): AgentDecision {
  if (where.cursor) return { kind: 'take', agent: where.cursor, why: 'cursor' };
  const inFile: AgentInfo[] = [];
  const workspace: AgentInfo[] = [];
  const hidden: AgentInfo[] = [];
  const seen = new Set<string>();
  for (const agent of all) {
    if (seen.has(agent.id)) continue;
    seen.add(agent.id);
    const file = agentFile(agent);
    // The open file is what the user is looking at: its agents are offered even in a fixture or outside the folders.
    if (file !== null && where.activeFile && samePath(file, where.activeFile)) {
      inFile.push(agent);
      continue;
    }
    const rel = file === null ? null : workspaceRelative(file, where.folders);
    if (rel === null || isFixturePath(rel)) hidden.push(agent);
    else workspace.push(agent);
  }
  inFile.sort((a, b) => a.range.start.line - b.range.start.line || a.range.start.character - b.range.start.character);
  const remembered = (a: AgentInfo) => Number(a.id === where.remembered);
  workspace.sort((a, b) => remembered(b) - remembered(a) || a.id.localeCompare(b.id));
  const offered = inFile.length + workspace.length;
  if (offered === 0) return { kind: 'none', hidden };
  if (offered === 1) return { kind: 'take', agent: (inFile[0] ?? workspace[0])!, why: 'only' };
  return { kind: 'ask', inFile, workspace };
}
