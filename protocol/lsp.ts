/**
 * Custom LSP messages between the extension (vscode-languageclient) and `agl lsp` (vscode-languageserver),
 * declared once here and imported by both sides. Methods are namespaced `agentLightning/*`.
 * Standard LSP covers the rest: CodeLens (textDocument/codeLens) and their refresh (workspace/codeLens/refresh).
 */
import { NotificationType, RequestType } from 'vscode-languageserver-protocol';
import type { AgentHeadline } from './agent-headline.js';
import type { AgentReward } from './reward-source.js';
import type { EvalResult, PromotedFrom } from './run-results.js';
import type { TrainingRun } from './store.js';

/** Where the daemon is; null when it is down. Sent in initializationOptions and on every change. */
export interface DaemonEndpoint {
  /** Base URL, e.g. http://127.0.0.1:4747 */
  url: string;
  /** Bearer token for the store API; null when the daemon runs without one. */
  token: string | null;
}

export interface LspInitializationOptions {
  daemon: DaemonEndpoint | null;
  /** The daemon is being started (the lenses say so instead of "not running"). */
  starting?: boolean;
}

export type AgentLanguage = 'typescript' | 'javascript' | 'python';

/** An agent function found in a source file. Lines and characters are 0-based (LSP). */
export interface AgentInfo {
  /** What the store and runner call it: the stable id (agent-id.ts), `path/from/project/root.ts#exportName` or `...py:function`. */
  id: string;
  /** The exported (TS/JS) or function (Python) name. */
  name: string;
  language: AgentLanguage;
  uri: string;
  /** The declaration the CodeLens sits on. */
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
}

/**
 * A prompt an agent reads: a call `llm.prompt(name, seed, vars?)` (TypeScript, JavaScript, Python) found in a source
 * file. Lines and characters are 0-based (LSP).
 */
export interface PromptInfo {
  /** The name the agent reads it by (the call's first argument, a string literal). */
  name: string;
  /**
   * The seed as the call writes it: its text (a plain string literal), its file (`{ file: 'prompts/system.md' }`,
   * relative to the agent's file), or null when it is computed (a template with substitutions, a variable).
   */
  seed: { text: string } | { file: string } | null;
  /** The agent (its stable id) whose code reads it: the one whose declaration holds the call, else the file's only agent; null when neither. */
  agent: string | null;
  language: AgentLanguage;
  uri: string;
  /** The call; its lenses sit on its first line. */
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
}

/** One optimization of an agent's prompts (a run of kind 'optimize'), as the prompt lenses show it. */
export interface PromptOptimization {
  runId: string;
  /** The prompts it optimized (its config's `prompts`). */
  prompts: string[];
  status: TrainingRun['status'];
  /** Mean val score of its best candidate and of its seed (null until scored). */
  best: number | null;
  seed: number | null;
  /** Rollouts it spent of its budget. */
  rollouts: number;
  budget: number;
  updatedAt: number;
}

/** One agent's numbers from the daemon's store, for its CodeLens. */
export interface AgentStats {
  agent: string;
  /** Ended rollouts of this agent (succeeded or failed), up to the query limit. */
  rollouts: number;
  /** True when more rollouts exist than were counted (shown as "500+"). */
  rolloutsCapped: boolean;
  /** The headline number, its words and tooltip (protocol/agent-headline.ts; the dashboard shows the same). */
  headline: AgentHeadline;
  /** Rollouts queued or running right now. */
  active: number;
  /** Its prompt optimizations, newest first (the lenses above its `llm.prompt` calls, and its own lines: protocol/run-results.ts). */
  optimizations: PromptOptimization[];
  /** The newest eval of each dataset, newest first (a lens each). */
  evals: EvalResult[];
  /** Its promoted prompts: which optimization and candidate each came from. */
  promoted: PromotedFrom[];
  /** Which reward it trains on (its newest training run's), or `none` when its rollouts carry none; null: nothing to say yet. */
  reward: AgentReward | null;
}

/** Client -> server: the daemon started, moved or stopped (`starting`: on its way up). */
export const daemonChanged = new NotificationType<{ daemon: DaemonEndpoint | null; starting?: boolean }>('agentLightning/daemonChanged');
/** Client -> server: new results landed (a rollout or training step ended); re-read stats and refresh lenses. */
export const refreshStats = new NotificationType<{ agent?: string }>('agentLightning/refreshStats');
/** Every agent function in the workspace folders (scans files on disk and open documents). */
export const listAgents = new RequestType<Record<string, never>, { agents: AgentInfo[] }, void>('agentLightning/listAgents');
/** The agent function whose declaration contains the position, if any. */
export const agentAt = new RequestType<{ uri: string; position: { line: number; character: number } }, { agent: AgentInfo | null }, void>(
  'agentLightning/agentAt',
);
/** Every `llm.prompt(...)` call in the workspace folders (files on disk and open documents). */
export const listPrompts = new RequestType<Record<string, never>, { prompts: PromptInfo[] }, void>('agentLightning/listPrompts');
/** The `llm.prompt(...)` call at the position (or on its line), if any. */
export const promptAt = new RequestType<{ uri: string; position: { line: number; character: number } }, { prompt: PromptInfo | null }, void>(
  'agentLightning/promptAt',
);
/** Stats of agents by id (from the server's cache, fetched when missing). */
export const agentStats = new RequestType<{ agents: string[] }, { stats: AgentStats[] }, void>('agentLightning/agentStats');

export interface TextEditLike {
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
  newText: string;
}
/** Edits that mark the function at the position as an agent (wrap in rollout(...) / add @rollout). */
export const markAsAgent = new RequestType<
  { uri: string; position: { line: number; character: number } },
  { edits: TextEditLike[]; name: string } | { error: string },
  void
>('agentLightning/markAsAgent');
