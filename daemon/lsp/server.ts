/**
 * The language server (`agl lsp`): finds agent functions in open documents and workspace files, serves
 * a CodeLens above each with reward stats from the daemon's store, and asks the client to refresh the
 * lenses when new results land (it polls the store's statistics; the extension can also nudge it with
 * agentLightning/refreshStats). Custom messages are declared in protocol/lsp.ts.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { clearInterval, setInterval, setTimeout } from 'node:timers';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CodeLensRefreshRequest, TextDocumentSyncKind, TextDocuments, type CodeLens, type Connection, type InitializeResult } from 'vscode-languageserver';
import { TextDocument } from 'vscode-languageserver-textdocument';
import {
  agentAt,
  agentStats,
  daemonChanged,
  listAgents,
  markAsAgent,
  refreshStats,
  type AgentInfo,
  type AgentStats,
  type DaemonEndpoint,
  type LspInitializationOptions,
} from '../../protocol/lsp.js';
import { AglClient } from '../../sdk/client.js';
import { AGENT_FILE_PATTERN, findAgents, languageOf } from './agents.js';
import { lensesFor } from './codelens.js';
import { DEFAULT_MARK_OPTIONS, markPyAgent, markTsAgent, type MarkOptions } from './mark.js';
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

export function startLspServer(connection: Connection, options: LspServerOptions = {}): void {
  const documents = new TextDocuments(TextDocument);
  const makeReader = options.storeReader ?? ((e: DaemonEndpoint) => new AglClient({ url: e.url, token: e.token ?? '', timeoutMs: READ_TIMEOUT_MS }));
  let reader: (StoreReader & { close?(): void }) | null = null;
  let roots: string[] = [];
  let daemon: DaemonEndpoint | null = null;
  let starting = false;
  let stats: AgentStatsSource | null = null;
  let pollMs = 3000;
  let pollTimer: ReturnType<typeof setInterval> | null = null;
  // A poll of a daemon that has since been replaced must not hold back polls of the new one.
  let polling = false;
  let pollGeneration = 0;
  let refreshSupported = false;
  const agentsByUri = new Map<string, AgentInfo[]>();

  const log = (msg: string) => connection.console.log(msg);

  async function agentsOf(uri: string): Promise<AgentInfo[]> {
    const doc = documents.get(uri);
    if (doc) {
      const agents = await findAgents(uri, doc.getText());
      agentsByUri.set(uri, agents);
      return agents;
    }
    if (!uri.startsWith('file:')) return [];
    const text = await readFile(fileURLToPath(uri), 'utf8');
    return findAgents(uri, text);
  }

  function setDaemon(endpoint: DaemonEndpoint | null): void {
    daemon = endpoint;
    reader?.close?.();
    reader = endpoint ? makeReader(endpoint) : null;
    stats = reader ? new AgentStatsSource(reader) : null;
    pollGeneration++;
    polling = false;
    if (pollTimer) clearInterval(pollTimer);
    pollTimer = endpoint ? setInterval(() => void poll(), pollMs) : null;
    pollTimer?.unref();
  }

  async function statsFor(agent: string, waitMs: number): Promise<AgentStats | undefined> {
    if (!stats) return undefined;
    const cached = stats.cached(agent);
    if (cached) return cached;
    const source = stats;
    const fetched = source.fetch(agent).catch((e: Error) => {
      log(`stats for ${agent}: ${e.message}`);
      return undefined;
    });
    return Promise.race([
      fetched,
      new Promise<undefined>((r) => {
        setTimeout(() => r(undefined), waitMs).unref();
      }),
    ]);
  }

  /**
   * Re-reads stats of every agent with a lens on screen; refreshes the lenses when any changed. Calls
   * never overlap: one asked for while another runs runs once after it (several such coalesce), so the
   * last read always starts after the last change anyone reported.
   */
  let refetching: Promise<void> | null = null;
  let refetchAgain: { force: boolean } | null = null;
  function refetchAll(force: boolean): Promise<void> {
    if (refetching) {
      refetchAgain = { force: force || (refetchAgain?.force ?? false) };
      return refetching;
    }
    refetching = (async () => {
      try {
        await refetchOnce(force);
        while (refetchAgain) {
          const again = refetchAgain;
          refetchAgain = null;
          await refetchOnce(again.force);
        }
      } finally {
        refetching = null;
      }
    })();
    return refetching;
  }

  async function refetchOnce(force: boolean): Promise<void> {
    if (!stats) return;
    const source = stats;
    const agents = [...new Set([...agentsByUri.values()].flat().map((a) => a.id))];
    let changed = force;
    for (const id of agents) {
      const before = JSON.stringify(source.cached(id) ?? null);
      const after = await source.fetch(id).catch((e: Error) => {
        log(`stats for ${id}: ${e.message}`);
        return null;
      });
      if (after && JSON.stringify(after) !== before) changed = true;
    }
    if (changed) await refreshLenses();
  }

  async function refreshLenses(): Promise<void> {
    if (refreshSupported) await connection.sendRequest(CodeLensRefreshRequest.type).catch(() => undefined);
  }

  async function poll(): Promise<void> {
    if (polling || !stats) return;
    polling = true;
    const generation = pollGeneration;
    try {
      if (await stats.storeChanged()) await refetchAll(false);
    } catch (e) {
      log(`poll: ${(e as Error).message}`);
    } finally {
      if (generation === pollGeneration) polling = false;
    }
  }

  connection.onInitialize((params): InitializeResult => {
    const folders = params.workspaceFolders?.map((f) => f.uri) ?? (params.rootUri ? [params.rootUri] : []);
    roots = folders.filter((u) => u.startsWith('file:')).map((u) => fileURLToPath(u));
    refreshSupported = params.capabilities.workspace?.codeLens?.refreshSupport === true;
    const init = (params.initializationOptions ?? {}) as LspInitializationOptions;
    if (init.pollIntervalMs) pollMs = init.pollIntervalMs;
    setDaemon(init.daemon ?? null);
    starting = init.starting === true && !init.daemon;
    return {
      capabilities: {
        textDocumentSync: TextDocumentSyncKind.Incremental,
        codeLensProvider: { resolveProvider: false },
        workspace: { workspaceFolders: { supported: true, changeNotifications: true } },
      },
      serverInfo: { name: 'agl lsp' },
    };
  });

  connection.onInitialized(() => {
    connection.workspace.onDidChangeWorkspaceFolders((e) => {
      const removed = new Set(e.removed.map((f) => fileURLToPath(f.uri)));
      roots = [...roots.filter((r) => !removed.has(r)), ...e.added.map((f) => fileURLToPath(f.uri))];
    });
  });

  connection.onCodeLens(async ({ textDocument }): Promise<CodeLens[]> => {
    const agents = await agentsOf(textDocument.uri);
    const lenses: CodeLens[] = [];
    for (const agent of agents) lenses.push(...lensesFor(agent, await statsFor(agent.id, 1500), daemon !== null, starting));
    return lenses;
  });

  connection.onNotification(daemonChanged, ({ daemon: endpoint, starting: isStarting }) => {
    log(endpoint ? `daemon at ${endpoint.url}` : isStarting ? 'daemon starting' : 'daemon down');
    starting = !endpoint && isStarting === true;
    setDaemon(endpoint);
    void refetchAll(true);
  });
  connection.onNotification(refreshStats, () => void refetchAll(false));

  connection.onRequest(listAgents, async () => ({ agents: await scanWorkspace() }));
  connection.onRequest(agentAt, async ({ uri, position }) => {
    const agents = await agentsOf(uri);
    return { agent: agents.find((a) => a.range.start.line <= position.line && position.line <= a.range.end.line) ?? null };
  });
  connection.onRequest(agentStats, async ({ agents }) => {
    const out: AgentStats[] = [];
    for (const id of agents) {
      const s = stats ? await stats.fetch(id).catch(() => undefined) : undefined;
      if (s) out.push(s);
    }
    return { stats: out };
  });
  connection.onRequest(markAsAgent, async ({ uri, position }) => {
    const doc = documents.get(uri);
    const text = doc?.getText() ?? (uri.startsWith('file:') ? await readFile(fileURLToPath(uri), 'utf8') : '');
    const path = uri.startsWith('file:') ? fileURLToPath(uri) : uri;
    const language = languageOf(path);
    if (!language) return { error: 'Agent Lightning finds agents in TypeScript, JavaScript and Python files; this file is none of those.' };
    const mark = options.mark ?? DEFAULT_MARK_OPTIONS;
    return language === 'python' ? markPyAgent(text, position, mark) : markTsAgent(path, text, position, mark);
  });

  documents.onDidClose((e) => agentsByUri.delete(e.document.uri));

  /** Every agent in the workspace folders: files on disk, with open documents' unsaved text preferred. */
  async function scanWorkspace(): Promise<AgentInfo[]> {
    const found: AgentInfo[] = [];
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
          if (!text.includes('rollout')) continue;
          found.push(...(await findAgents(uri, text)));
        } catch (e) {
          log(`scan ${path}: ${(e as Error).message}`);
        }
      }
    }
    for (const root of roots) await walk(root);
    return found;
  }

  documents.listen(connection);
  connection.listen();
}
