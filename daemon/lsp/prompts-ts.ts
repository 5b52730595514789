/**
 * Finds the prompts a TypeScript / JavaScript agent reads, with the TypeScript compiler API (syntax only): calls
 *   llm.prompt('system', 'You are ...', vars?)        llm.prompt('planner', { file: 'prompts/planner.md' })
 * whose first argument is a prompt name as a string literal and which have a seed. The receiver is the agent's LLM
 * (any name) in a file that imports the SDK, or a value named `llm` (a helper file that imports nothing): another
 * library's `.prompt(text, default)` (readline, inquirer) is not taken for one.
 */
import ts from 'typescript';
import { PROMPT_NAME_PATTERN } from '../../protocol/prompt-template.js';
import { isSdkModule, parseTs } from './agents-ts.js';

/** A prompt call as found, before it is given its agent. */
export interface FoundPrompt {
  name: string;
  seed: { text: string } | { file: string } | null;
  start: { line: number; character: number };
  end: { line: number; character: number };
}

/** Does the file import (or require) anything from our SDK? */
function importsSdk(sf: ts.SourceFile): boolean {
  let found = false;
  const visit = (node: ts.Node): void => {
    if (found) return;
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && isSdkModule(node.moduleSpecifier.text)) found = true;
    else if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'require') {
      const arg = node.arguments[0];
      if (arg && ts.isStringLiteral(arg) && isSdkModule(arg.text)) found = true;
    } else ts.forEachChild(node, visit);
  };
  for (const st of sf.statements) visit(st);
  return found;
}

/** A string literal's text (quotes or backticks without substitutions), else null. */
function literalText(node: ts.Expression | undefined): string | null {
  return node && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) ? node.text : null;
}

/** The seed argument as written: a literal's text, `{ file: '...' }`'s path, else null (computed). */
function seedOf(node: ts.Expression | undefined): FoundPrompt['seed'] {
  const text = literalText(node);
  if (text !== null) return { text };
  if (!node || !ts.isObjectLiteralExpression(node)) return null;
  for (const p of node.properties) {
    if (!ts.isPropertyAssignment(p)) continue;
    const key = ts.isIdentifier(p.name) || ts.isStringLiteral(p.name) ? p.name.text : null;
    const file = key === 'file' ? literalText(p.initializer) : null;
    if (file !== null) return { file };
  }
  return null;
}

/** The `llm.prompt(name, seed, ...)` calls of one TS/JS file, in source order. */
export function findTsPrompts(fileName: string, text: string): FoundPrompt[] {
  if (!text.includes('.prompt')) return [];
  const sf = parseTs(fileName, text);
  const sdk = importsSdk(sf);
  const out: FoundPrompt[] = [];
  const at = (n: ts.Node) => {
    const s = sf.getLineAndCharacterOfPosition(n.getStart(sf));
    const e = sf.getLineAndCharacterOfPosition(n.getEnd());
    return { start: { line: s.line, character: s.character }, end: { line: e.line, character: e.character } };
  };
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === 'prompt') {
      const receiver = node.expression.expression;
      const name = literalText(node.arguments[0]);
      const llmNamed = ts.isIdentifier(receiver) && receiver.text === 'llm';
      if (name !== null && PROMPT_NAME_PATTERN.test(name) && node.arguments.length >= 2 && (sdk || llmNamed)) {
        out.push({ name, seed: seedOf(node.arguments[1]), ...at(node) });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}
