/**
 * `agl serve`: runs the daemon headless. This command parses its flags (over their environment variables and
 * defaults), checks --model and the engine flags (what the gateway will serve: a policy, or a training checkpoint's
 * policy set), and calls the daemon's life (daemon/server/serve-run.ts): store, HTTP API, watchdog, daemon.json, and a
 * clean stop on SIGINT/SIGTERM.
 */
import { resolve } from 'node:path';
import type { EngineConfig } from '../algorithm/engine-config.js';
import { lastStepFolder } from '../algorithm/checkpoint.js';
import { checkPolicySet, ServedPolicySet } from '../algorithm/served-policy-set.js';
import { resolveDataDir } from '../../client/daemon-state.js';
import { DEFAULT_PORT, SERVE_COMMAND } from '../../protocol/cli-commands.js';
import { DEFAULT_KEY_ENVS } from '../server/gateway-upstream.js';
import type { ServedPolicies } from '../server/served-policies.js';
import { fail, runDaemon, ServeExit, type DaemonSettings } from '../server/serve-run.js';
import type { StoreSpec } from '../store/index.js';
import { redactStoreSpec } from '../state.js';
import { engineFromFlags, type EngineFlags } from './engine-flags.js';
import { parseCommand } from './flags.js';

export { packageVersion } from '../server/serve-run.js';

/** The daemon's settings, and what it will serve: --model (or AGL_POLICY), its engine and backend. */
interface ServeFlags extends DaemonSettings {
  model?: string;
  defaultModel?: string;
  backend?: string;
  engine: EngineFlags;
}

export async function run(argv: string[]): Promise<number> {
  let flags: ServeFlags;
  try {
    flags = serveFlags(argv);
  } catch (err) {
    if (err instanceof ServeExit) return err.code;
    throw err;
  }
  return runDaemon(flags, () => servedPolicies(flags));
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
