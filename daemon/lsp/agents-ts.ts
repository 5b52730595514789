/**
 * Finds agent functions in TypeScript / JavaScript with the TypeScript compiler API (syntax only, no
 * program): exported values built by `rollout(...)` imported from our SDK, e.g.
 *   export const calcAgent = rollout(async (task, llm) => { ... });
 *   const agent = sdk.rollout(fn); export { agent as default };
 *   exports.calcAgent = rollout(fn)            (CommonJS)
 * A `rollout` not imported from the SDK (a local helper of the same name) is not an agent.
 */
import ts from 'typescript';

export interface FoundAgent {
  /** Export name: what `file#name` refers to ("default" for a default export). */
  name: string;
  /** 0-based line/character span of the statement that declares it (where the CodeLens goes). */
  start: { line: number; character: number };
  end: { line: number; character: number };
}

/** Module specifiers that are our SDK: the package (agent-lightning*), or a relative path into an sdk folder / sdk bundle. */
export function isSdkModule(specifier: string): boolean {
  if (/^(@agent-lightning\/|agent-?lightning)/.test(specifier)) return true;
  if (!specifier.startsWith('.') && !specifier.startsWith('/')) return false;
  return specifier.split('/').some((segment) => /^sdk(\.m?[jt]s)?$/.test(segment));
}

export function scriptKindFor(fileName: string): ts.ScriptKind {
  if (/\.tsx$/.test(fileName)) return ts.ScriptKind.TSX;
  if (/\.jsx$/.test(fileName)) return ts.ScriptKind.JSX;
  if (/\.[cm]?js$/.test(fileName)) return ts.ScriptKind.JS;
  return ts.ScriptKind.TS;
}

export function parseTs(fileName: string, text: string): ts.SourceFile {
  return ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, scriptKindFor(fileName));
}

/** Local names bound to the SDK's `rollout` and to SDK namespaces (`import * as agl`, `const agl = require(...)`). */
function sdkBindings(sf: ts.SourceFile): { rolloutNames: Set<string>; namespaces: Set<string> } {
  const rolloutNames = new Set<string>();
  const namespaces = new Set<string>();
  for (const st of sf.statements) {
    if (ts.isImportDeclaration(st) && ts.isStringLiteral(st.moduleSpecifier) && isSdkModule(st.moduleSpecifier.text)) {
      const clause = st.importClause;
      const bindings = clause?.namedBindings;
      if (bindings && ts.isNamespaceImport(bindings)) namespaces.add(bindings.name.text);
      if (bindings && ts.isNamedImports(bindings)) {
        for (const el of bindings.elements) if ((el.propertyName ?? el.name).text === 'rollout') rolloutNames.add(el.name.text);
      }
      if (clause?.name) namespaces.add(clause.name.text);
    }
    if (ts.isVariableStatement(st)) {
      for (const d of st.declarationList.declarations) {
        const init = d.initializer;
        if (!init || !ts.isCallExpression(init) || !ts.isIdentifier(init.expression) || init.expression.text !== 'require') continue;
        const arg = init.arguments[0];
        if (!arg || !ts.isStringLiteral(arg) || !isSdkModule(arg.text)) continue;
        if (ts.isIdentifier(d.name)) namespaces.add(d.name.text);
        if (ts.isObjectBindingPattern(d.name)) {
          for (const el of d.name.elements) {
            const prop = el.propertyName && ts.isIdentifier(el.propertyName) ? el.propertyName.text : ts.isIdentifier(el.name) ? el.name.text : '';
            if (prop === 'rollout' && ts.isIdentifier(el.name)) rolloutNames.add(el.name.text);
          }
        }
      }
    }
  }
  return { rolloutNames, namespaces };
}

/** Is `expr` a call of the SDK's rollout (possibly through `satisfies`/`as`/parentheses)? */
function isRolloutCall(expr: ts.Expression | undefined, b: ReturnType<typeof sdkBindings>): boolean {
  while (expr && (ts.isParenthesizedExpression(expr) || ts.isAsExpression(expr) || ts.isSatisfiesExpression(expr))) expr = expr.expression;
  if (!expr || !ts.isCallExpression(expr)) return false;
  const callee = expr.expression;
  if (ts.isIdentifier(callee)) return b.rolloutNames.has(callee.text);
  return (
    ts.isPropertyAccessExpression(callee) && callee.name.text === 'rollout' && ts.isIdentifier(callee.expression) && b.namespaces.has(callee.expression.text)
  );
}

function hasModifier(node: ts.Node, kind: ts.SyntaxKind): boolean {
  return ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === kind);
}

/** Finds the exported agents of one TS/JS file. */
export function findTsAgents(fileName: string, text: string): FoundAgent[] {
  const sf = parseTs(fileName, text);
  const b = sdkBindings(sf);
  if (b.rolloutNames.size === 0 && b.namespaces.size === 0) return [];
  const at = (node: ts.Node) => {
    const s = sf.getLineAndCharacterOfPosition(node.getStart(sf));
    const e = sf.getLineAndCharacterOfPosition(node.getEnd());
    return { start: { line: s.line, character: s.character }, end: { line: e.line, character: e.character } };
  };
  // Top-level `const x = rollout(...)`, exported or not; exported ones are agents right away.
  const declared = new Map<string, ts.Node>();
  const agents: FoundAgent[] = [];
  const exportedLater: Array<{ local: string; exported: string }> = [];
  for (const st of sf.statements) {
    if (ts.isVariableStatement(st)) {
      const exported = hasModifier(st, ts.SyntaxKind.ExportKeyword);
      for (const d of st.declarationList.declarations) {
        if (!ts.isIdentifier(d.name) || !isRolloutCall(d.initializer, b)) continue;
        if (exported) agents.push({ name: d.name.text, ...at(st) });
        else declared.set(d.name.text, st);
      }
    } else if (ts.isExportAssignment(st) && !st.isExportEquals && isRolloutCall(st.expression, b)) {
      agents.push({ name: 'default', ...at(st) });
    } else if (ts.isExportAssignment(st) && !st.isExportEquals && ts.isIdentifier(st.expression)) {
      exportedLater.push({ local: st.expression.text, exported: 'default' });
    } else if (ts.isExportDeclaration(st) && !st.moduleSpecifier && st.exportClause && ts.isNamedExports(st.exportClause)) {
      for (const el of st.exportClause.elements) exportedLater.push({ local: (el.propertyName ?? el.name).getText(sf), exported: el.name.getText(sf) });
    } else if (ts.isExpressionStatement(st) && ts.isBinaryExpression(st.expression) && st.expression.operatorToken.kind === ts.SyntaxKind.EqualsToken) {
      // CommonJS: exports.x = rollout(...), module.exports.x = rollout(...), module.exports = rollout(...)
      const target = st.expression.left.getText(sf);
      const m = /^(?:module\.)?exports\.([A-Za-z_$][\w$]*)$/.exec(target);
      if (m && isRolloutCall(st.expression.right, b)) agents.push({ name: m[1]!, ...at(st) });
      else if (target === 'module.exports' && isRolloutCall(st.expression.right, b)) agents.push({ name: 'default', ...at(st) });
    }
  }
  for (const { local, exported } of exportedLater) {
    const node = declared.get(local);
    if (node) agents.push({ name: exported, ...at(node) });
  }
  return agents.sort((x, y) => x.start.line - y.start.line);
}
