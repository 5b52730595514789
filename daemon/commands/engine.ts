/**
 * `agl engine install torch` makes the PyTorch engine's Python environment (a venv with engines/torch's pinned
 * requirements); `agl engine status` says which Python the engine would run and what that Python has.
 */
import { ENGINE_COMMAND } from '../../protocol/cli-commands.js';
import { commandHelp } from '../../protocol/cli-options.js';
import { resolveDataDir } from '../../client/daemon-state.js';
import { parseCommand } from './flags.js';
import { defaultTorchVenv, INSTALL_HINT, installTorchEnv, resolveTorchPython, torchDoctor, TORCH_REQUIREMENTS } from '../model/torch-env.js';

const HELP = commandHelp(ENGINE_COMMAND);

export async function run(argv: string[]): Promise<number> {
  const a = parseCommand(ENGINE_COMMAND, argv);
  if ('exit' in a) return a.exit;
  const [cmd, what] = a.positionals;
  if (!cmd) {
    process.stdout.write(HELP);
    return 2;
  }
  const dataDir = resolveDataDir(a.values['data-dir']);
  if (cmd === 'install') {
    if (what !== 'torch') {
      process.stderr.write(`agl engine install: the engine to install is 'torch' (the tfjs engine comes with agl)\n`);
      return 2;
    }
    const venv = a.values.venv ?? defaultTorchVenv();
    process.stderr.write(`agl engine: installing ${TORCH_REQUIREMENTS} into ${venv}\n`);
    const py = await installTorchEnv(venv, { python: a.values.python, force: a.values.force, log: (l) => process.stderr.write(`  ${l}\n`) });
    const d = torchDoctor(py);
    if (d.error) throw new Error(`the new venv does not run the engine: ${d.error}`);
    process.stdout.write(
      `agl engine: torch ${d.torch}, transformers ${d.transformers} in ${venv}\n` +
        `${a.values.venv ? `use it with --python ${py} (or AGL_PYTHON=${py})` : 'agl train --engine torch uses it from now on, from any data dir'}\n`,
    );
    return 0;
  }
  if (cmd === 'status') {
    const { python, source, scope } = resolveTorchPython(a.values.python, dataDir);
    const d = torchDoctor(python);
    if (a.values.json) {
      process.stdout.write(`${JSON.stringify({ ...d, pythonVersion: d.python, dataDir, python, source, scope }, null, 2)}\n`);
      return d.error || (d.missing as string[])?.length ? 1 : 0;
    }
    const [head, ...rest] = torchReport(python, source, d);
    process.stdout.write(`${[head, `  used by data dir ${dataDir} (${scope})`, ...rest].join('\n')}\n`);
    return d.error || (d.missing as string[])?.length ? 1 : 0;
  }
  process.stderr.write(`agl engine: unknown command '${cmd}'\n\n${HELP}`);
  return 2;
}

/** The torch engine's lines of `agl doctor` / `agl engine status`. */
export function torchReport(python: string, source: string, d: Record<string, unknown>): string[] {
  const lines = [`torch engine: ${python} (${source})`];
  if (d.error) return [...lines, `  not usable: ${d.error}`, `  ${INSTALL_HINT}`];
  const missing = (d.missing as string[]) ?? [];
  lines.push(`  python ${d.python}, torch ${d.torch ?? 'MISSING'}, transformers ${d.transformers ?? 'MISSING'}, trl ${d.trl ?? '-'}, peft ${d.peft ?? '-'}`);
  if (d.torch) {
    const gpus = (d.gpus as string[]) ?? [];
    lines.push(
      d.cudaAvailable
        ? `  device: cuda (CUDA ${d.cuda}): ${gpus.length} GPU${gpus.length === 1 ? '' : 's'}: ${gpus.join(', ')}; --device cuda --procs up to ${gpus.length}`
        : `  device: cpu (${d.cuda ? `CUDA ${d.cuda} build, but no GPU is visible` : 'a CPU-only build of torch'}), ${d.threads} threads; --procs N runs N ranks on the CPU`,
    );
    lines.push(`  ranks: torchrun + DDP over ${((d.backends as string[]) ?? []).join(', ') || 'no distributed backend'}`);
  }
  if (missing.length) lines.push(`  missing: ${missing.join(', ')}: ${INSTALL_HINT}`);
  return lines;
}
