/**
 * `agl train`'s command-line options, declared once: its --help, its argument parsing, the config overrides the
 * flags make, and the command line the extension builds (extension/train-choices.ts) all come from this table, so
 * an option named on one side only fails to compile. `ENGINE_OPTIONS` are shared with `agl sft` and `agl serve`.
 */
import type { TrainConfigInput } from './train-config.js';

export interface CliOption {
  type: 'string' | 'boolean';
  /** What the value is called in --help (FILE, N, X, ...); none for a boolean. */
  arg?: string;
  help: string;
  /** Where the value goes in the training config (a dotted path), when it overrides the config. */
  config?: string;
  /** How the string is read before it goes into the config (zod then checks the range). */
  parse?: 'number' | 'policy';
  /** Given more than once (each value kept, in order). */
  multiple?: true;
}

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
} as const satisfies Record<string, CliOption>;

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
  config: { type: 'string', arg: 'FILE', help: 'YAML with sections model / training / runtime / engine / policies (flags override it)' },
  resume: { type: 'string', arg: 'RUN|DIR', help: 'continue a killed run from its last checkpoint' },
  'checkpoint-dir': { type: 'string', arg: 'D', help: 'default <data-dir>/runs/<run id>', config: 'runtime.checkpointDir' },
  backend: { type: 'string', arg: 'B', help: "auto, wasm, cpu, webgpu, node (the tfjs engine's TF.js backend)", config: 'runtime.backend' },
  ...ENGINE_OPTIONS,
  'data-dir': { type: 'string', arg: 'DIR', help: 'where the store and token are (default ~/.agent-lightning, or AGL_DATA_DIR)' },
  store: { type: 'string', arg: 'SPEC', help: 'postgres://... or a SQLite file (default <data-dir>/store.sqlite, or AGL_STORE)' },
  quiet: { type: 'boolean', help: 'no progress bar' },
} as const satisfies Record<string, CliOption>;

export type TrainOptionName = keyof typeof TRAIN_OPTIONS;
type ValueOf<O extends CliOption> = O['type'] extends 'boolean' ? boolean : O extends { multiple: true } ? string[] : string;
/** Parsed `agl train` flags (as node:util parseArgs gives them), by option name. */
export type TrainFlags = { [K in TrainOptionName]?: ValueOf<(typeof TRAIN_OPTIONS)[K]> };
export type EngineFlags = { [K in keyof typeof ENGINE_OPTIONS]?: string };

/** `--name ARG   help` lines of a table, aligned. */
export function optionLines(table: Record<string, CliOption>): string {
  return Object.entries(table)
    .map(([name, o]) => {
      const left = `  --${name}${o.arg ? ` ${o.arg}` : ''}`;
      return left.length < 22 ? `${left.padEnd(22)}${o.help}` : `${left}\n${' '.repeat(22)}${o.help}`;
    })
    .join('\n');
}

export function trainHelp(): string {
  return `usage: agl train <agent file>#<export> --train train.jsonl --val val.jsonl [options]

Trains the LLM inside the agent with GRPO: rollouts through the gateway, credit per LLM call, updates.
${optionLines(TRAIN_OPTIONS)}
`;
}

/** The options object node:util parseArgs takes for a table's options. */
export function optionTypes<T extends Record<string, CliOption>>(
  table: T,
): { [K in keyof T]: T[K] extends { multiple: true } ? { type: T[K]['type']; multiple: true } : { type: T[K]['type'] } } {
  return Object.fromEntries(Object.entries(table).map(([name, o]) => [name, o.multiple ? { type: o.type, multiple: true } : { type: o.type }])) as never;
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

/** The same, plus --help / -h. */
export function parseArgsOptions<T extends Record<string, CliOption>>(table: T): ReturnType<typeof optionTypes<T>> & { help: { type: 'boolean'; short: 'h' } } {
  return { ...optionTypes(table), help: { type: 'boolean', short: 'h' } } as never;
}

/**
 * The config overrides the given flags make (only those given), with numbers read: `--group-size abc` is an
 * error naming the flag. Ranges are zod's to check, with the config's own messages.
 */
export function configOverrides(table: Record<string, CliOption>, flags: Record<string, string | string[] | boolean | undefined>): TrainConfigInput {
  const out: Record<string, unknown> = {};
  for (const [name, o] of Object.entries(table)) {
    const v = flags[name];
    if (v === undefined || !o.config) continue;
    let value: unknown = v;
    if (o.parse === 'policy') value = policyFlags(Array.isArray(v) ? v : [String(v)]);
    else if (o.parse === 'number') {
      const n = Number(v);
      if (typeof v !== 'string' || v.trim() === '' || !Number.isFinite(n) || n < 0)
        throw new Error(`--${name} must be a non-negative number, got '${String(v)}'`);
      value = n;
    }
    const [section, key] = o.config.split('.') as [string, string | undefined];
    if (key === undefined) out[section] = value;
    else ((out[section] ??= {}) as Record<string, unknown>)[key] = value;
  }
  return out as TrainConfigInput;
}

/** `agl train <agent> --flag value ...` for the given flags, in the order they were given (what the extension runs). */
export function trainCommandLine(agent: string, flags: TrainFlags): string[] {
  const args = ['train', agent];
  for (const [name, v] of Object.entries(flags) as [TrainOptionName, string | string[] | boolean | undefined][]) {
    if (!(name in TRAIN_OPTIONS)) throw new Error(`agl train has no option --${name}`);
    if (v === undefined || v === false) continue;
    for (const one of Array.isArray(v) ? v : [v]) {
      args.push(`--${name}`);
      if (one !== true) args.push(one);
    }
  }
  return args;
}
