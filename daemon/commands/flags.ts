/**
 * Reads a command's arguments by its declaration (protocol/cli-commands.ts, protocol/train-options.ts): node:util
 * parseArgs over the declared flags and their defaults, `--help` / `-h` printing the help made from the same
 * declaration, and a flag the command does not take refused with an error naming the flag, the command and the
 * closest flag it does take. Every command parses through here, so its --help lists every flag it parses.
 */
import { parseArgs } from 'node:util';
import { type CliCommand, type CliOptions, commandHelp, parseArgsOptions, type ParsedFlags, unknownFlagMessage } from '../../protocol/cli-options.js';

export interface ParsedCommand<O extends CliOptions> {
  values: ParsedFlags<O>;
  positionals: string[];
}

/** Why a command line was refused: the message names the command and the flag. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** The command line read by the declaration; a bad flag throws UsageError. `--help` is in `help`. */
export function readFlags<O extends CliOptions>(cmd: CliCommand<O>, argv: string[]): ParsedCommand<O> & { help: boolean } {
  try {
    const { values, positionals } = parseArgs({ args: argv, strict: true, allowPositionals: cmd.positionals ?? false, options: parseArgsOptions(cmd.options) });
    const { help, ...flags } = values as Record<string, unknown>;
    return { values: flags as ParsedFlags<O>, positionals, help: help === true };
  } catch (e) {
    const err = e as Error & { code?: string };
    if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      const given = /'(-[^']*)'/.exec(err.message)?.[1] ?? '';
      throw new UsageError(unknownFlagMessage(cmd, given));
    }
    if (err.code?.startsWith('ERR_PARSE_ARGS')) throw new UsageError(`agl ${cmd.name}: ${err.message}`);
    throw e;
  }
}

/**
 * A command's flags, or its exit code when there is nothing more to do: 0 after `--help` (printed to stdout, or to
 * `helpText`'s stream), 2 after a bad flag (the error, then the help, to stderr).
 */
export function parseCommand<O extends CliOptions>(cmd: CliCommand<O>, argv: string[], helpText = commandHelp(cmd)): ParsedCommand<O> | { exit: number } {
  let parsed;
  try {
    parsed = readFlags(cmd, argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`${e.message}\n\n${helpText}`);
    return { exit: 2 };
  }
  if (parsed.help) {
    process.stdout.write(helpText);
    return { exit: 0 };
  }
  return parsed;
}
