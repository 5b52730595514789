/**
 * What `agl serve` runs once it has parsed its flags (daemon/commands/serve.ts): the daemon, headless — checks the data
 * dir and any daemon before it, opens the store, serves the HTTP API (127.0.0.1 by default, bearer token from the data
 * dir), publishes an upstream LLM if asked, runs the store watchdog (timeouts and retries on a timer), records itself
 * in daemon.json, and shuts down cleanly on SIGINT/SIGTERM (stop accepting, finish requests in flight, close the
 * store, mark daemon.json stopped). The policies it serves come from the command (daemon/algorithm/served-policy-set.ts).
 */
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { AglClient } from '../../client/client.js';
import { readDaemonState } from '../../client/daemon-state.js';
import { DEFAULT_PORT } from '../../protocol/cli-commands.js';
import type { LightningStore } from '../../protocol/lightning-store.js';
import { DaemonStateFile, DataDirError, ensureWritableDataDir } from '../state.js';
import { openStore, Watchdog, type StoreSpec } from '../store/index.js';
import { closeGracefully, createApp, listen } from './app.js';
import { loadOrCreateToken } from './auth.js';
import { installLastResortGuard } from './edge.js';
import { FileModeError, makeDataPrivate } from './file-modes.js';
import { createServerContext, type ServerContext } from './server-context.js';
import type { ServedPolicies } from './served-policies.js';

/** The version in our package.json, found upward from the `agl` entry script (bin/agl.mjs, or dist/ when bundled). */
export function packageVersion(): string {
  for (let dir = dirname(resolve(process.argv[1] ?? '.')); ; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      if (pkg.name === 'agent-lightning-vscode') return String(pkg.version);
    } catch {
      /* keep looking upward */
    }
    if (dirname(dir) === dir) return '0.0.0';
  }
}

async function answersAs(url: string, pid: number): Promise<boolean> {
  try {
    return (await new AglClient({ url, token: '', timeoutMs: 3_000 }).health()).pid === pid;
  } catch {
    return false;
  }
}

function portTakenMessage(host: string, port: number): string {
  return (
    `agl serve: port ${port} on ${host} is already in use.\n` +
    `  Another agl daemon? \`agl status\` tells. Otherwise pick a free port: \`agl serve --port 0\` (any free port)\n` +
    `  or \`agl serve --port ${port === DEFAULT_PORT ? DEFAULT_PORT + 1 : port + 1}\`.\n`
  );
}

/** Publishes an upstream LLM resource as the latest resources, unless the latest already is exactly that. */
async function publishUpstream(store: LightningStore, daemonUrl: string, upstreamUrl: string, model: string) {
  const llm = {
    type: 'llm' as const,
    endpoint: `${daemonUrl}/v1`,
    model,
    backend: 'upstream' as const,
    upstreamUrl,
    apiKeyEnv: 'OPENAI_API_KEY',
    samplingParams: {},
  };
  const latest = await store.getLatestResources();
  const same = latest?.resources.llm;
  if (
    latest &&
    same?.type === 'llm' &&
    same.backend === 'upstream' &&
    same.upstreamUrl === upstreamUrl &&
    same.model === model &&
    same.endpoint === llm.endpoint
  )
    return latest;
  return store.addResources({ resources: { llm }, metadata: { publishedBy: 'agl serve --upstream' } });
}

/** What the daemon is asked for: `agl serve`'s flags over their environment variables and defaults (daemon/commands/serve.ts). */
export interface DaemonSettings {
  port: number;
  host: string;
  dataDir: string;
  store: StoreSpec;
  /** The store as daemon.json and the messages name it (a postgres password redacted). */
  storeLabel: string;
  bodyLimit: string;
  allowedHosts: string[];
  allowedKeyEnvs: string[];
  upstreamUrl?: string;
  upstreamModel?: string;
  /** --upstream or --upstream-model on the command line (not only in the environment). */
  upstreamFlagged: boolean;
}

/** Thrown by a step of `agl serve` once it has said why: the command exits with `code`. */
export class ServeExit extends Error {
  constructor(readonly code: number) {
    super(`agl serve: exit ${code}`);
  }
}

/** Writes `text` to stderr and ends `agl serve` with `code`. */
export function fail(code: number, text: string): never {
  process.stderr.write(text);
  throw new ServeExit(code);
}

/**
 * The daemon's life once `agl serve` has parsed its flags: the steps below in order; one that cannot go on says why and
 * throws ServeExit with the exit code, and this one path closes the store if it was open. `policies` (the command's
 * check of --model and the engine flags) runs after the data dir's checks, as the flags' errors are ranked. Once
 * listening, the signal handler owns the store.
 */
export async function runDaemon(flags: DaemonSettings, policies: () => ServedPolicies | undefined): Promise<number> {
  let store: LightningStore | null = null;
  try {
    prepareDataDir(flags.dataDir);
    await checkPreviousDaemon(flags.dataDir);
    const served = policies();
    const { token, path: tokenFile } = loadOrCreateToken(flags.dataDir);
    store = await openPrivateStore(flags);
    const version = packageVersion();
    const state = new DaemonStateFile(flags.dataDir, { tokenPath: tokenFile, store: flags.storeLabel, version });
    const ctx = serverContext(flags, store, token, version, state, served);
    installLastResortGuard(ctx.log);
    const server = await listenOrExplain(ctx, flags);
    await publishUpstreamFlags(store, ctx, flags);
    const watchdog = new Watchdog(store, { onError: (e) => ctx.log(`watchdog: ${(e as Error)?.message ?? e}`) }).start();
    recordRunning(state, ctx, flags, tokenFile);
    const serving = store;
    store = null;
    return await stopOnSignal(server, watchdog, serving, state);
  } catch (err) {
    await store?.close();
    if (err instanceof ServeExit) return err.code;
    throw err;
  }
}

/** Makes sure the data dir exists, is writable and private (0700, files 0600); exits 1 when it cannot be. */
function prepareDataDir(dataDir: string): void {
  try {
    ensureWritableDataDir(dataDir);
    makeDataPrivate(dataDir);
  } catch (err) {
    if (err instanceof DataDirError || err instanceof FileModeError) fail(1, `agl serve: ${err.message}\n`);
    throw err;
  }
}

/** Exits 1 when another daemon is running for this data dir; says so when the last one did not stop cleanly. */
async function checkPreviousDaemon(dataDir: string): Promise<void> {
  const previous = readDaemonState(dataDir);
  // A live pid is ours only if the daemon answers as that pid (after a reboot the pid may be another program's).
  if (previous.running && previous.state?.url && !(await answersAs(previous.state.url, previous.state.pid!))) {
    previous.running = false;
    previous.stale = true;
  }
  if (previous.running && previous.state?.pid !== process.pid) {
    fail(
      1,
      `agl serve: a daemon is already running for ${dataDir} at ${previous.state?.url} (pid ${previous.state?.pid}).\n` +
        `  Use it (\`agl status\`), stop it (kill ${previous.state?.pid}), or start another with a different --data-dir.\n`,
    );
  }
  if (previous.stale) {
    process.stderr.write(`agl serve: the previous daemon (pid ${previous.state?.pid}) did not shut down cleanly; recovering its store.\n`);
  }
}

/** Opens the store and makes the files it created private; exits 1 when either fails. */
async function openPrivateStore(flags: DaemonSettings): Promise<LightningStore> {
  let store: LightningStore;
  try {
    store = await openStore(flags.store);
  } catch (err) {
    fail(1, `agl serve: cannot open the store ${flags.storeLabel}: ${(err as Error).message}\n`);
  }
  try {
    // Files the store just created (SQLite's -wal/-shm follow the main file's mode from now on).
    makeDataPrivate(flags.dataDir, flags.storeLabel.startsWith('sqlite:') ? flags.storeLabel.slice('sqlite:'.length) : undefined);
  } catch (err) {
    await store.close();
    if (err instanceof FileModeError) fail(1, `agl serve: ${err.message}\n`);
    throw err;
  }
  return store;
}

/** What every router shares: logging to stderr, noting the agents it sees in daemon.json, the policies it serves. */
function serverContext(
  flags: DaemonSettings,
  store: LightningStore,
  token: string,
  version: string,
  state: DaemonStateFile,
  policies: ServedPolicies | undefined,
): ServerContext {
  return createServerContext({
    ...(policies ? { policies } : {}),
    store,
    token,
    dataDir: flags.dataDir,
    version,
    bodyLimit: flags.bodyLimit,
    allowedHosts: flags.allowedHosts,
    allowedKeyEnvs: flags.allowedKeyEnvs,
    log: (m) => process.stderr.write(`agl: ${m}\n`),
    onAgentSeen: (agent) => state.noteAgent(agent),
    knownAgents: () => state.knownAgents(),
  });
}

/** Serves the HTTP app on --host:--port; when it cannot, says why (exit 1). */
async function listenOrExplain(ctx: ServerContext, flags: DaemonSettings): Promise<Server> {
  const app = createApp(ctx);
  try {
    return await listen(app, ctx, flags.host, flags.port);
  } catch (err) {
    fail(1, listenFailure(err as NodeJS.ErrnoException, flags.host, flags.port));
  }
}

/** Why listening failed, in words that say what to do about it. */
function listenFailure(err: NodeJS.ErrnoException, host: string, port: number): string {
  if (err.code === 'EADDRINUSE') return portTakenMessage(host, port);
  if (err.code === 'EACCES')
    return `agl serve: not allowed to listen on ${host}:${port} (EACCES); ports below 1024 need privileges: use --port ${DEFAULT_PORT}\n`;
  if (err.code === 'EADDRNOTAVAIL') return `agl serve: ${host} is not an address of this machine (EADDRNOTAVAIL); use --host 127.0.0.1\n`;
  return `agl serve: cannot listen on ${host}:${port}: ${err.message}\n`;
}

/** With --upstream and --upstream-model (or their environment variables), publishes that LLM as the latest resources. */
async function publishUpstreamFlags(store: LightningStore, ctx: ServerContext, flags: DaemonSettings): Promise<void> {
  const { upstreamUrl, upstreamModel } = flags;
  if (upstreamUrl && upstreamModel) {
    const published = await publishUpstream(store, ctx.url, upstreamUrl, upstreamModel);
    process.stdout.write(`agl: agents' LLM calls go to ${upstreamUrl} (model ${upstreamModel}; resources v${published.version})\n`);
  } else if (flags.upstreamFlagged) {
    process.stderr.write(`agl serve: --upstream needs --upstream-model (or AGL_MODEL) and vice versa; no upstream LLM published\n`);
  }
}

/** Marks daemon.json running at the bound address and says where the daemon listens (warning when beyond this machine). */
function recordRunning(state: DaemonStateFile, ctx: ServerContext, flags: DaemonSettings, tokenFile: string): void {
  const boundPort = Number(new URL(ctx.url).port);
  state.markRunning({ pid: process.pid, url: ctx.url, host: flags.host, port: boundPort, startedAt: ctx.startedAt });
  process.stdout.write(`agl: listening on ${ctx.url} (store ${flags.storeLabel}; data dir ${flags.dataDir}; token ${tokenFile})\n`);
  if (!/^(127\.\d+\.\d+\.\d+|::1|localhost)$/.test(flags.host)) {
    process.stderr.write(
      `agl serve: listening on ${flags.host}, reachable from other machines: every request still needs the token, but traffic is not encrypted.\n`,
    );
  }
}

/**
 * The exit code, once SIGINT or SIGTERM has stopped the daemon: stop accepting, finish requests in flight, stop the
 * watchdog, close the store, mark daemon.json stopped. A second signal exits at once.
 */
function stopOnSignal(server: Server, watchdog: Watchdog, store: LightningStore, state: DaemonStateFile): Promise<number> {
  return new Promise<number>((resolveExit) => {
    let stopping = false;
    const stop = async (signal: NodeJS.Signals) => {
      if (stopping) {
        process.stderr.write(`agl: ${signal} again: exiting now\n`);
        process.exit(1);
      }
      stopping = true;
      process.stderr.write(`agl: ${signal}: stopping (finishing requests in flight)\n`);
      let code = 0;
      try {
        await closeGracefully(server, 5_000);
        await watchdog.stop();
        await store.close();
        state.markStopped();
      } catch (err) {
        process.stderr.write(`agl: error while stopping: ${(err as Error).stack ?? err}\n`);
        code = 1;
      }
      process.stdout.write('agl: stopped\n');
      resolveExit(code);
    };
    process.on('SIGINT', () => void stop('SIGINT'));
    process.on('SIGTERM', () => void stop('SIGTERM'));
  });
}
