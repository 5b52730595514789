/**
 * Finding the agent code behind a call, for "jump to code": the file (absolute, or relative to the project
 * root of a workspace folder, as agent ids are (protocol/agent-id.ts), or to a workspace folder itself, as
 * older ids and code.filepath may be) and the line that defines a symbol.
 */
import { existsSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { projectRoot } from '../../client/agent-id.js';

export function findSourceFile(filepath: string, workspaceFolders: string[]): string {
  const candidates = isAbsolute(filepath) ? [filepath] : workspaceFolders.flatMap((f) => [join(projectRoot(f), filepath), join(f, filepath)]);
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error(`cannot open ${filepath}: not found${isAbsolute(filepath) ? '' : ' in the workspace folders'}`);
  return found;
}

/** The 0-based line defining `symbol` (function, const, class, Python def), or 0. */
export function definitionLine(text: string, symbol: string): number {
  const escaped = symbol.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const re = new RegExp(`^\\s*(export\\s+)?(default\\s+)?(async\\s+)?(function\\*?|const|let|var|class|def)\\s+${escaped}\\b`);
  const lines = text.split(/\r?\n/);
  const i = lines.findIndex((l) => re.test(l));
  return i < 0 ? 0 : i;
}
