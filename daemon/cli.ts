/**
 * The `agl` command line: dispatches `agl <command> [args]` to daemon/commands/<command>.ts, each
 * exporting `run(argv: string[]): Promise<number>` (the exit code) and handling its own --help.
 * Commands load lazily, so `agl status` never pays for TF.js or the language server.
 */
import { AglConnectionError, AglHttpError } from '../sdk/tools/client.js';

interface CommandModule {
  run(argv: string[]): Promise<number>;
}
interface CommandEntry {
  summary: string;
  load: () => Promise<CommandModule>;
}

// ---- The command table: ONE line per command. To add yours: create daemon/commands/<name>.ts and add its line. ----
const COMMANDS: Record<string, CommandEntry> = {
  serve: { summary: 'start the daemon (store API, gateway, OTLP) in the foreground', load: () => import('./commands/serve.js') },
  status: { summary: 'is the daemon running? where, with which store, holding what', load: () => import('./commands/status.js') },
  rollouts: { summary: 'list rollouts (filters) or show one with its attempts and spans', load: () => import('./commands/rollouts.js') },
  lsp: { summary: 'language server (stdio) serving CodeLens with reward stats above agent functions', load: () => import('./commands/lsp.js') },
  train: {
    summary: 'train the LLM inside an agent with GRPO (rollouts through the gateway and runner), checkpoints, report',
    load: () => import('./commands/train.js'),
  },
  sft: { summary: 'supervised warm-up from demonstrations (JSONL), writes a checkpoint for agl train --model', load: () => import('./commands/sft.js') },
  export: { summary: "write a training run's transitions (credit, advantages, token ids) as JSONL for TRL/verl", load: () => import('./commands/export.js') },
  rollout: {
    summary: 'run one rollout of an agent (file.ts#export or module:function) and print its spans and reward',
    load: () => import('./commands/rollout.js'),
  },
  runner: { summary: 'add N workers that claim rollouts and run agents in warm child processes', load: () => import('./commands/runner.js') },
  doctor: {
    summary: "the engines: which TF.js backend loads and why the faster ones did not; the torch engine's Python, CUDA, ranks",
    load: () => import('./commands/doctor.js'),
  },
  engine: {
    summary: "install the torch engine's Python environment (agl engine install torch), or show it (agl engine status)",
    load: () => import('./commands/engine.js'),
  },
};
// ---------------------------------------------------------------------------------------------------------------

function help(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((c) => c.length));
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return `usage: agl <command> [options]     (agl <command> --help for its options)

Agent Lightning: train the LLM inside your agent with reinforcement learning.

commands:
${lines.join('\n')}

environment: AGL_DATA_DIR (default ~/.agent-lightning), AGL_PORT (default 4747), AGL_STORE
`;
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    if (name === 'help' && rest[0] && COMMANDS[rest[0]]) return (await COMMANDS[rest[0]].load()).run(['--help']);
    process.stdout.write(help());
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-v') {
    process.stdout.write(`${(await import('./commands/serve.js')).packageVersion()}\n`);
    return 0;
  }
  const entry = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!entry) {
    process.stderr.write(`agl: unknown command '${name}'. Commands: ${Object.keys(COMMANDS).join(', ')} (agl --help)\n`);
    return 2;
  }
  try {
    return await (await entry.load()).run(rest);
  } catch (err) {
    // Expected failures get their message only; anything else its stack (it is a bug to report).
    if (err instanceof AglConnectionError || err instanceof AglHttpError) process.stderr.write(`agl ${name}: ${err.message}\n`);
    else process.stderr.write(`agl ${name}: ${process.env.AGL_DEBUG ? (err as Error)?.stack : ((err as Error)?.message ?? err)}\n`);
    return 1;
  }
}

// No top-level await: the sources also run as CommonJS under tsx (package.json has no "type": "module").
void main(process.argv.slice(2)).then((code) => {
  // Flush stdout before exiting (a pipe may still hold output).
  process.stdout.write('', () => process.exit(code));
});
