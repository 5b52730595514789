/**
 * The `agl` command line: dispatches `agl <command> [args]` to daemon/commands/<command>.ts, each
 * exporting `run(argv: string[]): Promise<number>` (the exit code) and parsing its flags by its declaration in
 * protocol/cli-commands.ts (daemon/commands/flags.ts), which also gives its --help and its line below.
 * Commands load lazily, so `agl status` never pays for TF.js or the language server.
 */
import { AGL_COMMANDS, type AglCommandName, DEFAULT_PORT } from '../protocol/cli-commands.js';
import { AglConnectionError, AglHttpError } from '../client/client.js';

interface CommandModule {
  run(argv: string[]): Promise<number>;
}

// ---- The commands' modules: ONE line per command. To add yours: declare it in protocol/cli-commands.ts (its
// summary and flags), create daemon/commands/<name>.ts and add its line here. ----
const COMMANDS: Record<AglCommandName, () => Promise<CommandModule>> = {
  serve: () => import('./commands/serve.js'),
  status: () => import('./commands/status.js'),
  rollouts: () => import('./commands/rollouts.js'),
  lsp: () => import('./commands/lsp.js'),
  train: () => import('./commands/train.js'),
  sft: () => import('./commands/sft.js'),
  export: () => import('./commands/export.js'),
  rollout: () => import('./commands/rollout.js'),
  runner: () => import('./commands/runner.js'),
  doctor: () => import('./commands/doctor.js'),
  engine: () => import('./commands/engine.js'),
  optimize: () => import('./commands/optimize.js'),
  eval: () => import('./commands/eval.js'),
  dataset: () => import('./commands/dataset.js'),
  judge: () => import('./commands/judge.js'),
};
// ---------------------------------------------------------------------------------------------------------------

const isCommand = (name: string): name is AglCommandName => Object.hasOwn(AGL_COMMANDS, name);

function help(): string {
  const width = Math.max(...Object.keys(AGL_COMMANDS).map((c) => c.length));
  const lines = Object.entries(AGL_COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return `usage: agl <command> [options]     (agl <command> --help for its options)

Agent Lightning: train the LLM inside your agent with reinforcement learning.

commands:
${lines.join('\n')}

environment: AGL_DATA_DIR (default ~/.agent-lightning), AGL_PORT (default ${DEFAULT_PORT}), AGL_STORE
`;
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    if (name === 'help' && rest[0] && isCommand(rest[0])) return (await COMMANDS[rest[0]]()).run(['--help']);
    process.stdout.write(help());
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-v') {
    process.stdout.write(`${(await import('./commands/serve.js')).packageVersion()}\n`);
    return 0;
  }
  if (!isCommand(name)) {
    process.stderr.write(`agl: unknown command '${name}'. Commands: ${Object.keys(COMMANDS).join(', ')} (agl --help)\n`);
    return 2;
  }
  try {
    return await (await COMMANDS[name]()).run(rest);
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
