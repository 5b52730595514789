/**
 * Finds agent functions in Python with tree-sitter (web-tree-sitter + the tree-sitter-python grammar as
 * wasm): module-level functions, sync or async, decorated with `@rollout`, `@rollout(...)`, `@agl.rollout` or
 * `@agl.rollout(...)`, or undecorated with the runner's signature `def name(task, llm)` (the decorator is
 * optional: the runner calls any `module:function(task, llm)`). A function under another decorator is not
 * taken on its signature alone: that decorator may change how it is called.
 */
import { createRequire } from 'node:module';
import { Language, Parser, type Node } from 'web-tree-sitter';
import type { FoundAgent } from './agents-ts.js';

let parserPromise: Promise<Parser> | null = null;

/** The grammar's wasm file, shipped inside the tree-sitter-python package. */
export function pythonGrammarPath(): string {
  return createRequire(import.meta.url).resolve('tree-sitter-python/tree-sitter-python.wasm');
}

/** One parser for the process: loading the runtime and grammar takes ~50 ms, parsing a file well under 1 ms. */
export function pythonParser(): Promise<Parser> {
  parserPromise ??= (async () => {
    await Parser.init();
    const language = await Language.load(pythonGrammarPath());
    const parser = new Parser();
    parser.setLanguage(language);
    return parser;
  })();
  return parserPromise;
}

/** Is this decorator node `rollout`, `x.rollout`, or a call of either? */
function isRolloutDecorator(decorator: Node): boolean {
  let expr: Node | null = decorator.namedChildren[0] ?? null;
  if (expr?.type === 'call') expr = expr.childForFieldName('function');
  if (!expr) return false;
  if (expr.type === 'identifier') return expr.text === 'rollout';
  if (expr.type === 'attribute') return expr.childForFieldName('attribute')?.text === 'rollout';
  return false;
}

/** A parameter's name (`task`, `task: dict`, `llm=None`, `llm: LLM = None`), or null for `*a`, `**kw`, `/`, `*`. */
export function parameterName(p: Node): string | null {
  if (p.type === 'identifier') return p.text;
  if (p.type === 'typed_parameter') return p.namedChildren[0]?.type === 'identifier' ? p.namedChildren[0].text : null;
  if (p.type === 'default_parameter' || p.type === 'typed_default_parameter') return p.childForFieldName('name')?.text ?? null;
  return null;
}

/** `def f(task, llm)`, maybe typed, any later parameter optional: what the runner calls with (task, llm). */
function takesTaskAndLlm(def: Node): boolean {
  const params = (def.childForFieldName('parameters')?.namedChildren ?? []).filter((p): p is Node => !!p);
  if (params.length < 2 || parameterName(params[0]!) !== 'task' || parameterName(params[1]!) !== 'llm') return false;
  return params.slice(2).every((p) => p.type !== 'identifier' && p.type !== 'typed_parameter');
}

/** The function a module-level statement defines as an agent, and the node its lens covers; or null. */
function agentDefinition(node: Node): { def: Node; span: Node } | null {
  if (node.type === 'function_definition') return takesTaskAndLlm(node) ? { def: node, span: node } : null;
  if (node.type !== 'decorated_definition') return null;
  const def = node.childForFieldName('definition');
  if (def?.type !== 'function_definition') return null;
  const decorators = node.namedChildren.filter((c): c is Node => c?.type === 'decorator');
  return decorators.some(isRolloutDecorator) ? { def, span: node } : null;
}

/** Parses a tree once and walks module-level definitions. */
export function findPyAgentsInTree(root: Node): FoundAgent[] {
  const agents: FoundAgent[] = [];
  for (const statement of root.namedChildren) {
    const found = statement && agentDefinition(statement);
    if (!found) continue;
    const { def, span: node } = found;
    const name = def.childForFieldName('name')?.text;
    if (!name) continue;
    agents.push({
      name,
      start: { line: node.startPosition.row, character: node.startPosition.column },
      end: { line: node.endPosition.row, character: node.endPosition.column },
    });
  }
  return agents;
}

/** What `read` finds in the syntax tree of a Python source (the tree is freed after). */
export async function readPython<T>(text: string, read: (root: Node) => T): Promise<T> {
  const parser = await pythonParser();
  const tree = parser.parse(text);
  if (!tree) throw new Error('tree-sitter returned no tree for a Python file');
  try {
    return read(tree.rootNode);
  } finally {
    tree.delete();
  }
}

export const findPyAgents = (text: string): Promise<FoundAgent[]> => readPython(text, findPyAgentsInTree);
