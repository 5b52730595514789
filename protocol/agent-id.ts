/**
 * An agent's identity: the id the store, the runner, the CodeLens, the viewer and the dashboard use for one
 * agent function, whatever folder is open in the editor and wherever `agl` was started.
 *
 * The id is the agent file's path relative to its PROJECT ROOT, with forward slashes, then the function:
 * `samples/calc/agent.ts#calcAgent` (TS/JS export), `agents/triage.py:triage` (Python function). The project
 * root of a file (client/agent-id.ts projectRoot) is the nearest folder above it holding `.git` (a repository,
 * worktree or submodule), else the outermost folder above it holding a package manifest (package.json,
 * pyproject.toml, setup.py), else the file's own folder. Why that root:
 * - the folder opened in the editor and the working directory of `agl` vary (the issue behind this: with
 *   `samples/` open the lens looked up `calc/agent.ts#calcAgent` while `agl train` from the repository root had
 *   recorded `samples/calc/agent.ts#calcAgent`); the repository does not: every clone and worktree names the
 *   file the same, and it is how a reader names a file of a repository anyway;
 * - the nearest package.json would give `calc/agent.ts` for every member of a monorepo's workspace (two
 *   packages' `src/agent.ts#agent` would be one agent), so without git the outermost manifest is taken: in the
 *   usual layout that is the repository's top folder, the same root git gives;
 * - it stays resolvable: a runner started anywhere inside the project finds the file from its own root
 *   (client/agent-id.ts resolveAgentFile), which an absolute path or a package name would not give across machines.
 * Python agents named by module (`pkg.module:function`, no file) keep that name: it is already stable.
 *
 * Stores written before this rule hold ids relative to whatever folder was current then: a suffix of the
 * stable id (`calc/agent.ts#calcAgent`, from inside `samples/`) or the stable id under a longer prefix
 * (`main/samples/calc/agent.ts#calcAgent`, `../main/...`, an absolute path). `sameAgent` says when two ids name
 * the same agent that way; the stores match every stored form of an agent on read (agentAliasesIn).
 *
 * Pure string code (no node:path): the webviews import it too.
 */

export type AgentIdLanguage = 'typescript' | 'javascript' | 'python';

/** The id of function `name` in the file at `relativePath` (already relative to the project root, any separators). */
export function formatAgentId(relativePath: string, name: string, language: AgentIdLanguage): string {
  const path = relativePath.split('\\').join('/');
  return language === 'python' ? `${path}:${name}` : `${path}#${name}`;
}

/** Splits an agent id into its file (as written) and function/export name ("default" when the id names none). */
export function parseAgentId(id: string): { file: string; name: string } {
  const hash = id.lastIndexOf('#');
  if (hash > 0) return { file: id.slice(0, hash), name: id.slice(hash + 1) };
  const colon = id.lastIndexOf(':');
  if (colon > 0 && /\.py$/.test(id.slice(0, colon))) return { file: id.slice(0, colon), name: id.slice(colon + 1) };
  return { file: id, name: 'default' };
}

/**
 * An agent as a narrow column names it: its function before its file's name (`calcAgent · agent.ts`), so two agents
 * of files named alike (samples/calc/agent.ts, samples/apo/agent.ts) read apart even when the column cuts the end.
 */
export function agentShortName(id: string): string {
  const { file, name } = parseAgentId(id);
  const fileName = file.split(/[\\/]/).pop() || file;
  return file === id ? fileName : `${name} · ${fileName}`;
}

/** Path segments of an id's file without `.`, `..` and empty ones (`../main/./samples` -> main, samples). */
function segments(file: string): string[] {
  return file.split(/[\\/]/).filter((s) => s !== '' && s !== '.' && s !== '..');
}

/** Does the id name a source file (TS/JS/Python) rather than a Python module? Only those have other forms. */
function namesFile(id: string): boolean {
  return /\.(ts|mts|cts|tsx|js|mjs|cjs|jsx|py)$/.test(parseAgentId(id).file);
}

/**
 * Do `a` and `b` name the same agent: equal, or the same function in files whose paths end alike, one path
 * being the other's tail on a folder boundary (a form written relative to another folder of the same project).
 * `x/agent.ts#a` and `agent.ts#a` do; `x/agent.ts#a` and `y/agent.ts#a`, or `..#a` and `..#b`, do not.
 */
export function sameAgent(a: string, b: string): boolean {
  if (a === b) return true;
  if (!namesFile(a) || !namesFile(b)) return false;
  const pa = parseAgentId(a),
    pb = parseAgentId(b);
  if (pa.name !== pb.name || a.includes('#') !== b.includes('#')) return false;
  const sa = segments(pa.file),
    sb = segments(pb.file);
  const [short, long] = sa.length <= sb.length ? [sa, sb] : [sb, sa];
  if (short.length === 0) return false;
  const tail = long.slice(long.length - short.length);
  return tail.every((s, i) => s === short[i]);
}

/** The stored agent names among `stored` that are forms of `agent` (and `agent` itself, stored or not). */
export function agentAliasesIn(stored: Iterable<string>, agent: string): string[] {
  const out = new Set<string>([agent]);
  for (const name of stored) if (sameAgent(name, agent)) out.add(name);
  return [...out];
}
