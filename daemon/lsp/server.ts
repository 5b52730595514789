/**
 * The language server (`agl lsp`): finds agent functions and the prompts they read (`llm.prompt(name, seed)`) in open
 * documents and workspace files, serves a CodeLens above each agent with reward stats from the daemon's store and
 * above each prompt with what its optimizations reached, and asks the client to refresh the lenses when new results
 * land (the daemon's event stream says so; the extension can also nudge it with agentLightning/refreshStats). Custom
 * messages are declared in protocol/lsp.ts.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { clearTimeout, setTimeout } from 'node:timers';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  CodeLensRefreshRequest,
  TextDocumentSyncKind,
  TextDocuments,
  type CodeLens,
  type Connection,
  type InitializeParams,
  type InitializeResult,
  type Position,
  type WorkspaceFoldersChangeEvent,
} from 'vscode-languageserver';
import { TextDocument } from 'vscode-languageserver-textdocument';
import {
  agentAt,
  agentStats,
  daemonChanged,
  listAgents,
  listPrompts,
  markAsAgent,
  promptAt,
  refreshStats,
  type AgentInfo,
  type AgentStats,
  type DaemonEndpoint,
  type LspInitializationOptions,
  type PromptInfo,
} from '../../protocol/lsp.js';
import type { StoreChange } from '../../protocol/events.js';
import { AglClient } from '../../client/client.js';
import { DaemonEventStream } from '../../client/events.js';
import { AGENT_FILE_PATTERN, findAgents, languageOf } from './agents.js';
import { lensesFor, promptLensesFor } from './codelens.js';
import { DEFAULT_MARK_OPTIONS, markPyAgent, markTsAgent, type MarkOptions, type MarkResult } from './mark.js';
import { findPrompts, mayHavePrompts } from './prompts.js';
import { AgentStatsSource, type StoreReader } from './stats.js';

const SKIP_DIRS = new Set(['node_modules', 'dist', 'out', 'build', '__pycache__', 'venv', '.venv', 'site-packages', 'test-results']);
/** Most files read by one workspace scan (a guard against huge folders). */
const MAX_SCAN_FILES = 20_000;
const MAX_FILE_BYTES = 1_000_000;
/** A store read the lenses wait on gives up after this long (the daemon is local). */
const READ_TIMEOUT_MS = 5000;

export interface LspServerOptions {
  /** Builds the store reader for a daemon endpoint (default: the SDK's AglClient; tests may point it anywhere real). */
  storeReader?: (endpoint: DaemonEndpoint) => StoreReader & { close?(): void };
  mark?: MarkOptions;
}

/** Answers the LSP client on `connection` (the handlers are LspServer's methods). */
export function startLspServer(connection: Connection, options: LspServerOptions = {}): void {
  new LspServer(connection, options).listen();
}

type ClosableReader = StoreReader & { close?(): void };

/** Refetches of the lenses' stats start at most this often (ms) while the store keeps changing (a training run). */
const REFETCH_GAP_MS = 250;

/** Whether a change can move a lens's numbers: rollouts (ended, active), runs and their metrics (the headline), promotions. */
const movesLenses = (c: StoreChange) => c.truncated || c.rollouts.length > 0 || c.runs.length > 0 || c.metrics.length > 0 || c.promotedPrompts.length > 0;

/**
 * The daemon the lenses read from: its store reader and stats cache, and its event stream (client/events.ts), whose
 * store changes (and whose `hello`, after any reconnection) make the lenses re-read. Switching daemons replaces all three.
 */
class DaemonLink {
  endpoint: DaemonEndpoint | null = null;
  /** No daemon yet, but the client is starting one (the lenses say so). */
  starting = false;
  stats: AgentStatsSource | null = null;
  private reader: ClosableReader | null = null;
  private events: { close(): void } | null = null;
  private lastRefetch = 0;
  private refetchTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly makeReader: (endpoint: DaemonEndpoint) => ClosableReader,
    /** Called when the store changed in a way the lenses show. */
    private readonly onStoreChanged: () => Promise<void>,
    private readonly log: (msg: string) => void,
  ) {}

  /** Reads from `endpoint` from now on (null: no daemon; `starting`: the client is starting one). */
  switchTo(endpoint: DaemonEndpoint | null, starting: boolean | undefined): void {
    this.starting = !endpoint && starting === true;
    this.endpoint = endpoint;
    this.reader?.close?.();
    this.reader = endpoint ? this.makeReader(endpoint) : null;
    this.stats = this.reader ? new AgentStatsSource(this.reader) : null;
    this.events?.close();
    if (this.refetchTimer) clearTimeout(this.refetchTimer);
    this.refetchTimer = null;
    this.events = endpoint
      ? new DaemonEventStream({
          url: endpoint.url,
          token: endpoint.token ?? '',
          onEvent: (e) => {
            if (e.type === 'hello' || (e.type === 'store' && movesLenses(e.change))) this.storeChanged();
          },
          onDrop: ({ reason }) => this.log(`event stream: ${reason}; reconnecting`),
          log: this.log,
        })
      : null;
  }

  /** Re-reads the lenses' stats now, or once REFETCH_GAP_MS after the last re-read. */
  private storeChanged(): void {
    if (this.refetchTimer) return;
    this.refetchTimer = setTimeout(
      () => {
        this.refetchTimer = null;
        this.lastRefetch = Date.now();
        this.onStoreChanged().catch((e: Error) => this.log(`refetch: ${e.message}`));
      },
      Math.max(0, this.lastRefetch + REFETCH_GAP_MS - Date.now()),
    );
  }

  /** An agent's stats: cached, or fetched if that takes at most `waitMs` (undefined otherwise, or on error). */
  async statsFor(agent: string, waitMs: number): Promise<AgentStats | undefined> {
    if (!this.stats) return undefined;
    const cached = this.stats.cached(agent);
    if (cached) return cached;
    const source = this.stats;
    const fetched = source.fetch(agent).catch((e: Error) => {
      this.log(`stats for ${agent}: ${e.message}`);
      return undefined;
    });
    return Promise.race([
      fetched,
      new Promise<undefined>((r) => {
        setTimeout(() => r(undefined), waitMs).unref();
      }),
    ]);
  }
}

/** One language server on one connection: its documents, workspace folders and daemon, and the handlers that answer the client. */
class LspServer {
  private readonly documents = new TextDocuments(TextDocument);
  private readonly daemon: DaemonLink;
  private roots: string[] = [];
  private refreshSupported = false;
  /** The agents of each open document, as last found for its lenses. */
  private readonly agentsByUri = new Map<string, AgentInfo[]>();
  /** The refetch running, and whether another was asked for meanwhile (see refetchAll). */
  /**
   * What each agent's lens last showed (its stats as JSON): a refetch asks the editor to re-read the lenses when the stats
   * differ from it, not from the cache, which other reads fill too (a lens read that waited, Train This Agent's stats).
   */
  private readonly shown = new Map<string, string>();
  private refetching: Promise<void> | null = null;
  private refetchAgain: { force: boolean } | null = null;
  private readonly log = (msg: string) => this.connection.console.log(msg);

  constructor(
    private readonly connection: Connection,
    private readonly options: LspServerOptions,
  ) {
    const makeReader = options.storeReader ?? ((e: DaemonEndpoint) => new AglClient({ url: e.url, token: e.token ?? '', timeoutMs: READ_TIMEOUT_MS }));
    this.daemon = new DaemonLink(makeReader, () => this.refetchAll(false), this.log);
  }

  /** Registers every handler, then starts reading the connection. */
  listen(): void {
    const { connection } = this;
    connection.onInitialize((params) => this.initialize(params));
    connection.onInitialized(() => {
      connection.workspace.onDidChangeWorkspaceFolders((e) => this.workspaceFoldersChanged(e));
    });
    connection.onCodeLens(({ textDocument }) => this.codeLenses(textDocument.uri));
    connection.onNotification(daemonChanged, ({ daemon, starting }) => this.daemonChanged(daemon, starting));
    connection.onNotification(refreshStats, () => void this.refetchAll(false));
    connection.onRequest(listAgents, async () => ({
      agents: await scanWorkspace(this.roots, this.documents, this.log, { worth: (t) => t.includes('rollout'), find: findAgents }),
    }));
    connection.onRequest(listPrompts, async () => ({
      prompts: await scanWorkspace(this.roots, this.documents, this.log, { worth: mayHavePrompts, find: (uri, text) => findPrompts(uri, text) }),
    }));
    connection.onRequest(agentAt, ({ uri, position }) => this.agentAt(uri, position));
    connection.onRequest(promptAt, ({ uri, position }) => this.promptAt(uri, position));
    connection.onRequest(agentStats, ({ agents }) => this.agentStats(agents));
    connection.onRequest(markAsAgent, ({ uri, position }) => this.markAsAgent(uri, position));
    this.documents.onDidClose((e) => this.agentsByUri.delete(e.document.uri));
    this.documents.listen(connection);
    connection.listen();
  }

  private initialize(params: InitializeParams): InitializeResult {
    const folders = params.workspaceFolders?.map((f) => f.uri) ?? (params.rootUri ? [params.rootUri] : []);
    this.roots = folders.filter((u) => u.startsWith('file:')).map((u) => fileURLToPath(u));
    this.refreshSupported = params.capabilities.workspace?.codeLens?.refreshSupport === true;
    const init = (params.initializationOptions ?? {}) as LspInitializationOptions;
    this.daemon.switchTo(init.daemon ?? null, init.starting);
    return {
      capabilities: {
        textDocumentSync: TextDocumentSyncKind.Incremental,
        codeLensProvider: { resolveProvider: false },
        workspace: { workspaceFolders: { supported: true, changeNotifications: true } },
      },
      serverInfo: { name: 'agl lsp' },
    };
  }

  private workspaceFoldersChanged(e: WorkspaceFoldersChangeEvent): void {
    const removed = new Set(e.removed.map((f) => fileURLToPath(f.uri)));
    this.roots = [...this.roots.filter((r) => !removed.has(r)), ...e.added.map((f) => fileURLToPath(f.uri))];
  }

  private daemonChanged(endpoint: DaemonEndpoint | null, starting: boolean | undefined): void {
    this.log(endpoint ? `daemon at ${endpoint.url}` : starting ? 'daemon starting' : 'daemon down');
    this.daemon.switchTo(endpoint, starting);
    void this.refetchAll(true);
  }

  private async codeLenses(uri: string): Promise<CodeLens[]> {
    const agents = await this.agentsOf(uri);
    const lenses: CodeLens[] = [];
    for (const agent of agents) {
      const stats = await this.daemon.statsFor(agent.id, 1500);
      this.shown.set(agent.id, JSON.stringify(stats ?? null));
      // Not read in time: the lens says so for now, and is refreshed once the read is in (a refetch compares with `shown`).
      if (!stats && this.daemon.stats) void this.refetchAll(false);
      lenses.push(...lensesFor(agent, stats, this.daemon.endpoint !== null, this.daemon.starting));
    }
    for (const prompt of await this.promptsOf(uri, agents))
      lenses.push(...promptLensesFor(prompt, prompt.agent ? await this.daemon.statsFor(prompt.agent, 1500) : undefined));
    return lenses;
  }

  /** The `llm.prompt` calls of a document (its open text, or the file on disk), given `agents`, the document's. */
  private async promptsOf(uri: string, agents?: AgentInfo[]): Promise<PromptInfo[]> {
    const text = this.documents.get(uri)?.getText() ?? (uri.startsWith('file:') ? await readFile(fileURLToPath(uri), 'utf8') : '');
    return findPrompts(uri, text, agents ?? (await this.agentsOf(uri)));
  }

  /** The agents in a document: its open text (remembered for the lenses), or the file on disk. */
  private async agentsOf(uri: string): Promise<AgentInfo[]> {
    const doc = this.documents.get(uri);
    if (doc) {
      const agents = await findAgents(uri, doc.getText());
      this.agentsByUri.set(uri, agents);
      return agents;
    }
    if (!uri.startsWith('file:')) return [];
    const text = await readFile(fileURLToPath(uri), 'utf8');
    return findAgents(uri, text);
  }

  private async agentAt(uri: string, position: Position): Promise<{ agent: AgentInfo | null }> {
    const agents = await this.agentsOf(uri);
    return { agent: agents.find((a) => a.range.start.line <= position.line && position.line <= a.range.end.line) ?? null };
  }

  /** The prompt call at the position: the one whose call spans it, else the first one starting on its line. */
  private async promptAt(uri: string, position: Position): Promise<{ prompt: PromptInfo | null }> {
    const prompts = await this.promptsOf(uri);
    const within = (p: PromptInfo) =>
      (p.range.start.line < position.line || (p.range.start.line === position.line && p.range.start.character <= position.character)) &&
      (position.line < p.range.end.line || (position.line === p.range.end.line && position.character <= p.range.end.character));
    return { prompt: prompts.filter(within).at(-1) ?? prompts.find((p) => p.range.start.line === position.line) ?? null };
  }

  private async agentStats(agents: string[]): Promise<{ stats: AgentStats[] }> {
    const out: AgentStats[] = [];
    for (const id of agents) {
      const s = this.daemon.stats ? await this.daemon.stats.fetch(id).catch(() => undefined) : undefined;
      if (s) out.push(s);
    }
    return { stats: out };
  }

  private async markAsAgent(uri: string, position: Position): Promise<MarkResult> {
    const doc = this.documents.get(uri);
    const text = doc?.getText() ?? (uri.startsWith('file:') ? await readFile(fileURLToPath(uri), 'utf8') : '');
    const path = uri.startsWith('file:') ? fileURLToPath(uri) : uri;
    const language = languageOf(path);
    if (!language) return { error: 'Agent Lightning finds agents in TypeScript, JavaScript and Python files; this file is none of those.' };
    const mark = this.options.mark ?? DEFAULT_MARK_OPTIONS;
    return language === 'python' ? markPyAgent(text, position, mark) : markTsAgent(path, text, position, mark);
  }

  /**
   * Re-reads stats of every agent with a lens on screen; refreshes the lenses when any changed. Calls
   * never overlap: one asked for while another runs runs once after it (several such coalesce), so the
   * last read always starts after the last change anyone reported.
   */
  private refetchAll(force: boolean): Promise<void> {
    if (this.refetching) {
      this.refetchAgain = { force: force || (this.refetchAgain?.force ?? false) };
      return this.refetching;
    }
    this.refetching = (async () => {
      try {
        await this.refetchOnce(force);
        while (this.refetchAgain) {
          const again = this.refetchAgain;
          this.refetchAgain = null;
          await this.refetchOnce(again.force);
        }
      } finally {
        this.refetching = null;
      }
    })();
    return this.refetching;
  }

  private async refetchOnce(force: boolean): Promise<void> {
    if (!this.daemon.stats) return;
    const source = this.daemon.stats;
    const agents = [...new Set([...this.agentsByUri.values()].flat().map((a) => a.id))];
    let changed = force;
    for (const id of agents) {
      const before = this.shown.get(id) ?? JSON.stringify(source.cached(id) ?? null);
      const after = await source.fetch(id).catch((e: Error) => {
        this.log(`stats for ${id}: ${e.message}`);
        return null;
      });
      if (after && JSON.stringify(after) !== before) changed = true;
    }
    if (changed) await this.refreshLenses();
  }

  private async refreshLenses(): Promise<void> {
    if (this.refreshSupported) await this.connection.sendRequest(CodeLensRefreshRequest.type).catch(() => undefined);
  }
}

/**
 * What `find` finds in the workspace folders' source files (agents, prompts), in files whose text is `worth` parsing:
 * files on disk, with open documents' unsaved text preferred.
 */
async function scanWorkspace<T>(
  roots: string[],
  documents: TextDocuments<TextDocument>,
  log: (msg: string) => void,
  what: { worth: (text: string) => boolean; find: (uri: string, text: string) => Promise<T[]> },
): Promise<T[]> {
  const found: T[] = [];
  let budget = MAX_SCAN_FILES;
  async function walk(dir: string): Promise<void> {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (budget <= 0) return;
      if (entry.name.startsWith('.')) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!SKIP_DIRS.has(entry.name)) await walk(path);
        continue;
      }
      if (!entry.isFile() || !AGENT_FILE_PATTERN.test(entry.name) || /\.d\.[mc]?ts$/.test(entry.name)) continue;
      budget--;
      const uri = pathToFileURL(path).href;
      try {
        const open = documents.get(uri);
        if (!open && (await stat(path)).size > MAX_FILE_BYTES) continue;
        const text = open?.getText() ?? (await readFile(path, 'utf8'));
        if (!what.worth(text)) continue;
        found.push(...(await what.find(uri, text)));
      } catch (e) {
        log(`scan ${path}: ${(e as Error).message}`);
      }
    }
  }
  for (const root of roots) await walk(root);
  return found;
}
