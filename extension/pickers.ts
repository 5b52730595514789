/**
 * Quick picks shared by the commands: which agent (the one under the cursor, else a pick with the open file's
 * agents first: agent-choice.ts), which JSONL file, which line of it. Choices are remembered per agent in
 * workspaceState by the callers.
 */
import { readFile } from 'node:fs/promises';
import * as vscode from 'vscode';
import { COMMANDS } from '../protocol/commands.js';
import { agentAt, listAgents, type AgentInfo } from '../protocol/lsp.js';
import { chooseAgent } from './agent-choice.js';
import { isCorpus, type DataOption, type DataOptions } from './train-choices.js';
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

/** The id of the agent last chosen in this workspace (by any command), listed first among the workspace's agents. */
const LAST_AGENT_KEY = 'agentLightning.lastAgent';

/** Marks `agent` as the one last used here: called once a command has all it asked for and runs (not on a cancelled pick). */
export async function rememberAgent(ctx: Ctx, agent: AgentInfo): Promise<void> {
  await ctx.extension.workspaceState.update(LAST_AGENT_KEY, agent.id);
}

/**
 * The agent for a command: the CodeLens argument, else the one under the cursor, else a quick pick of the open
 * file's agents, then the rest of the workspace's (without tests and fixtures: agent-choice.ts says why and in
 * which order). An agent that is the only one offered is taken without asking. Not remembered here: the command
 * calls rememberAgent when it runs, so a command cancelled at a later pick leaves "last used" as it was.
 */
export async function resolveAgent(ctx: Ctx, arg: unknown, purpose: string): Promise<AgentInfo | undefined> {
  const lsp = ctx.lsp;
  if (!lsp) {
    void vscode.window.showErrorMessage('Agent Lightning: the language server is not running, so agents cannot be found. See the "Agent Lightning" output.');
    return undefined;
  }
  const all = (await lsp.sendRequest(listAgents, {})).agents;
  const remembered = ctx.extension.workspaceState.get<string>(LAST_AGENT_KEY);
  if (typeof arg === 'string' && arg) {
    const named = all.find((a) => a.id === arg) ?? {
      id: arg,
      name: arg.split(/[#:]/).pop() ?? arg,
      language: /\.py:/.test(arg) ? 'python' : 'typescript',
      uri: '',
      range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } },
    };
    return named;
  }
  const editor = cursorEditor();
  let cursor: AgentInfo | null = null;
  if (editor) {
    const pos = editor.selection.active;
    cursor = (await lsp.sendRequest(agentAt, { uri: editor.document.uri.toString(), position: { line: pos.line, character: pos.character } })).agent;
  }
  const decision = chooseAgent(all, {
    cursor,
    activeFile: editor?.document.uri.scheme === 'file' ? editor.document.uri.fsPath : null,
    folders: (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath),
    remembered,
  });
  if (decision.kind === 'none') {
    const message = decision.hidden.length
      ? `Agent Lightning: the ${decision.hidden.length} agent function(s) found are in tests, fixtures or outside the workspace folders, which are not offered: open the agent's file and put the cursor in it.`
      : 'Agent Lightning: no agent functions in this workspace. An agent is a function wrapped in rollout(...) (TypeScript/JavaScript), or in Python a module-level def name(task, llm) or a function decorated with @rollout.';
    const choice = await vscode.window.showWarningMessage(message, 'Mark Function as Agent');
    if (choice) void vscode.commands.executeCommand(COMMANDS.markAsAgent);
    return undefined;
  }
  let agent: AgentInfo | undefined;
  if (decision.kind === 'take') agent = decision.agent;
  else {
    type Item = vscode.QuickPickItem & { agent?: AgentInfo };
    const item = (a: AgentInfo): Item => ({ label: a.name, description: a.id === remembered ? `${a.id} · last used` : a.id, agent: a });
    const items: Item[] = [];
    const openName = editor ? vscode.workspace.asRelativePath(editor.document.uri) : '';
    if (decision.inFile.length) items.push({ label: `in ${openName}`, kind: vscode.QuickPickItemKind.Separator }, ...decision.inFile.map(item));
    if (decision.workspace.length) items.push({ label: 'in the workspace', kind: vscode.QuickPickItemKind.Separator }, ...decision.workspace.map(item));
    const picked = await vscode.window.showQuickPick(items, {
      title: `Agent Lightning: which agent to ${purpose}?`,
      placeHolder: decision.inFile.length
        ? `The agents of ${openName} first, then the workspace's (tests and fixtures left out)`
        : 'Agent functions in this workspace (tests and fixtures left out)',
      ignoreFocusOut: true,
      matchOnDescription: true,
    });
    agent = picked?.agent;
  }
  return agent;
}

/** The JSONL files of the workspace that may hold tasks (file paths, sorted; up to 500, without dependencies, build output and corpora). */
export async function workspaceJsonlFiles(): Promise<string[]> {
  const files = await vscode.workspace.findFiles('**/*.jsonl', '{**/node_modules/**,**/.git/**,**/dist/**}', 500);
  return files
    .map((u) => u.fsPath)
    .filter((f) => !isCorpus(f))
    .sort();
}

/** A JSONL file picked from the workspace's or the file dialog ("Browse…"). */
export type JsonlPickItem = vscode.QuickPickItem & { path?: string | 'browse' };

export const BROWSE_ITEM: JsonlPickItem = { label: '$(folder-opened) Browse…', path: 'browse' };

/** Shows `items` (see JsonlPickItem); the picked file, the file dialog's after "Browse…", or undefined when dismissed. */
export async function showJsonlPick(
  title: string,
  items: JsonlPickItem[],
  placeHolder = 'A JSONL file: one task (a JSON object) per line',
): Promise<string | undefined> {
  const picked = await vscode.window.showQuickPick(items, { title, placeHolder, ignoreFocusOut: true, matchOnDescription: true });
  if (!picked?.path) return undefined;
  if (picked.path !== 'browse') return picked.path;
  const uris = await vscode.window.showOpenDialog({ canSelectMany: false, filters: { 'JSON Lines': ['jsonl'] }, title });
  return uris?.[0]?.fsPath;
}

/** What a task-file pick that may go without a file (an optimization's test set) returns for "none". */
export const NO_FILE = '\u0000none';

/**
 * A task-file pick: the agent's own files first (the first preselected), else "Browse…" where the highlight is.
 * `none`: the label of an item that picks no file (NO_FILE), offered first when no file is known to be the agent's.
 */
export async function pickTaskFile(title: string, options: DataOptions, agent: AgentInfo, what: string, none?: string): Promise<string | undefined> {
  const item = (o: DataOption): JsonlPickItem => ({ label: vscode.workspace.asRelativePath(o.path), description: o.description, path: o.path });
  const others: JsonlPickItem[] = options.others.length
    ? [{ label: 'other JSONL files', kind: vscode.QuickPickItemKind.Separator }, ...options.others.map(item)]
    : [];
  const noFile: JsonlPickItem[] = none ? [{ label: `$(circle-slash) ${none}`, path: NO_FILE }] : [];
  if (options.owned.length) return showJsonlPick(title, [...options.owned.map(item), ...noFile, ...others, BROWSE_ITEM]);
  if (none) return showJsonlPick(title, [...noFile, ...others, BROWSE_ITEM]);
  // None is known to be the agent's: Enter on the highlighted first item opens the file dialog rather than
  // training on whichever file sorts first.
  return showJsonlPick(
    title,
    [BROWSE_ITEM, ...others],
    `No ${what} file is known to be ${agent.name}'s (its train.yaml's data: section, or an earlier run): pick one`,
  );
}

/** JSONL files of the workspace, the remembered one first. */
export async function pickJsonlFile(title: string, remembered: string | undefined): Promise<string | undefined> {
  const rel = (p: string) => vscode.workspace.asRelativePath(p);
  const items: JsonlPickItem[] = [];
  if (remembered) items.push({ label: rel(remembered), description: 'last used', path: remembered });
  for (const f of await workspaceJsonlFiles()) if (f !== remembered) items.push({ label: rel(f), path: f });
  items.push(BROWSE_ITEM);
  return showJsonlPick(title, items);
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
