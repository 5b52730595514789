/**
 * The agent identity on disk (the rule and why: protocol/agent-id.ts): the one function that names an agent
 * found in a file (`agentIdentity`, used by the language server's finder, by `agl train` / `agl rollout` /
 * `agl runner` through `canonicalAgentSpec`, and so by the extension, the viewer and the dashboard, which only
 * pass ids on), and the way back from an id to its file for a runner started anywhere in the project.
 */
import { existsSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { formatAgentId, type AgentIdLanguage } from '../protocol/agent-id.js';

const MANIFESTS = ['package.json', 'pyproject.toml', 'setup.py'];

/**
 * The project root of a file or folder: the nearest folder at or above it holding `.git`, else the outermost
 * one holding a package manifest (never above the home folder, where a stray package.json is common), else
 * the folder itself.
 */
export function projectRoot(path: string): string {
  const start = resolve(path);
  const dir = existsSync(start) && statSync(start).isDirectory() ? start : dirname(start);
  const home = homedir();
  let outermostManifest: string | null = null;
  for (let d = dir; ; d = dirname(d)) {
    if (existsSync(join(d, '.git'))) return d;
    if (d !== home && MANIFESTS.some((m) => existsSync(join(d, m)))) outermostManifest = d;
    if (d === home || dirname(d) === d) break;
  }
  return outermostManifest ?? dir;
}

/** The id of agent `name` (export or function) defined in `filePath`. */
export function agentIdentity(filePath: string, name: string, language: AgentIdLanguage): string {
  const file = resolve(filePath);
  return formatAgentId(relative(projectRoot(file), file).split(sep).join('/'), name, language);
}

/**
 * The file an agent spec's path names, for a process working in `cwd`: an absolute path as is; a relative
 * one from the project root of `cwd` (how ids are written), else from `cwd` itself (ids written before that
 * rule, and paths typed in a terminal), whichever exists (the project root's first).
 */
export function resolveAgentFile(file: string, cwd = process.cwd()): string {
  if (isAbsolute(file)) return file;
  const fromRoot = resolve(projectRoot(cwd), file);
  if (existsSync(fromRoot)) return fromRoot;
  return resolve(cwd, file);
}

const JS_FILE = /\.(ts|mts|cts|tsx|js|mjs|cjs|jsx)$/;

/**
 * The id to record for an agent spec as typed (`agl rollout path/agent.ts#name`, `agl train ../x.py:fn`,
 * relative to `cwd` or the project root, or absolute): the stable id of the file it names. `onlyAgentOf` names
 * the export of a TS/JS spec that gives none (the file's only agent), when the caller can tell. Python module
 * specs (`pkg.module:function`) and specs naming no existing file are returned as given.
 */
export function canonicalAgentSpec(spec: string, cwd = process.cwd(), onlyAgentOf?: (file: string) => string | null): string {
  const s = spec.trim();
  const hash = s.lastIndexOf('#');
  const colon = s.lastIndexOf(':');
  let file: string, name: string | null, language: AgentIdLanguage;
  if (hash > 0 && (JS_FILE.test(s.slice(0, hash)) || /\.py$/.test(s.slice(0, hash)))) {
    file = s.slice(0, hash);
    name = s.slice(hash + 1) || null;
    language = /\.py$/.test(file) ? 'python' : 'typescript';
  } else if (colon > 0 && /\.py$/.test(s.slice(0, colon)) && !/^[A-Za-z]:[\\/][^:]*$/.test(s)) {
    file = s.slice(0, colon);
    name = s.slice(colon + 1) || null;
    language = 'python';
  } else if (JS_FILE.test(s)) {
    file = s;
    name = null;
    language = 'typescript';
  } else {
    return s;
  }
  const path = resolveAgentFile(file, cwd);
  if (!existsSync(path)) return s;
  name ??= language === 'python' ? 'main' : (onlyAgentOf?.(path) ?? null);
  if (name === null) return relative(projectRoot(path), path).split(sep).join('/');
  return agentIdentity(path, name, language);
}
