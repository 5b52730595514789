/**
 * "Mark Function as Agent": the edits that turn the top-level function under the cursor into an agent.
 * TS/JS: `export async function f(task, llm) {...}` becomes `export const f = rollout(async function f(task, llm) {...});`
 * and `const f = async (task, llm) => ...` becomes `export const f = rollout(async (task, llm) => ...)`;
 * Python: `@rollout` goes above the `def`. The SDK import is added when missing.
 * Edits are computed against the original text (LSP TextEdit semantics: non-overlapping, same base).
 */
import ts from 'typescript';
import type { Node } from 'web-tree-sitter';
import type { TextEditLike } from '../../protocol/lsp.js';
import { pythonParser } from './agents-py.js';
import { findTsAgents, isSdkModule, parseTs } from './agents-ts.js';

type Pos = { line: number; character: number };
export type MarkResult = { edits: TextEditLike[]; name: string } | { error: string };

export interface MarkOptions {
  /** Module to import `rollout` from in TS/JS when the file has no SDK import yet. */
  tsSdkModule: string;
  /** Python module that provides the `rollout` decorator. */
  pythonSdkModule: string;
}
export const DEFAULT_MARK_OPTIONS: MarkOptions = { tsSdkModule: 'agent-lightning-vscode/sdk', pythonSdkModule: 'agl_runner' };

/**
 * The Python import of the marker. The runner provides its helper module (sdk/python/agl_runner.py) on
 * the path; run elsewhere the agent must still work, so a missing module or name falls back to a no-op.
 */
export function pythonRolloutImport(module: string): string {
  return `try:\n    from ${module} import rollout  # marks Agent Lightning agents\nexcept ImportError:  # not run by Agent Lightning's runner\n    def rollout(fn):\n        return fn\n`;
}

const NOT_A_FUNCTION =
  'Put the cursor inside a top-level function (a function declaration, or a const assigned an arrow or function expression), then run "Mark Function as Agent" again.';

function insert(pos: Pos, newText: string): TextEditLike {
  return { range: { start: pos, end: pos }, newText };
}

export function markTsAgent(fileName: string, text: string, position: Pos, opts: MarkOptions = DEFAULT_MARK_OPTIONS): MarkResult {
  const sf = parseTs(fileName, text);
  const offset = sf.getPositionOfLineAndCharacter(position.line, Math.min(position.character, lineLength(text, position.line)));
  const posOf = (o: number): Pos => sf.getLineAndCharacterOfPosition(o);
  const existing = findTsAgents(fileName, text).find((a) => a.start.line <= position.line && position.line <= a.end.line);
  if (existing) return { error: `'${existing.name}' is already an agent (it is built by rollout(...)).` };
  const st = sf.statements.find((s) => s.getStart(sf) <= offset && offset <= s.getEnd());
  if (!st) return { error: NOT_A_FUNCTION };
  const mods = ts.canHaveModifiers(st) ? (ts.getModifiers(st) ?? []) : [];
  const isExported = mods.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
  const isDefault = mods.some((m) => m.kind === ts.SyntaxKind.DefaultKeyword);
  const edits: TextEditLike[] = [];
  let name: string;
  if (ts.isFunctionDeclaration(st) && st.body) {
    // Keep `async`, drop `export`/`default` (they move onto the new declaration).
    const kept = mods.filter((m) => m.kind !== ts.SyntaxKind.ExportKeyword && m.kind !== ts.SyntaxKind.DefaultKeyword);
    const fnStart = kept[0]?.getStart(sf) ?? skipModifiers(st, sf);
    const fnText = text.slice(fnStart, st.getEnd());
    name = st.name?.text ?? 'default';
    const head = isDefault ? 'export default ' : `export const ${name} = `;
    edits.push({ range: { start: posOf(st.getStart(sf)), end: posOf(st.getEnd()) }, newText: `${head}rollout(${fnText});` });
  } else if (ts.isVariableStatement(st) && st.declarationList.declarations.length === 1) {
    const d = st.declarationList.declarations[0]!;
    const init = d.initializer;
    if (!ts.isIdentifier(d.name) || !init || !(ts.isArrowFunction(init) || ts.isFunctionExpression(init))) return { error: NOT_A_FUNCTION };
    name = d.name.text;
    if (!isExported) edits.push(insert(posOf(st.getStart(sf)), 'export '));
    edits.push(insert(posOf(init.getStart(sf)), 'rollout('));
    edits.push(insert(posOf(init.getEnd()), ')'));
  } else {
    return { error: NOT_A_FUNCTION };
  }
  const importEdit = tsImportEdit(sf, text, opts.tsSdkModule);
  if (importEdit) {
    // An import inserted where an edit starts goes into that edit: two edits at one position apply in no guaranteed order.
    const same = edits.find((e) => e.range.start.line === importEdit.range.start.line && e.range.start.character === importEdit.range.start.character);
    if (same) same.newText = importEdit.newText + same.newText;
    else edits.unshift(importEdit);
  }
  return { edits, name };
}

function lineLength(text: string, line: number): number {
  return (text.split('\n')[line] ?? '').length;
}

function skipModifiers(st: ts.FunctionDeclaration, sf: ts.SourceFile): number {
  const mods = ts.getModifiers(st) ?? [];
  const last = mods[mods.length - 1];
  if (!last) return st.getStart(sf);
  let o = last.getEnd();
  while (/\s/.test(sf.text[o] ?? '')) o++;
  return o;
}

/** Adds `rollout` to an existing SDK import, or a new import line after the last import; null when already imported. */
function tsImportEdit(sf: ts.SourceFile, text: string, sdkModule: string): TextEditLike | null {
  let lastImportEnd = -1;
  for (const st of sf.statements) {
    if (!ts.isImportDeclaration(st)) continue;
    lastImportEnd = st.getEnd();
    if (!ts.isStringLiteral(st.moduleSpecifier) || !isSdkModule(st.moduleSpecifier.text)) continue;
    const b = st.importClause?.namedBindings;
    if (b && ts.isNamespaceImport(b)) continue;
    if (b && ts.isNamedImports(b)) {
      if (b.elements.some((e) => (e.propertyName ?? e.name).text === 'rollout')) return null;
      const brace = b.getStart(sf) + 1;
      return insert(sf.getLineAndCharacterOfPosition(brace), ' rollout,');
    }
  }
  const line = `import { rollout } from '${sdkModule}';\n`;
  if (lastImportEnd < 0) return insert(firstCodeLine(text), line);
  const p = sf.getLineAndCharacterOfPosition(lastImportEnd);
  return insert({ line: p.line + 1, character: 0 }, line);
}

/** After a shebang and a leading comment block (a file's purpose comment stays first). */
function firstCodeLine(text: string): Pos {
  const lines = text.split('\n');
  let i = 0;
  if (lines[0]?.startsWith('#!')) i++;
  let inBlock = false;
  for (; i < lines.length; i++) {
    const l = lines[i]!.trim();
    if (inBlock) {
      if (l.includes('*/')) inBlock = false;
      continue;
    }
    if (l.startsWith('/*')) {
      inBlock = !l.includes('*/');
      continue;
    }
    if (l.startsWith('//') || l === '' || l.startsWith('#') || /^("""|''')/.test(l)) continue;
    break;
  }
  return { line: i, character: 0 };
}

export async function markPyAgent(text: string, position: Pos, opts: MarkOptions = DEFAULT_MARK_OPTIONS): Promise<MarkResult> {
  const parser = await pythonParser();
  const tree = parser.parse(text);
  if (!tree) return { error: 'Could not parse this Python file.' };
  try {
    const root = tree.rootNode;
    const top = root.namedChildren.find((n): n is Node => !!n && n.startPosition.row <= position.line && position.line <= n.endPosition.row);
    const def = top?.type === 'function_definition' ? top : top?.type === 'decorated_definition' ? top.childForFieldName('definition') : null;
    if (!top || def?.type !== 'function_definition') {
      return { error: 'Put the cursor inside a module-level Python function (def or async def), then run "Mark Function as Agent" again.' };
    }
    const name = def.childForFieldName('name')?.text ?? '';
    if (top.type === 'decorated_definition' && top.namedChildren.some((c) => c?.type === 'decorator' && /^@\s*([\w.]+\.)?rollout\b/.test(c.text))) {
      return { error: `'${name}' is already an agent (it has @rollout).` };
    }
    const edits: TextEditLike[] = [
      insert({ line: def.startPosition.row, character: def.startPosition.column }, `@rollout\n${' '.repeat(def.startPosition.column)}`),
    ];
    const imported = root.namedChildren.some(
      (n) =>
        (n?.type === 'import_from_statement' && /\bimport\b[\s\S]*\brollout\b/.test(n.text)) ||
        (n?.type === 'try_statement' && /\bimport\b[^\n]*\brollout\b/.test(n.text)) ||
        (n?.type === 'function_definition' && n.childForFieldName('name')?.text === 'rollout'),
    );
    if (!imported) {
      const imports = root.namedChildren.filter(
        (n): n is Node => !!n && (n.type === 'import_statement' || n.type === 'import_from_statement' || n.type === 'future_import_statement'),
      );
      const at = imports.length > 0 ? { line: imports[imports.length - 1]!.endPosition.row + 1, character: 0 } : afterPyPreamble(root);
      edits.unshift(insert(at, pythonRolloutImport(opts.pythonSdkModule)));
    }
    return { edits, name };
  } finally {
    tree.delete();
  }
}

/** The line after leading comments and the module docstring. */
function afterPyPreamble(root: Node): Pos {
  let line = 0;
  for (const n of root.namedChildren) {
    if (!n) continue;
    const isDocstring = n.type === 'expression_statement' && n.namedChildren[0]?.type === 'string';
    if (n.type !== 'comment' && !isDocstring) break;
    line = n.endPosition.row + 1;
    if (isDocstring) break;
  }
  return { line, character: 0 };
}
