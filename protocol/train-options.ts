/**
 * `agl train`'s command-line options, declared once (protocol/cli-options.ts): its --help, its argument parsing, the
 * config overrides the flags make, and the command line the extension builds (extension/train-choices.ts) all come
 * from this table, so an option named on one side only fails to compile. `ENGINE_OPTIONS` are shared with `agl sft`
 * and `agl serve`. A new flag of agl train goes in TRAIN_OPTIONS (with `config:` when it sets a config field: a
 * TrainConfigPath, so a misspelt field does not compile). The --grpo-* flags come from GRPO's one declaration
 * (protocol/grpo-settings.ts grpoFlags), the --judge-* flags from the judge's (protocol/judge-settings.ts judgeFlags).
 */
import { type CliCommand, type CliOption, type FlagsOf, commandHelp, commandLine } from './cli-options.js';
import { grpoFlags } from './grpo-settings.js';
import { judgeFlags } from './judge-settings.js';
import type { TrainConfigInput } from './train-config.js';

/** The dotted paths into an object type's fields, its nested objects' too (arrays are leaves). */
type Paths<T> = T extends readonly unknown[]
  ? never
  : T extends object
    ? {
        [K in keyof T & string]:
          K | (NonNullable<T[K]> extends readonly unknown[] ? never : NonNullable<T[K]> extends object ? `${K}.${Paths<NonNullable<T[K]>>}` : never);
      }[keyof T & string]
    : never;
/** Every field of the training config a flag may set: `training.learningRate`, `engine.kind`, `training.grpo.beta`, `policies`. */
export type TrainConfigPath = Paths<TrainConfigInput>;
/** A flag of agl train (or the engine's): where its value goes in the config is a path the config has. */
export type TrainOption = CliOption & { config?: TrainConfigPath };

/** The engine's options (agl train, agl sft, agl serve). */
export const ENGINE_OPTIONS = {
  engine: { type: 'string', arg: 'E', help: 'tfjs (default: in this process) or torch (PyTorch + transformers in a child process)', config: 'engine.kind' },
  procs: {
    type: 'string',
    arg: 'N',
    help: 'torch: data-parallel ranks (torchrun + DDP; gloo on CPU, NCCL on CUDA), default 1',
    config: 'engine.procs',
    parse: 'number',
  },
  device: { type: 'string', arg: 'D', help: 'torch: cpu (default), cuda (rank r on GPU r) or auto', config: 'engine.device' },
  dtype: { type: 'string', arg: 'T', help: 'torch: float32 (default), bfloat16 or float16 weights', config: 'engine.dtype' },
  python: {
    type: 'string',
    arg: 'P',
    help: 'torch: the Python to run (default: AGL_PYTHON, else the venv of agl engine install torch)',
    config: 'engine.python',
  },
  shard: {
    type: 'string',
    arg: 'S',
    help: 'torch, several ranks: none (default: DDP) or fsdp (each rank holds 1/N of weights and moments)',
    config: 'engine.shard',
  },
  'gradient-checkpointing': {
    type: 'boolean',
    help: "torch: recompute each decoder layer's activations in the backward pass (less memory, ~1/3 more compute)",
    config: 'engine.gradientCheckpointing',
  },
  nodes: {
    type: 'string',
    arg: 'N',
    help: 'torch: machines taking part, each running the same command with its own --node-rank',
    config: 'engine.nodes',
    parse: 'number',
  },
  'node-rank': {
    type: 'string',
    arg: 'R',
    help: "torch: this machine's number (0 runs the daemon and the loop; the others lend ranks)",
    config: 'engine.nodeRank',
    parse: 'number',
  },
  rdzv: { type: 'string', arg: 'HOST:PORT', help: "torch, several machines: node 0's rendezvous address", config: 'engine.rdzv' },
} as const satisfies Record<string, TrainOption>;

export const TRAIN_OPTIONS = {
  train: {
    type: 'string',
    arg: 'FILE',
    help: 'training tasks, one JSON object per line (its "id" groups GRPO samples)   (required unless --config names data.train)',
  },
  val: {
    type: 'string',
    arg: 'FILE',
    help: 'validation tasks (held out), evaluated every --val-every steps             (required unless --config names data.val)',
  },
  model: { type: 'string', arg: 'M', help: 'builtin:0.8m (default), builtin:5m, or a model/checkpoint folder (e.g. from agl sft)', config: 'model.name' },
  'group-size': { type: 'string', arg: 'N', help: 'rollouts per task (GRPO group), default 8', config: 'training.groupSize', parse: 'number' },
  'batch-size': { type: 'string', arg: 'N', help: 'tasks per step, default 16', config: 'training.batchSize', parse: 'number' },
  lr: { type: 'string', arg: 'X', help: 'learning rate, default 1e-4', config: 'training.learningRate', parse: 'number' },
  'max-steps': { type: 'string', arg: 'N', help: 'stop after N steps', config: 'training.maxSteps', parse: 'number' },
  'max-minutes': { type: 'string', arg: 'M', help: 'stop after M minutes (a final validation still runs)', config: 'training.maxMinutes', parse: 'number' },
  epochs: { type: 'string', arg: 'E', help: 'passes over the training tasks (default 1)', config: 'training.epochs', parse: 'number' },
  'val-every': { type: 'string', arg: 'K', help: 'validate every K steps (default 5)', config: 'training.valEvery', parse: 'number' },
  'use-human-labels': {
    type: 'boolean',
    help: "train on people's labels from the viewer (good 1, bad 0, or a score) where a rollout has one (default: labels only check a judge)",
    config: 'training.useHumanLabels',
  },
  'stop-on-divergence': {
    type: 'boolean',
    help: "with a judge: stop when its reward rises while the agent's own (or people's labels, or validation) falls over the window",
    config: 'training.stopOnDivergence',
  },
  'divergence-window': {
    type: 'string',
    arg: 'N',
    help: 'steps the divergence monitor looks back over (default 5, at least 3)',
    config: 'training.divergenceWindow',
    parse: 'number',
  },
  workers: {
    type: 'string',
    arg: 'N',
    help: 'runner workers in this process (default 8; 0 = external `agl runner` only)',
    config: 'runtime.workers',
    parse: 'number',
  },
  policy: {
    type: 'string',
    arg: 'R[=DIR|=shared:R2]',
    help: "one policy per role: role R (an agent name) trains its own weights, from DIR (default: --model), or R2's (repeat per role; policies: in the config)",
    config: 'policies',
    parse: 'policy',
    multiple: true,
  },
  'unassigned-calls': {
    type: 'string',
    arg: 'A',
    help: 'with --policy: refuse (default) a call naming no role, or serve it with the default policy',
    config: 'unassignedCalls',
  },
  config: { type: 'string', arg: 'FILE', help: 'YAML with sections model / training / runtime / engine / policies / judge (flags override it)' },
  resume: { type: 'string', arg: 'RUN|DIR', help: 'continue a killed run from its last checkpoint' },
  'checkpoint-dir': { type: 'string', arg: 'D', help: 'default <data-dir>/runs/<run id>', config: 'runtime.checkpointDir' },
  backend: { type: 'string', arg: 'B', help: "auto, wasm, cpu, webgpu, node (the tfjs engine's TF.js backend)", config: 'runtime.backend' },
  ...ENGINE_OPTIONS,
  'data-dir': { type: 'string', arg: 'DIR', help: 'where the store and token are (default ~/.agent-lightning, or AGL_DATA_DIR)' },
  store: { type: 'string', arg: 'SPEC', help: 'postgres://... or a SQLite file (default <data-dir>/store.sqlite, or AGL_STORE)' },
  quiet: { type: 'boolean', help: 'no progress bar' },
  ...grpoFlags(),
  ...judgeFlags(),
} as const satisfies Record<string, TrainOption>;

export const TRAIN_COMMAND = {
  name: 'train',
  summary: 'train the LLM inside an agent with GRPO (rollouts through the gateway and runner), checkpoints, report',
  usage: ['<agent file>#<export> --train train.jsonl --val val.jsonl [options]'],
  about: 'Trains the LLM inside the agent with GRPO: rollouts through the gateway, credit per LLM call, updates.',
  options: TRAIN_OPTIONS,
  positionals: true,
} as const satisfies CliCommand<typeof TRAIN_OPTIONS>;

export type TrainOptionName = keyof typeof TRAIN_OPTIONS;
/** Parsed `agl train` flags (as node:util parseArgs gives them), by option name. */
export type TrainFlags = FlagsOf<typeof TRAIN_OPTIONS>;
export type EngineFlags = FlagsOf<typeof ENGINE_OPTIONS>;

export function trainHelp(): string {
  return commandHelp(TRAIN_COMMAND);
}

/**
 * `--policy` values into a `policies:` section: `writer` (its own policy from the run's model), `writer=DIR` (from
 * DIR), `rewriter=shared:writer` (served and trained by writer's policy). The config's own checks (unknown shared
 * roles, agentMatch) run on the result.
 */
export function policyFlags(values: readonly string[]): Record<string, { init?: string } | { shared: string }> {
  const out: Record<string, { init?: string } | { shared: string }> = {};
  for (const v of values) {
    const eq = v.indexOf('=');
    const role = (eq < 0 ? v : v.slice(0, eq)).trim();
    const rest = eq < 0 ? '' : v.slice(eq + 1).trim();
    if (!role || (eq >= 0 && !rest)) throw new Error(`--policy takes ROLE, ROLE=DIR or ROLE=shared:OTHER (a role is an agent name), got '${v}'`);
    if (role in out) throw new Error(`--policy names role '${role}' twice`);
    out[role] = rest.startsWith('shared:') ? { shared: rest.slice('shared:'.length).trim() } : rest ? { init: rest } : {};
  }
  return out;
}

/** A flag's value as its option reads it (`parse`), before zod checks the range; a bad value is an error naming the flag. */
function flagValue(name: string, o: CliOption, v: string | string[] | boolean): unknown {
  const number = (x: unknown) => {
    const n = Number(x);
    if (typeof x !== 'string' || x.trim() === '' || !Number.isFinite(n) || n < 0)
      throw new Error(`--${name} must be a non-negative number, got '${String(x)}'`);
    return n;
  };
  switch (o.parse) {
    case 'policy':
      return policyFlags(Array.isArray(v) ? v : [String(v)]);
    case 'number':
      return number(v);
    case 'nullable-number':
      return v === 'null' || v === 'none' ? null : number(v);
    case 'file':
      return { file: String(v) };
    case 'boolean':
      if (v === true || v === 'true') return true;
      if (v === 'false') return false;
      throw new Error(`--${name} takes true or false, got '${String(v)}'`);
    default:
      return v;
  }
}

/**
 * The config overrides the given flags make (only those given), each at its option's config path, with numbers and
 * booleans read: `--group-size abc` is an error naming the flag. Ranges are zod's to check, with the config's own messages.
 */
export function configOverrides(table: Record<string, CliOption>, flags: Record<string, string | string[] | boolean | undefined>): TrainConfigInput {
  const out: Record<string, unknown> = {};
  for (const [name, o] of Object.entries(table)) {
    const v = flags[name];
    if (v === undefined || !o.config) continue;
    const path = o.config.split('.');
    let at = out;
    for (const key of path.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
    at[path.at(-1)!] = flagValue(name, o, v);
  }
  return out as TrainConfigInput;
}

/** `agl train <agent> --flag value ...` for the given flags, in the order they were given (what the extension runs). */
export function trainCommandLine(agent: string, flags: TrainFlags): string[] {
  return commandLine(TRAIN_COMMAND, flags, [agent]);
}
