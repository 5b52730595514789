/**
 * How an `agl` command declares its flags, once (in the spirit of TRL's GRPOConfig: a setting declared once, with
 * its doc, read by every entry point). From a command's declaration come its --help, its parsing (with
 * daemon/commands/flags.ts), its defaults, the README's flag lists (`readmeFlagLists`) and the command lines the
 * extension, the samples and the benchmarks build (`commandLine`), so a flag named on one side only fails to compile.
 * The declarations: protocol/train-options.ts (`agl train` and the engine flags) and protocol/cli-commands.ts.
 */

export interface CliOption {
  type: 'string' | 'boolean';
  /** What the value is called in --help (FILE, N, X, ...); none for a boolean. */
  arg?: string;
  help: string;
  /** The value when the flag is not given: parsing fills it in, --help shows it as "(default X)". */
  default?: string;
  /** Where the value goes in the training config (a dotted path, typed by the table: protocol/train-options.ts), when it overrides the config. */
  config?: string;
  /**
   * How the string is read before it goes into the config (zod then checks the range): a number, a number or `null`,
   * `true`/`false`, `--policy`'s roles, or a file whose content the setting is (`{ file }`, relative to the working directory).
   */
  parse?: 'number' | 'nullable-number' | 'boolean' | 'policy' | 'file';
  /** Given more than once (each value kept, in order). */
  multiple?: true;
}
export type CliOptions = Record<string, CliOption>;

/** One `agl` command (or subcommand, as `rollouts list`): what --help, the parser and the README read. */
export interface CliCommand<O extends CliOptions = CliOptions> {
  /** As typed after `agl`: `sft`, `rollouts list`. */
  name: string;
  /** One line, for `agl --help` and the README. */
  summary: string;
  /** What follows `agl <name>` on each usage line: the positionals and the required flags. */
  usage: readonly string[];
  /** What the command does, under the usage lines. */
  about?: string;
  options: O;
  /** Whether it takes positional arguments (an agent, a subcommand, an id). */
  positionals?: boolean;
  /** Lines after the flags (environment variables, exit codes). */
  notes?: string;
}

type ValueOf<O extends CliOption> = O['type'] extends 'boolean' ? boolean : O extends { multiple: true } ? string[] : string;
/** Flags as given (each optional), by option name: what a command line is built from. */
export type FlagsOf<O extends CliOptions> = { -readonly [K in keyof O]?: ValueOf<O[K]> };
/** Flags as parsed: an option with a default always has a value. */
export type ParsedFlags<O extends CliOptions> = { -readonly [K in keyof O as O[K] extends { default: string } ? K : never]: ValueOf<O[K]> } & {
  -readonly [K in keyof O as O[K] extends { default: string } ? never : K]?: ValueOf<O[K]>;
};

/** An option's help with its default. */
const described = (o: CliOption) => (o.default === undefined ? o.help : `${o.help} (default ${o.default})`);

/** Where an option's help starts, and how wide a help line gets (a terminal's width, a README code block's). */
const HELP_COLUMN = 22;
const HELP_WIDTH = 120;

/** Words of `text` in lines of at most `width` characters (a longer word gets its own line). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  return [...lines, line];
}

/** `--name ARG   help` lines of a table, aligned, the help wrapped under itself. */
export function optionLines(table: CliOptions): string {
  const indent = ' '.repeat(HELP_COLUMN);
  return Object.entries(table)
    .map(([name, o]) => {
      const left = `  --${name}${o.arg ? ` ${o.arg}` : ''}`;
      const help = wrap(described(o), HELP_WIDTH - HELP_COLUMN).map((l) => `${indent}${l}`);
      if (left.length <= HELP_COLUMN - 2) help[0] = `${left.padEnd(HELP_COLUMN)}${help[0]!.trimStart()}`;
      else help.unshift(left);
      return help.join('\n');
    })
    .join('\n');
}

/** A command's --help: its usage lines, what it does, its flags and notes. */
export function commandHelp(cmd: CliCommand): string {
  const usage = cmd.usage.map((u, i) => `${i ? '       ' : 'usage: '}agl ${cmd.name}${u ? ` ${u}` : ''}`).join('\n');
  const parts = [usage, '', ...(cmd.about ? [cmd.about] : []), optionLines(cmd.options), ...(cmd.notes ? [cmd.notes] : [])];
  return `${parts.join('\n')}\n`;
}

/** The options object node:util parseArgs takes for a table's options (with their defaults). */
export function optionTypes<T extends CliOptions>(
  table: T,
): { [K in keyof T]: T[K] extends { multiple: true } ? { type: T[K]['type']; multiple: true } : { type: T[K]['type'] } } {
  return Object.fromEntries(
    Object.entries(table).map(([name, o]) => [
      name,
      { type: o.type, ...(o.multiple ? { multiple: true } : {}), ...(o.default !== undefined ? { default: o.default } : {}) },
    ]),
  ) as never;
}

/** The same, plus --help / -h. */
export function parseArgsOptions<T extends CliOptions>(table: T): ReturnType<typeof optionTypes<T>> & { help: { type: 'boolean'; short: 'h' } } {
  return { ...optionTypes(table), help: { type: 'boolean', short: 'h' } } as never;
}

/** `--flag value ...` for the given flags, in the order they are given; a flag the command lacks is an error. */
export function flagArgs<O extends CliOptions>(cmd: CliCommand<O>, flags: FlagsOf<O>): string[] {
  const args: string[] = [];
  for (const [name, v] of Object.entries(flags) as [string, string | string[] | boolean | undefined][]) {
    if (!Object.hasOwn(cmd.options, name)) throw new Error(`agl ${cmd.name} has no flag --${name}`);
    if (v === undefined || v === false) continue;
    for (const one of Array.isArray(v) ? v : [v]) {
      args.push(`--${name}`);
      if (one !== true) args.push(one);
    }
  }
  return args;
}

/** `<name...> <positionals...> --flag value ...`: the arguments after `agl` that run the command with these flags. */
export function commandLine<O extends CliOptions>(cmd: CliCommand<O>, flags: FlagsOf<O>, positionals: readonly string[] = []): string[] {
  return [...cmd.name.split(' '), ...positionals, ...flagArgs(cmd, flags)];
}

/** Edit distance with transpositions (`--prot` is one step from `--port`). */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** The command's flag closest to a mistyped one (a typo or two away, or a prefix of it), or null. */
export function closestFlag(cmd: CliCommand, given: string): string | null {
  const typed = given.replace(/^-+/, '').split('=')[0]!.toLowerCase();
  if (!typed) return null;
  let best: { name: string; d: number } | null = null;
  for (const name of Object.keys(cmd.options)) {
    const d = distance(typed, name);
    const prefix = Math.min(typed.length, name.length) >= 3 && (name.startsWith(typed) || typed.startsWith(name));
    if ((prefix || d <= Math.max(1, Math.floor(Math.min(typed.length, name.length) / 3))) && (!best || d < best.d)) best = { name, d };
  }
  return best && `--${best.name}`;
}

/** The error for a flag a command does not take: names the flag, the command, and the closest flag it does take. */
export function unknownFlagMessage(cmd: CliCommand, given: string): string {
  const close = closestFlag(cmd, given);
  return `agl ${cmd.name}: unknown flag ${given.split('=')[0]}${close ? ` (did you mean ${close}?)` : ''}`;
}

/** A command's flag list for the README: a folded section with its summary, usage and flags (what --help prints). */
function readmeEntry(cmd: CliCommand): string {
  return `<details><summary><code>agl ${cmd.name}</code>: ${cmd.summary}</summary>\n\n\`\`\`text\n${commandHelp(cmd)}\`\`\`\n\n</details>`;
}

export const README_FLAGS_BEGIN = '<!-- agl flags: generated from protocol/cli-commands.ts by `npm run docs:cli`; do not edit by hand -->';
export const README_FLAGS_END = '<!-- agl flags: end -->';

/** The README with its flag lists (between the markers) regenerated from the declarations. */
export function readmeFlagLists(readme: string, commands: readonly CliCommand[]): string {
  const begin = readme.indexOf(README_FLAGS_BEGIN);
  const end = readme.indexOf(README_FLAGS_END);
  if (begin < 0 || end < begin) throw new Error(`the README has no flag lists section (${README_FLAGS_BEGIN} ... ${README_FLAGS_END})`);
  const lists = commands.map(readmeEntry).join('\n');
  return `${readme.slice(0, begin)}${README_FLAGS_BEGIN}\n${lists}\n${readme.slice(end)}`;
}
