/**
 * Finds the prompts a Python agent reads, with tree-sitter (the parser agents-py.ts loads): calls
 *   llm.prompt("system", "You are ...", vars)          llm.prompt("planner", {"file": "prompts/planner.md"})
 *   llm.prompt(name="system", seed="...")
 * whose name is a string literal (no f-string) and which have a seed. The receiver is a value named `llm`, or a
 * parameter of the function the call is in (an agent's `def solve(task, model)`): `click.prompt("name", "x")` is not
 * taken for one.
 */
import type { Node } from 'web-tree-sitter';
import { PROMPT_NAME_PATTERN } from '../../protocol/prompt-template.js';
import { parameterName, readPython } from './agents-py.js';
import type { FoundPrompt } from './prompts-ts.js';

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '0': '\0', '\\': '\\', "'": "'", '"': '"', '\n': '' };

/** An escape sequence's character (`\n`, `\x41`, `\u00e9`), or the sequence itself when it is none Python knows. */
function unescape(seq: string): string {
  const hex = /^\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8}))$/.exec(seq);
  if (hex) return String.fromCodePoint(parseInt(hex[1] ?? hex[2] ?? hex[3]!, 16));
  return ESCAPES[seq.slice(1)] ?? seq;
}

/** A string literal's value (plain, raw, triple-quoted, or adjacent literals joined), else null (an f-string, not a string). */
export function pyStringValue(node: Node | null | undefined): string | null {
  if (!node) return null;
  if (node.type === 'concatenated_string') {
    const parts = node.namedChildren.map((c) => pyStringValue(c));
    return parts.every((p) => p !== null) ? parts.join('') : null;
  }
  if (node.type !== 'string') return null;
  const prefix = /^[a-zA-Z]*/.exec(node.namedChildren[0]?.text ?? '')![0].toLowerCase();
  if (prefix.includes('f') || prefix.includes('b')) return null;
  let out = '';
  for (const part of node.namedChildren) {
    if (!part || part.type !== 'string_content') continue;
    out += prefix.includes('r') ? part.text : part.text.replace(/\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[\s\S])/g, unescape);
  }
  return out;
}

/** The seed argument as written: a string's value, `{"file": "..."}`'s path, else null (computed). */
function seedOf(node: Node | null | undefined): FoundPrompt['seed'] {
  const text = pyStringValue(node);
  if (text !== null) return { text };
  if (node?.type !== 'dictionary') return null;
  for (const pair of node.namedChildren) {
    if (pair?.type === 'pair' && pyStringValue(pair.childForFieldName('key')) === 'file') {
      const file = pyStringValue(pair.childForFieldName('value'));
      if (file !== null) return { file };
    }
  }
  return null;
}

/** The parameter names of the innermost function around `node` (none at module level). */
function enclosingParameters(node: Node): string[] {
  for (let n = node.parent; n; n = n.parent) {
    if (n.type === 'function_definition') {
      return (n.childForFieldName('parameters')?.namedChildren ?? []).map((p) => (p ? parameterName(p) : null)).filter((p): p is string => p !== null);
    }
  }
  return [];
}

/** The name and seed arguments of a call, positional or by keyword. */
function nameAndSeed(args: Node): { name: Node | null; seed: Node | null } {
  const positional = args.namedChildren.filter((a): a is Node => !!a && a.type !== 'keyword_argument' && a.type !== 'comment');
  const keyword = (k: string) =>
    args.namedChildren.find((a) => a?.type === 'keyword_argument' && a.childForFieldName('name')?.text === k)?.childForFieldName('value') ?? null;
  return { name: positional[0] ?? keyword('name'), seed: positional[1] ?? keyword('seed') };
}

/** The `llm.prompt(name, seed, ...)` calls under `root`, in source order. */
export function findPyPromptsInTree(root: Node): FoundPrompt[] {
  const out: FoundPrompt[] = [];
  for (const call of root.descendantsOfType('call')) {
    const fn = call?.childForFieldName('function');
    const args = call?.childForFieldName('arguments');
    if (!call || fn?.type !== 'attribute' || fn.childForFieldName('attribute')?.text !== 'prompt' || args?.type !== 'argument_list') continue;
    const receiver = fn.childForFieldName('object');
    if (receiver?.type !== 'identifier' || (receiver.text !== 'llm' && !enclosingParameters(call).includes(receiver.text))) continue;
    const { name: nameNode, seed } = nameAndSeed(args);
    const name = pyStringValue(nameNode);
    if (name === null || !PROMPT_NAME_PATTERN.test(name) || !seed) continue;
    out.push({
      name,
      seed: seedOf(seed),
      start: { line: call.startPosition.row, character: call.startPosition.column },
      end: { line: call.endPosition.row, character: call.endPosition.column },
    });
  }
  return out.sort((a, b) => a.start.line - b.start.line || a.start.character - b.start.character);
}

export const findPyPrompts = (text: string): Promise<FoundPrompt[]> => readPython(text, findPyPromptsInTree);
