/**
 * `agl serve`: runs the daemon headless — opens the store, serves the HTTP API (127.0.0.1 by default,
 * bearer token from the data dir), runs the store watchdog (timeouts and retries on a timer), records
 * itself in daemon.json, and shuts down cleanly on SIGINT/SIGTERM (stop accepting, finish requests in
 * flight, close the store, mark daemon.json stopped).
 */
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { AglClient } from '../../client/client.js';
import { openStore, Watchdog, type LightningStore, type StoreSpec } from '../store/index.js';
import { closeGracefully, createApp, listen } from '../server/app.js';
import { createServerContext, type ServerContext } from '../server/server-context.js';
import type { EngineConfig } from '../algorithm/engine-config.js';
import { DEFAULT_PORT, SERVE_COMMAND } from '../../protocol/cli-commands.js';
import { engineFromFlags, type EngineFlags } from './engine-flags.js';
import { parseCommand } from './flags.js';
import { checkPolicySet, ServedPolicySet } from '../algorithm/served-policy-set.js';
import type { ServedPolicies } from '../server/served-policies.js';
import { lastStepFolder } from '../algorithm/checkpoint.js';
import { loadOrCreateToken } from '../server/auth.js';
import { installLastResortGuard } from '../server/edge.js';
import { FileModeError, makeDataPrivate } from '../server/file-modes.js';
import { DEFAULT_KEY_ENVS } from '../server/gateway-upstream.js';
import { readDaemonState, resolveDataDir } from '../../client/daemon-state.js';
import { DaemonStateFile, DataDirError, ensureWritableDataDir, redactStoreSpec } from '../state.js';

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

/** What `agl serve` was asked for: the flags over their environment variables and defaults. */
interface ServeFlags {
  port: number;
  host: string;
  dataDir: string;
  store: StoreSpec;
  /** The store as daemon.json and the messages name it (a postgres password redacted). */
  storeLabel: string;
  bodyLimit: string;
  allowedHosts: string[];
  allowedKeyEnvs: string[];
  model?: string;
  defaultModel?: string;
  backend?: string;
  engine: EngineFlags;
  upstreamUrl?: string;
  upstreamModel?: string;
  /** --upstream or --upstream-model on the command line (not only in the environment). */
  upstreamFlagged: boolean;
}

/** Thrown by a step of `agl serve` once it has said why: the command exits with `code`. */
class ServeExit extends Error {
  constructor(readonly code: number) {
    super(`agl serve: exit ${code}`);
  }
}

/** Writes `text` to stderr and ends `agl serve` with `code`. */
function fail(code: number, text: string): never {
  process.stderr.write(text);
  throw new ServeExit(code);
}

/**
 * `agl serve`: the steps below in order; one that cannot go on says why and throws ServeExit with the exit code, and
 * this one path closes the store if it was open. Once listening, the signal handler owns the store.
 */
export async function run(argv: string[]): Promise<number> {
  let store: LightningStore | null = null;
  try {
    const flags = serveFlags(argv);
    prepareDataDir(flags.dataDir);
    await checkPreviousDaemon(flags.dataDir);
    const policies = servedPolicies(flags);
    const { token, path: tokenFile } = loadOrCreateToken(flags.dataDir);
    store = await openPrivateStore(flags);
    const version = packageVersion();
    const state = new DaemonStateFile(flags.dataDir, { tokenPath: tokenFile, store: flags.storeLabel, version });
    const ctx = serverContext(flags, store, token, version, state, policies);
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

/** The command line parsed by its declaration (protocol/cli-commands.ts); a bad flag exits 2 with the usage, --help exits 0. */
function parseServeArgs(argv: string[]) {
  const parsed = parseCommand(SERVE_COMMAND, argv);
  if ('exit' in parsed) throw new ServeExit(parsed.exit);
  return parsed.values;
}

/** The flags checked and resolved against the environment and defaults; a bad --port exits 2. */
function serveFlags(argv: string[]): ServeFlags {
  const args = parseServeArgs(argv);
  const portText = args.port ?? process.env.AGL_PORT ?? String(DEFAULT_PORT);
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) fail(2, `agl serve: --port must be a number from 0 to 65535, got '${portText}'\n`);
  const dataDir = resolveDataDir(args['data-dir']);
  const storeArg = args.store ?? process.env.AGL_STORE;
  const store: StoreSpec = !storeArg || storeArg === 'sqlite' ? { dataDir } : /^postgres(ql)?:\/\//i.test(storeArg) ? storeArg : resolve(storeArg);
  return {
    port,
    host: args.host,
    dataDir,
    store,
    storeLabel:
      typeof store === 'string' ? (/^postgres/i.test(store) ? redactStoreSpec(store) : `sqlite:${store}`) : `sqlite:${resolve(dataDir, 'store.sqlite')}`,
    bodyLimit: args['body-limit'],
    allowedHosts: listFlag(args['allowed-host'], process.env.AGL_ALLOWED_HOSTS) ?? [],
    allowedKeyEnvs: listFlag(args['upstream-key-env'], process.env.AGL_UPSTREAM_KEY_ENV) ?? DEFAULT_KEY_ENVS,
    model: args.model ?? process.env.AGL_POLICY,
    defaultModel: args['default-model'],
    backend: args.backend,
    engine: args,
    upstreamUrl: args.upstream ?? process.env.OPENAI_BASE_URL,
    upstreamModel: args['upstream-model'] ?? process.env.AGL_MODEL,
    upstreamFlagged: Boolean(args.upstream || args['upstream-model']),
  };
}

/** A repeatable flag's values, else its environment variable's comma-separated ones. */
function listFlag(flag: string[] | undefined, env: string | undefined): string[] | undefined {
  return (
    flag ??
    (env
      ? env
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean)
      : undefined)
  );
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
async function openPrivateStore(flags: ServeFlags): Promise<LightningStore> {
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
  flags: ServeFlags,
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

/** A folder spec made absolute (builtin:<size> as it is). */
const resolveSpec = (spec: string) => (spec.startsWith('builtin:') ? spec : resolve(spec));

/**
 * Checks the engine flags (exit 2) and, with --model, what the gateway will serve: that policy (loaded on first use),
 * or the policy set of a training checkpoint (served-policy-set.ts; checked now, exit 2 naming the policy and folder).
 * Nothing without --model.
 */
function servedPolicies(flags: ServeFlags): ServedPolicies | undefined {
  let engine: EngineConfig;
  try {
    engine = engineFromFlags(flags.engine);
  } catch (err) {
    fail(2, `agl serve: ${(err as Error).message}\n`);
  }
  if (engine.procs > 1) fail(2, 'agl serve: --procs is for training (agl train); serving uses one rank\n');
  if (flags.defaultModel && !flags.model) fail(2, 'agl serve: --default-model goes with --model <checkpoint of a policy set>\n');
  // A training run's checkpoint folder serves its last step: one model, or a policy set (served-policy-set.ts).
  let spec: string | undefined;
  let set;
  try {
    spec = flags.model && lastStepFolder(flags.model);
    set = spec ? checkPolicySet(spec, flags.defaultModel && resolveSpec(flags.defaultModel), engine) : null;
  } catch (err) {
    fail(2, `agl serve: --model ${flags.model}: ${(err as Error).message}\n`);
  }
  if (flags.defaultModel && !set) fail(2, `agl serve: --default-model: ${flags.model} is not a checkpoint of a policy set (no agl-policies.json)\n`);
  if (!spec) return undefined;
  const log = (m: string) => process.stderr.write(`agl: ${m}\n`);
  const served = new ServedPolicySet(set ?? { folder: spec, record: null, defaultSpec: spec }, { backend: flags.backend, engine, dataDir: flags.dataDir, log });
  if (set) log(describeServedSet(set.folder, set.defaultSpec, served));
  return served;
}

/** What a daemon serving a checkpoint's policy set says when it starts: each role's policy, or the one adapter. */
function describeServedSet(folder: string, defaultSpec: string, served: ServedPolicySet): string {
  const routing = served.routing();
  if (!routing)
    return `serving ${folder}: policy ${served
      .describe()
      .policies!.map((p) => p.name)
      .join(', ')} (a LoRA adapter on ${defaultSpec}) for every call`;
  const roles = Object.entries(routing.roleModels).map(([role, p]) => `${role} -> ${p}`);
  return (
    `serving one policy per role from ${folder}: ${roles.join(', ')}; other roles -> ${defaultSpec}; ` +
    `calls naming no role: ${routing.unassignedRole === 'default' ? 'the default policy' : 'refused'}`
  );
}

/** Serves the HTTP app on --host:--port; when it cannot, says why (exit 1). */
async function listenOrExplain(ctx: ServerContext, flags: ServeFlags): Promise<Server> {
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
async function publishUpstreamFlags(store: LightningStore, ctx: ServerContext, flags: ServeFlags): Promise<void> {
  const { upstreamUrl, upstreamModel } = flags;
  if (upstreamUrl && upstreamModel) {
    const published = await publishUpstream(store, ctx.url, upstreamUrl, upstreamModel);
    process.stdout.write(`agl: agents' LLM calls go to ${upstreamUrl} (model ${upstreamModel}; resources v${published.version})\n`);
  } else if (flags.upstreamFlagged) {
    process.stderr.write(`agl serve: --upstream needs --upstream-model (or AGL_MODEL) and vice versa; no upstream LLM published\n`);
  }
}

/** Marks daemon.json running at the bound address and says where the daemon listens (warning when beyond this machine). */
function recordRunning(state: DaemonStateFile, ctx: ServerContext, flags: ServeFlags, tokenFile: string): void {
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
