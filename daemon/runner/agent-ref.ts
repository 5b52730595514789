/**
 * Parses an agent reference: `path/to/file.ts#exportName` (TS/JS, exportName defaults to the only
 * rollout() export), or Python's `package.module:function` / `path/to/file.py:function`. Relative paths are
 * found from the project root of the working directory first (how stored ids are written: protocol/agent-id.ts),
 * then from the working directory itself. `storedAgentId` is what `agl rollout` / `agl train` / `agl runner
 * --agent` record for a reference as typed: its stable id.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { canonicalAgentSpec, resolveAgentFile } from '../../client/agent-id.js';
import { findTsAgents } from '../lsp/agents-ts.js';

export type AgentRef = { kind: 'js'; file: string; exportName: string | null; spec: string } | { kind: 'python'; target: string; spec: string };

export function parseAgentRef(spec: string, cwd = process.cwd()): AgentRef {
  const s = spec.trim();
  if (!s) throw new Error('no agent given: use path/to/agent.ts#exportName or python_module:function');
  const hash = s.lastIndexOf('#');
  const file = hash >= 0 ? s.slice(0, hash) : s;
  if (/\.py$/.test(file)) return { kind: 'python', target: `${resolveAgentFile(file, cwd)}:${hash >= 0 ? s.slice(hash + 1) : 'main'}`, spec: s };
  if (/\.(ts|mts|cts|js|mjs|cjs|tsx|jsx)$/.test(file)) {
    return { kind: 'js', file: resolveAgentFile(file, cwd), exportName: hash >= 0 && s.slice(hash + 1) ? s.slice(hash + 1) : null, spec: s };
  }
  const py = /^(.+\.py|[A-Za-z_][\w.]*):([A-Za-z_]\w*)$/.exec(s);
  if (py) return { kind: 'python', target: py[1].endsWith('.py') && !isAbsolute(py[1]) ? `${resolveAgentFile(py[1], cwd)}:${py[2]}` : s, spec: s };
  throw new Error(`cannot tell how to run agent '${spec}': use path/to/agent.ts#exportName (TypeScript/JavaScript) or python_module:function (Python)`);
}

/** The only agent a TS/JS file exports (what a reference without #exportName runs), or null. */
function onlyTsAgent(file: string): string | null {
  try {
    const agents = findTsAgents(file, readFileSync(file, 'utf8'));
    return agents.length === 1 ? agents[0]!.name : null;
  } catch {
    return null;
  }
}

/** The stable id to store for an agent reference as typed in `cwd` (unchanged when it names no file here). */
export function storedAgentId(spec: string, cwd = process.cwd()): string {
  return canonicalAgentSpec(spec, cwd, onlyTsAgent);
}

/**
 * The agent reference as typed in `cwd`, with its file made absolute: what a runner started anywhere runs for it (the
 * stored id, relative to the file's project root, names no folder when the file is outside any project).
 */
export function runnableAgentSpec(spec: string, cwd = process.cwd()): string {
  const ref = parseAgentRef(spec, cwd);
  return ref.kind === 'js' ? `${ref.file}${ref.exportName ? `#${ref.exportName}` : ''}` : ref.target;
}
