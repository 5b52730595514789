/**
 * Parses an agent reference: `path/to/file.ts#exportName` (TS/JS, exportName defaults to the only
 * rollout() export), or Python's `package.module:function` / `path/to/file.py:function`.
 */
import { isAbsolute, resolve } from 'node:path';

export type AgentRef =
  | { kind: 'js'; file: string; exportName: string | null; spec: string }
  | { kind: 'python'; target: string; spec: string };

export function parseAgentRef(spec: string, cwd = process.cwd()): AgentRef {
  const s = spec.trim();
  if (!s) throw new Error('no agent given: use path/to/agent.ts#exportName or python_module:function');
  const hash = s.lastIndexOf('#');
  const file = hash >= 0 ? s.slice(0, hash) : s;
  if (/\.py$/.test(file)) return { kind: 'python', target: `${isAbsolute(file) ? file : resolve(cwd, file)}:${hash >= 0 ? s.slice(hash + 1) : 'main'}`, spec: s };
  if (/\.(ts|mts|cts|js|mjs|cjs|tsx|jsx)$/.test(file)) {
    return { kind: 'js', file: isAbsolute(file) ? file : resolve(cwd, file), exportName: hash >= 0 && s.slice(hash + 1) ? s.slice(hash + 1) : null, spec: s };
  }
  const py = /^(.+\.py|[A-Za-z_][\w.]*):([A-Za-z_]\w*)$/.exec(s);
  if (py) return { kind: 'python', target: py[1].endsWith('.py') && !isAbsolute(py[1]) ? `${resolve(cwd, py[1])}:${py[2]}` : s, spec: s };
  throw new Error(`cannot tell how to run agent '${spec}': use path/to/agent.ts#exportName (TypeScript/JavaScript) or python_module:function (Python)`);
}
