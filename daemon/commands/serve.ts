/**
 * `agl serve`: runs the daemon headless — opens the store, serves the HTTP API (127.0.0.1 by default,
 * bearer token from the data dir), runs the store watchdog (timeouts and retries on a timer), records
 * itself in daemon.json, and shuts down cleanly on SIGINT/SIGTERM (stop accepting, finish requests in
 * flight, close the store, mark daemon.json stopped).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { AglClient } from '../../sdk/client.js';
import { openStore, Watchdog, type LightningStore, type StoreSpec } from '../store/index.js';
import { closeGracefully, createApp, listen } from '../server/app.js';
import { createServerContext } from '../server/server-context.js';
import type { PolicyModel } from '../model/policy-contract.js';
import type { PolicyInfo } from '../../protocol/api.js';
import { engineOptions, type EngineConfig } from '../algorithm/engine-config.js';
import { ENGINE_PARSE_OPTIONS, engineFromFlags } from './engine-flags.js';
import { loadOrCreateToken } from '../server/auth.js';
import { installLastResortGuard } from '../server/edge.js';
import { FileModeError, makeDataPrivate } from '../server/file-modes.js';
import { DEFAULT_KEY_ENVS } from '../server/gateway-upstream.js';
import { readDaemonState, resolveDataDir } from '../../sdk/daemon-state.js';
import { DaemonStateFile, DataDirError, ensureWritableDataDir, redactStoreSpec } from '../state.js';

export const DEFAULT_PORT = 4747;
export const DEFAULT_HOST = '127.0.0.1';

const HELP = `usage: agl serve [--port N] [--host H] [--data-dir DIR] [--store SPEC]

Starts the Agent Lightning daemon (store API, gateway, OTLP receiver) in the foreground.
  --port N        port to listen on (default ${DEFAULT_PORT}, or AGL_PORT); 0 picks a free one
  --host H        address to bind (default ${DEFAULT_HOST}: this machine only)
  --data-dir DIR  where the store, token and daemon.json live (default ~/.agent-lightning, or AGL_DATA_DIR)
  --store SPEC    postgres://user:pass@host:port/db, or a SQLite file path (default <data-dir>/store.sqlite;
                  or AGL_STORE)
  --body-limit S  largest JSON request body (default 16mb)
  --model SPEC    policy the gateway serves to agents whose resources name a local model: builtin:0.8m,
                  builtin:5m, a checkpoint folder (agl sft / agl train) or a Hugging Face model folder
                  (or AGL_POLICY); loaded on the first local LLM call
  --upstream URL  an OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp; base URL ending in /v1) the
                  gateway forwards agents' calls to, recording them (or OPENAI_BASE_URL); with
  --upstream-model M  the model to ask it for (or AGL_MODEL): published as the latest LLM resource on start
                  (API key read from OPENAI_API_KEY at call time, never stored)
  --backend B     TF.js backend for that policy (default: the fastest that loads; see agl doctor)
  --engine E      the engine that serves --model: tfjs (default) or torch (with --device, --dtype, --python as
                  for agl train; a torch engine is a child process, stopped with the daemon)
  --allowed-host NAME  a host name clients may call the daemon by, besides localhost, IP addresses and --host
                  (repeatable; '.example.org' allows its subdomains; or AGL_ALLOWED_HOSTS=a,b): other Host
                  headers get 403, so web pages cannot reach the daemon through DNS names they control
  --upstream-key-env NAME  an environment variable an upstream LLM resource may name as its apiKeyEnv
                  (repeatable, or AGL_UPSTREAM_KEY_ENV=A,B; default OPENAI_API_KEY); others are refused
Clients authenticate with the token in <data-dir>/token. The data dir is kept 0700, its files 0600.
Stop with Ctrl-C or SIGTERM.
`;

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

/**
 * The gateway's local policy, opened on first use (loading TF.js and weights takes seconds, and most daemons only
 * record upstream calls); a failed load is reported to the caller and retried next call. POST /v1/agl/policy/load
 * swaps in another folder's weights (a trainer pushing each update): the new policy serves every call made after
 * the swap, and the old one is freed a minute later, once the calls it was serving have ended.
 */
class ServedPolicy {
  private loading: Promise<PolicyModel> | null = null;
  private loaded: PolicyModel | null = null;
  private loadedAt: number | null = null;
  private reloads = 0;

  constructor(
    private spec: string,
    private readonly backend: string | undefined,
    private readonly engine: EngineConfig,
    private readonly dataDir: string,
    private readonly log: (m: string) => void,
  ) {}

  private open(spec: string): Promise<PolicyModel> {
    const opts = engineOptions(this.engine, { dataDir: this.dataDir, log: (line) => this.log(`engine: ${line}`) });
    return import('../algorithm/open-policy.js').then(({ openPolicy }) => openPolicy(spec, { backend: this.backend, ...opts }));
  }

  get(): Promise<PolicyModel> {
    this.loading ??= this.open(this.spec)
      .then((p) => {
        this.log(`policy ${this.spec} loaded (${p.backend})`);
        this.loaded = p;
        this.loadedAt = Date.now();
        return p;
      })
      .catch((err) => {
        this.loading = null;
        throw new Error(`cannot load the policy --model ${this.spec}: ${(err as Error).message}`);
      });
    return this.loading;
  }

  describe(): PolicyInfo {
    return {
      spec: this.spec,
      engine: this.engine.kind,
      name: this.loaded?.name ?? null,
      backend: this.loaded?.backend ?? null,
      loadedAt: this.loadedAt,
      reloads: this.reloads,
    };
  }

  async load(dir: string): Promise<PolicyInfo> {
    if (!existsSync(join(dir, 'config.json'))) throw new Error(`${dir} holds no model (config.json missing)`);
    const next = await this.open(dir);
    const old = this.loaded;
    this.loaded = next;
    this.loading = Promise.resolve(next);
    this.spec = dir;
    this.loadedAt = Date.now();
    this.reloads++;
    this.log(`policy ${dir} loaded (${next.backend}), reload ${this.reloads}`);
    if (old) setTimeout(() => old.dispose(), 60_000).unref();
    return this.describe();
  }
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

export async function run(argv: string[]): Promise<number> {
  let args;
  try {
    args = parseArgs({
      args: argv,
      allowPositionals: false,
      strict: true,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        'data-dir': { type: 'string' },
        store: { type: 'string' },
        'body-limit': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        model: { type: 'string' },
        backend: { type: 'string' },
        ...ENGINE_PARSE_OPTIONS,
        upstream: { type: 'string' },
        'upstream-model': { type: 'string' },
        'allowed-host': { type: 'string', multiple: true },
        'upstream-key-env': { type: 'string', multiple: true },
      },
    }).values;
  } catch (err) {
    process.stderr.write(`agl serve: ${(err as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(HELP);
    return 0;
  }

  const portText = args.port ?? process.env.AGL_PORT ?? String(DEFAULT_PORT);
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) {
    process.stderr.write(`agl serve: --port must be a number from 0 to 65535, got '${portText}'\n`);
    return 2;
  }
  const host = args.host ?? DEFAULT_HOST;
  const dataDir = resolveDataDir(args['data-dir']);
  const list = (flag: string[] | undefined, env: string | undefined) =>
    flag ??
    (env
      ? env
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean)
      : undefined);
  const allowedHosts = list(args['allowed-host'], process.env.AGL_ALLOWED_HOSTS) ?? [];
  const allowedKeyEnvs = list(args['upstream-key-env'], process.env.AGL_UPSTREAM_KEY_ENV) ?? DEFAULT_KEY_ENVS;
  try {
    ensureWritableDataDir(dataDir);
    makeDataPrivate(dataDir);
  } catch (err) {
    if (err instanceof DataDirError || err instanceof FileModeError) {
      process.stderr.write(`agl serve: ${err.message}\n`);
      return 1;
    }
    throw err;
  }

  const previous = readDaemonState(dataDir);
  // A live pid is ours only if the daemon answers as that pid (after a reboot the pid may be another program's).
  if (previous.running && previous.state?.url && !(await answersAs(previous.state.url, previous.state.pid!))) {
    previous.running = false;
    previous.stale = true;
  }
  if (previous.running && previous.state?.pid !== process.pid) {
    process.stderr.write(
      `agl serve: a daemon is already running for ${dataDir} at ${previous.state?.url} (pid ${previous.state?.pid}).\n` +
        `  Use it (\`agl status\`), stop it (kill ${previous.state?.pid}), or start another with a different --data-dir.\n`,
    );
    return 1;
  }
  if (previous.stale) {
    process.stderr.write(`agl serve: the previous daemon (pid ${previous.state?.pid}) did not shut down cleanly; recovering its store.\n`);
  }

  const storeArg = args.store ?? process.env.AGL_STORE;
  const spec: StoreSpec = !storeArg || storeArg === 'sqlite' ? { dataDir } : /^postgres(ql)?:\/\//i.test(storeArg) ? storeArg : resolve(storeArg);
  const storeLabel =
    typeof spec === 'string' ? (/^postgres/i.test(spec) ? redactStoreSpec(spec) : `sqlite:${spec}`) : `sqlite:${resolve(dataDir, 'store.sqlite')}`;

  const { token, path: tokenFile } = loadOrCreateToken(dataDir);
  let store: LightningStore;
  try {
    store = await openStore(spec);
  } catch (err) {
    process.stderr.write(`agl serve: cannot open the store ${storeLabel}: ${(err as Error).message}\n`);
    return 1;
  }
  try {
    // Files the store just created (SQLite's -wal/-shm follow the main file's mode from now on).
    makeDataPrivate(dataDir, storeLabel.startsWith('sqlite:') ? storeLabel.slice('sqlite:'.length) : undefined);
  } catch (err) {
    await store.close();
    if (err instanceof FileModeError) {
      process.stderr.write(`agl serve: ${err.message}\n`);
      return 1;
    }
    throw err;
  }

  const version = packageVersion();
  const state = new DaemonStateFile(dataDir, { tokenPath: tokenFile, store: storeLabel, version });
  const ctx = createServerContext({
    store,
    token,
    dataDir,
    version,
    bodyLimit: args['body-limit'] ?? '16mb',
    allowedHosts,
    allowedKeyEnvs,
    log: (m) => process.stderr.write(`agl: ${m}\n`),
    onAgentSeen: (agent) => state.noteAgent(agent),
    knownAgents: () => state.knownAgents(),
  });
  installLastResortGuard(ctx.log);
  const modelSpec = args.model ?? process.env.AGL_POLICY;
  let engine: EngineConfig;
  try {
    engine = engineFromFlags(args);
  } catch (err) {
    await store.close();
    process.stderr.write(`agl serve: ${(err as Error).message}\n`);
    return 2;
  }
  if (engine.procs > 1) {
    await store.close();
    process.stderr.write('agl serve: --procs is for training (agl train); serving uses one rank\n');
    return 2;
  }
  if (modelSpec) {
    const served = new ServedPolicy(modelSpec, args.backend, engine, dataDir, ctx.log);
    ctx.getPolicy = () => served.get();
    ctx.policyControl = served;
  }
  const app = createApp(ctx);
  let server;
  try {
    server = await listen(app, ctx, host, port);
  } catch (err) {
    await store.close();
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') process.stderr.write(portTakenMessage(host, port));
    else if (code === 'EACCES')
      process.stderr.write(`agl serve: not allowed to listen on ${host}:${port} (EACCES); ports below 1024 need privileges: use --port ${DEFAULT_PORT}\n`);
    else if (code === 'EADDRNOTAVAIL') process.stderr.write(`agl serve: ${host} is not an address of this machine (EADDRNOTAVAIL); use --host 127.0.0.1\n`);
    else process.stderr.write(`agl serve: cannot listen on ${host}:${port}: ${(err as Error).message}\n`);
    return 1;
  }

  const upstreamUrl = args.upstream ?? process.env.OPENAI_BASE_URL;
  const upstreamModel = args['upstream-model'] ?? process.env.AGL_MODEL;
  if (upstreamUrl && upstreamModel) {
    const published = await publishUpstream(store, ctx.url, upstreamUrl, upstreamModel);
    process.stdout.write(`agl: agents' LLM calls go to ${upstreamUrl} (model ${upstreamModel}; resources v${published.version})\n`);
  } else if (args.upstream || args['upstream-model']) {
    process.stderr.write(`agl serve: --upstream needs --upstream-model (or AGL_MODEL) and vice versa; no upstream LLM published\n`);
  }

  const watchdog = new Watchdog(store, { onError: (e) => ctx.log(`watchdog: ${(e as Error)?.message ?? e}`) }).start();
  const boundPort = Number(new URL(ctx.url).port);
  state.markRunning({ pid: process.pid, url: ctx.url, host, port: boundPort, startedAt: ctx.startedAt });
  process.stdout.write(`agl: listening on ${ctx.url} (store ${storeLabel}; data dir ${dataDir}; token ${tokenFile})\n`);
  if (!/^(127\.\d+\.\d+\.\d+|::1|localhost)$/.test(host)) {
    process.stderr.write(
      `agl serve: listening on ${host}, reachable from other machines: every request still needs the token, but traffic is not encrypted.\n`,
    );
  }

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
