/**
 * The extension's settings (package.json contributes.configuration, section `agentLightning`), read in
 * one place with their defaults, and the paths of what ships inside the extension (the `agl` bundle).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';

export interface Settings {
  /** Port for a daemon the extension starts; 0 picks a free one. */
  port: number;
  /** Data dir (store, token, daemon.json); '' = AGL_DATA_DIR or ~/.agent-lightning. */
  dataDir: string;
  /** Store spec for a daemon the extension starts ('' = SQLite in the data dir). */
  storeUrl: string;
  /** Model to train: builtin:0.8m, builtin:5m, a Hugging Face folder, or an OpenAI-compatible URL (rollouts only). */
  defaultModel: string;
  /** GRPO group size (samples per task). */
  groupSize: number;
  /** Node.js binary that runs the daemon and the language server ('' = find one). */
  nodePath: string;
  /** The optimizer model's OpenAI-compatible endpoint for Optimize This Prompt ('' url or model: asked, then saved here). */
  optimizer: Endpoint;
  /** The LLM judge's OpenAI-compatible endpoint Train This Agent offers for an agent without a reward (asked, then saved here). */
  judge: Endpoint;
}

/** An OpenAI-compatible endpoint from the settings: base URL, model, and the environment variable holding its key. */
export interface Endpoint {
  url: string;
  model: string;
  keyEnv: string;
}

/** The endpoints the settings hold, by their section (agentLightning.<section>.url, .model, .keyEnv). */
export type EndpointSection = 'optimizer' | 'judge';

function endpoint(c: vscode.WorkspaceConfiguration, section: EndpointSection): Endpoint {
  return {
    url: c.get<string>(`${section}.url`, '').trim(),
    model: c.get<string>(`${section}.model`, '').trim(),
    keyEnv: c.get<string>(`${section}.keyEnv`, 'OPENAI_API_KEY').trim() || 'OPENAI_API_KEY',
  };
}

export function readSettings(): Settings {
  const c = vscode.workspace.getConfiguration('agentLightning');
  return {
    port: c.get<number>('daemon.port', 4747),
    dataDir: c.get<string>('daemon.dataDir', '').trim(),
    storeUrl: c.get<string>('daemon.storeUrl', '').trim(),
    defaultModel: c.get<string>('defaultModel', 'builtin:0.8m').trim() || 'builtin:0.8m',
    groupSize: c.get<number>('groupSize', 4),
    nodePath: c.get<string>('nodePath', '').trim(),
    optimizer: endpoint(c, 'optimizer'),
    judge: endpoint(c, 'judge'),
  };
}

/** The daemon CLI bundled with the extension (dist/agl.mjs), built by `npm run build`. */
export function aglEntry(extensionPath: string): string {
  const bundle = join(extensionPath, 'dist', 'agl.mjs');
  if (!existsSync(bundle)) {
    throw new Error(`the daemon bundle ${bundle} is missing: the extension was not built (run \`npm run build\`) or its package is incomplete`);
  }
  return bundle;
}

/**
 * The Node.js that runs `agl`: the setting, else the extension host's own Node when it is plain Node
 * (code-server, VS Code Server), else `node` from PATH (in desktop VS Code the host is Electron, whose ABI
 * does not match the native modules the daemon uses).
 */
export function nodeCommand(settings: Settings): { command: string; env: Record<string, string> } {
  if (settings.nodePath) return { command: settings.nodePath, env: {} };
  if (!process.versions.electron) return { command: process.execPath, env: {} };
  return { command: 'node', env: {} };
}

export function workspaceRoot(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}
