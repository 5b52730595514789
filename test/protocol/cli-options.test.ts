/**
 * Every `agl` command is declared once (protocol/cli-commands.ts, protocol/train-options.ts), and everything else is
 * made from that declaration: the README's flag lists equal what the declarations generate, every command's --help
 * (the real CLI, as a process) lists every flag it parses, the commands parse only through the declaration
 * (daemon/commands/flags.ts), a command line built from flags parses back to the same flags, defaults are filled in
 * and shown, and a flag a command does not take is an error naming the flag, the command and the closest flag.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { AGL_COMMANDS, ALL_DECLARATIONS, SERVE_COMMAND, SFT_COMMAND } from '../../protocol/cli-commands.js';
import { type CliCommand, closestFlag, commandHelp, commandLine, readmeFlagLists } from '../../protocol/cli-options.js';
import { readFlags, UsageError } from '../../daemon/commands/flags.js';
import { runCli } from '../helpers/daemon-process.js';
import { configOverrides, TRAIN_OPTIONS, type TrainOption } from '../../protocol/train-options.js';
import { GrpoSettingsSchema } from '../../protocol/grpo-settings.js';
import { parseTrainConfig } from '../../daemon/algorithm/config.js';

const ROOT = process.cwd();

/** Every flag of a declaration set: a string flag 'v-<name>' (two values when repeatable), a boolean flag true. */
function everyFlag(cmd: CliCommand): Record<string, string | string[] | boolean> {
  return Object.fromEntries(
    Object.entries(cmd.options).map(([name, o]) => [name, o.type === 'boolean' ? true : o.multiple ? [`v-${name}`, `w-${name}`] : `v-${name}`]),
  );
}

describe('agl commands, declared once', () => {
  it("the README's flag lists are what the declarations generate (npm run docs:cli rewrites them)", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    assert.equal(readme, readmeFlagLists(readme, ALL_DECLARATIONS), 'the README differs from the declarations: run `npm run docs:cli`');
    for (const cmd of ALL_DECLARATIONS) {
      for (const name of Object.keys(cmd.options)) assert.match(readme, new RegExp(`^  --${name}\\b`, 'm'), `agl ${cmd.name} --${name} in the README`);
    }
    assert.throws(() => readmeFlagLists('# no markers here\n', ALL_DECLARATIONS), /no flag lists section/);
  });

  it('every command of `agl --help` prints, with --help, every flag it parses', async () => {
    const top = await runCli(['--help']);
    assert.equal(top.code, 0);
    const names = Object.keys(AGL_COMMANDS) as (keyof typeof AGL_COMMANDS)[];
    assert.deepEqual(
      names.filter((n) => !new RegExp(`^  ${n}\\s+\\S`, 'm').test(top.stdout)),
      [],
      'every declared command is listed by agl --help',
    );
    const helps = await Promise.all(names.map(async (name) => ({ name, r: await runCli([name, '--help']) })));
    for (const { name, r } of helps) {
      assert.equal(r.code, 0, `agl ${name} --help: ${r.stderr}`);
      for (const cmd of AGL_COMMANDS[name].declarations) {
        assert.ok(r.stdout.includes(commandHelp(cmd)), `agl ${name} --help prints agl ${cmd.name}'s help`);
        for (const flag of Object.keys(cmd.options)) assert.match(r.stdout, new RegExp(`^  --${flag}\\b`, 'm'), `agl ${name} --help lists --${flag}`);
      }
    }
  });

  it('the commands read their arguments only through their declarations (no flag parsed by hand)', () => {
    const dir = join(ROOT, 'daemon', 'commands');
    const byHand: string[] = [];
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts') && f !== 'flags.ts')) {
      const text = readFileSync(join(dir, file), 'utf8');
      for (const pattern of [/\bparseArgs\(/, /\bargv\.(includes|indexOf|filter|find)\(/, /process\.argv\.(slice|includes|indexOf)/, /usage: agl /]) {
        if (pattern.test(text)) byHand.push(`${file}: ${pattern.source}`);
      }
    }
    assert.deepEqual(byHand, []);
    const cli = readFileSync(join(ROOT, 'daemon', 'cli.ts'), 'utf8');
    for (const name of Object.keys(AGL_COMMANDS)) assert.match(cli, new RegExp(`\\b${name}: \\(\\) => import\\('./commands/${name}.js'\\)`));
  });

  it('a command line built from flags parses back to the same flags, for every command', () => {
    for (const cmd of ALL_DECLARATIONS) {
      const flags = everyFlag(cmd);
      const args = commandLine(cmd, flags as never, cmd.positionals ? ['positional'] : []);
      assert.deepEqual(args.slice(0, cmd.name.split(' ').length), cmd.name.split(' '));
      const parsed = readFlags(cmd, args.slice(cmd.name.split(' ').length));
      assert.deepEqual(parsed.values, flags, `agl ${cmd.name}`);
      assert.deepEqual(parsed.positionals, cmd.positionals ? ['positional'] : []);
    }
    assert.deepEqual(commandLine(SERVE_COMMAND, { port: '0', store: undefined, 'allowed-host': ['a', 'b'], model: 'm' }), [
      'serve',
      '--port',
      '0',
      '--allowed-host',
      'a',
      '--allowed-host',
      'b',
      '--model',
      'm',
    ]);
    assert.throws(() => commandLine(SFT_COMMAND, { stepz: '3' } as never), /agl sft has no flag --stepz/);
  });

  it('a declared default is the value when the flag is not given, and --help shows it', () => {
    let defaults = 0;
    for (const cmd of ALL_DECLARATIONS) {
      const parsed = readFlags(cmd, []).values as Record<string, unknown>;
      const help = commandHelp(cmd);
      for (const [name, o] of Object.entries(cmd.options)) {
        assert.equal(parsed[name], o.default, `agl ${cmd.name} --${name}`);
        if (o.default === undefined) continue;
        defaults++;
        assert.ok(help.replace(/\s+/g, ' ').includes(`(default ${o.default})`), `agl ${cmd.name} --help shows --${name}'s default`);
      }
    }
    assert.ok(defaults >= 10, `defaults declared: ${defaults}`);
    assert.equal(readFlags(SFT_COMMAND, ['--steps', '7']).values.steps, '7');
    assert.equal(readFlags(SFT_COMMAND, []).values.steps, '300');
  });

  it('help lines fit 120 columns', () => {
    for (const cmd of ALL_DECLARATIONS) {
      for (const line of commandHelp(cmd).split('\n')) assert.ok(line.length <= 120, `agl ${cmd.name}: ${line}`);
    }
  });

  it('a flag a command does not take is an error naming the flag, the command and the closest flag, for every command', () => {
    for (const cmd of ALL_DECLARATIONS) {
      assert.throws(
        () => readFlags(cmd, ['--no-such-flag']),
        (e: Error) => e instanceof UsageError && e.message === `agl ${cmd.name}: unknown flag --no-such-flag`,
        `agl ${cmd.name}`,
      );
      // Each of its flags mistyped by one swapped pair of letters is recognised as that flag.
      for (const name of Object.keys(cmd.options).filter((n) => n.length >= 4)) {
        const typo = `${name.slice(0, 1)}${name[2]}${name[1]}${name.slice(3)}`;
        if (typo === name || Object.hasOwn(cmd.options, typo)) continue;
        assert.equal(closestFlag(cmd, `--${typo}`), `--${name}`, `agl ${cmd.name} --${typo}`);
      }
    }
    assert.throws(() => readFlags(SFT_COMMAND, ['--stpes=3']), { name: 'UsageError', message: 'agl sft: unknown flag --stpes (did you mean --steps?)' });
    assert.throws(() => readFlags(SFT_COMMAND, ['--steps']), /agl sft: Option '--steps <value>' argument missing/);
    assert.throws(() => readFlags(SFT_COMMAND, ['extra']), /agl sft: Unexpected argument 'extra'/);
    assert.equal(closestFlag(SERVE_COMMAND, '--data-di'), '--data-dir');
    assert.equal(closestFlag(SERVE_COMMAND, '--xyzzy'), null);
  });

  it('the CLI refuses a bad flag with exit 2, the error and the usage (one that once went unchecked: agl doctor)', async () => {
    const [doctor, sft, list] = await Promise.all([
      runCli(['doctor', '--jsno']),
      runCli(['sft', '--data', 'x.jsonl', '--stpes', '3']),
      runCli(['rollouts', 'list', '--limt', '3']),
    ]);
    assert.equal(doctor.code, 2);
    assert.match(doctor.stderr, /^agl doctor: unknown flag --jsno \(did you mean --json\?\)\n\nusage: agl doctor/);
    assert.equal(sft.code, 2);
    assert.match(sft.stderr, /^agl sft: unknown flag --stpes \(did you mean --steps\?\)\n\nusage: agl sft/);
    assert.equal(list.code, 2);
    assert.match(list.stderr, /^agl rollouts list: unknown flag --limt \(did you mean --limit\?\)/);
  });
});

describe('agl train: flags bound to the config by typed paths; GRPO declared once', () => {
  it('a flag names a config field by a path the config has (a misspelt field does not compile) and sets it there', () => {
    // @ts-expect-error 'training.learningRat' is not a field of the training config: the table would not compile.
    const misspelt: TrainOption = { type: 'string', help: 'x', config: 'training.learningRat' };
    assert.equal(misspelt.config, 'training.learningRat');
    const deep: TrainOption = { type: 'string', help: 'x', config: 'training.grpo.epsilonHigh', parse: 'number' };
    assert.deepEqual(configOverrides({ eh: deep }, { eh: '0.28' }), { training: { grpo: { epsilonHigh: 0.28 } } });
  });

  it('every GRPO setting has its --grpo-* flag, with the setting’s own doc and default, and the flags set the config', () => {
    const keys = Object.keys(GrpoSettingsSchema.shape);
    const flags = Object.entries(TRAIN_OPTIONS).filter(([name]) => name.startsWith('grpo-'));
    assert.deepEqual(
      flags.map(([, o]) => (o as TrainOption).config),
      keys.map((k) => `training.grpo.${k}`),
    );
    for (const [name, o] of flags) {
      const key = (o as TrainOption).config!.split('.').pop()!;
      assert.ok(o.help.startsWith(GrpoSettingsSchema.shape[key as keyof typeof GrpoSettingsSchema.shape].description!), `--${name}'s help is the field's doc`);
    }
    const given = {
      'grpo-variant': 'dapo',
      'grpo-epsilon-high': '0.3',
      'grpo-tis-cap': 'null',
      'grpo-dynamic-sampling': 'false',
      'grpo-loss-aggregation': 'seq-mean',
    };
    const config = parseTrainConfig(configOverrides(TRAIN_OPTIONS, given));
    const g = config.training.grpo;
    assert.deepEqual(
      [g.variant, g.epsilon, g.epsilonHigh, g.tisCap, g.dynamicSampling, g.lossAggregation],
      ['dapo', 0.2, 0.3, null, false, 'seq-mean'],
      "the flags' keys over dapo's settings",
    );
    assert.throws(() => configOverrides(TRAIN_OPTIONS, { 'grpo-dynamic-sampling': 'yes' }), /--grpo-dynamic-sampling takes true or false, got 'yes'/);
    assert.throws(() => parseTrainConfig(configOverrides(TRAIN_OPTIONS, { 'grpo-variant': 'ppo' })), /training\.grpo\.variant/);
    // A policy's own overrides are the same declaration, every key optional.
    assert.deepEqual(parseTrainConfig({ policies: { writer: { grpo: { beta: 0.1 } } } }).policies.writer, {
      init: null,
      learningRate: null,
      grpo: { beta: 0.1 },
    });
    assert.throws(() => parseTrainConfig({ policies: { writer: { grpo: { bta: 0.1 } } } }), /bta/);
  });
});
