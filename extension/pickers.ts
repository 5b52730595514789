/**
 * Quick picks shared by the commands: which agent (the one under the cursor, else a pick of every agent
 * the language server finds), which JSONL file, which line of it. Choices are remembered per agent in
 * workspaceState by the callers.
 */
import { readFile } from 'node:fs/promises';
import * as vscode from 'vscode';
import { COMMANDS } from '../protocol/commands.js';
import { agentAt, listAgents, type AgentInfo } from '../protocol/lsp.js';
import type { Ctx } from './ctx.js';

let lastTextEditor: vscode.TextEditor | undefined;

/**
 * Remembers the text editor that last had focus: when a webview (trajectory viewer, dashboard) has the
 * focus, `activeTextEditor` is undefined, yet "the agent under the cursor" should still mean the cursor the
 * user left in the code beside it.
 */
export function trackLastTextEditor(): vscode.Disposable {
  lastTextEditor = vscode.window.activeTextEditor;
  return vscode.window.onDidChangeActiveTextEditor((e) => {
    if (e) lastTextEditor = e;
  });
}

/** The focused text editor, else the last focused one while it is still visible. */
export function cursorEditor(): vscode.TextEditor | undefined {
  const active = vscode.window.activeTextEditor;
  if (active) return active;
  return lastTextEditor && vscode.window.visibleTextEditors.includes(lastTextEditor) ? lastTextEditor : undefined;
}

/** The agent for a command: the CodeLens argument, else the one under the cursor, else a quick pick. */
export async function resolveAgent(ctx: Ctx, arg: unknown, purpose: string): Promise<AgentInfo | undefined> {
  const lsp = ctx.lsp;
  if (!lsp) {
    void vscode.window.showErrorMessage('Agent Lightning: the language server is not running, so agents cannot be found. See the "Agent Lightning" output.');
    return undefined;
  }
  const all = (await lsp.sendRequest(listAgents, {})).agents;
  if (typeof arg === 'string' && arg)
    return (
      all.find((a) => a.id === arg) ?? {
        id: arg,
        name: arg.split(/[#:]/).pop() ?? arg,
        language: /\.py:/.test(arg) ? 'python' : 'typescript',
        uri: '',
        range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } },
      }
    );
  const editor = cursorEditor();
  if (editor) {
    const pos = editor.selection.active;
    const { agent } = await lsp.sendRequest(agentAt, { uri: editor.document.uri.toString(), position: { line: pos.line, character: pos.character } });
    if (agent) return agent;
  }
  if (all.length === 0) {
    const choice = await vscode.window.showWarningMessage(
      'Agent Lightning: no agent functions in this workspace. An agent is a function wrapped in rollout(...) (TypeScript/JavaScript) or decorated with @rollout (Python).',
      'Mark Function as Agent',
    );
    if (choice) void vscode.commands.executeCommand(COMMANDS.markAsAgent);
    return undefined;
  }
  if (all.length === 1) return all[0];
  const picked = await vscode.window.showQuickPick(
    all.map((a) => ({ label: a.name, description: a.id, agent: a })),
    { title: `Agent Lightning: which agent to ${purpose}?`, placeHolder: 'Agent functions in this workspace', ignoreFocusOut: true },
  );
  return picked?.agent;
}

/** JSONL files of the workspace, the remembered (or suggested) one first. */
export async function pickJsonlFile(title: string, remembered: string | undefined, rememberedWhy = 'last used'): Promise<string | undefined> {
  const files = await vscode.workspace.findFiles('**/*.jsonl', '{**/node_modules/**,**/.git/**,**/dist/**}', 500);
  const rel = (p: string) => vscode.workspace.asRelativePath(p);
  type Item = vscode.QuickPickItem & { path: string | 'browse' };
  const items: Item[] = [];
  if (remembered) items.push({ label: rel(remembered), description: rememberedWhy, path: remembered });
  for (const f of files.map((u) => u.fsPath).sort()) if (f !== remembered) items.push({ label: rel(f), path: f });
  items.push({ label: '$(folder-opened) Browse…', path: 'browse' });
  const picked = await vscode.window.showQuickPick(items, {
    title,
    placeHolder: 'A JSONL file: one task (a JSON object) per line',
    ignoreFocusOut: true,
    matchOnDescription: true,
  });
  if (!picked) return undefined;
  if (picked.path !== 'browse') return picked.path;
  const uris = await vscode.window.showOpenDialog({ canSelectMany: false, filters: { 'JSON Lines': ['jsonl'] }, title });
  return uris?.[0]?.fsPath;
}

/** Parses a JSONL file into tasks; a malformed line is an error naming the file and line. */
export async function readJsonl(path: string): Promise<unknown[]> {
  const text = await readFile(path, 'utf8');
  const tasks: unknown[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (!line.trim()) return;
    try {
      tasks.push(JSON.parse(line));
    } catch (err) {
      throw new Error(`${vscode.workspace.asRelativePath(path)} line ${i + 1} is not valid JSON (${(err as Error).message}): fix or remove that line`, {
        cause: err,
      });
    }
  });
  return tasks;
}

/** A line of a JSONL file, picked by its text. */
export async function pickJsonlLine(path: string): Promise<unknown | undefined> {
  const tasks = await readJsonl(path);
  if (tasks.length === 0) {
    void vscode.window.showWarningMessage(`Agent Lightning: ${vscode.workspace.asRelativePath(path)} has no tasks.`);
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    tasks.slice(0, 1000).map((t, i) => ({ label: JSON.stringify(t).slice(0, 200), description: `line ${i + 1}`, task: t })),
    { title: 'Agent Lightning: which task?', matchOnDescription: true, ignoreFocusOut: true },
  );
  return picked?.task;
}
